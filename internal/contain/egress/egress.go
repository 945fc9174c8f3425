// Package egress is the runtime's egress proxy for native commands
// (docs/containment.md "The network namespace and the egress proxy"): an explicit HTTP proxy that a command reaches at
// contain.ProxyAddr inside its network namespace, serving from the host's
// namespace on the listener the helper hands out. It forwards plain HTTP
// (absolute-form requests) and CONNECT tunnels to the hosts
// capabilities.network.allow covers and refuses the rest with a 403 whose
// body names the host:port asked for and the manifest key. It resolves and
// dials names itself and never terminates TLS.
package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
)

// Key is the manifest key a refusal names.
const Key = "capabilities.network.allow"

// Proxy is one session's egress proxy. It is safe for concurrent use; one
// Proxy serves every command's namespace of the session (Serve per
// listener).
type Proxy struct {
	allow []string
	srv   *http.Server
	rp    *httputil.ReverseProxy
	log   *slog.Logger

	// hosts maps a name to the address dialled for it (tests only).
	hosts map[string]string

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // open tunnels' upstream sides

	refused atomic.Int64
}

// SetLogger sends the proxy's decisions (an allow at debug level, a refusal
// at info) and its server's errors to l — a session's logs/egress.log, so
// that they do not land on mur's stderr. Call it before Serve.
func (p *Proxy) SetLogger(l *slog.Logger) {
	p.log = l.With("component", "egress")
	p.srv.ErrorLog = slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)
}

// Refused is how many requests the proxy has refused so far.
func (p *Proxy) Refused() int64 { return p.refused.Load() }

// Start makes the session's proxy for the network.allow entries allow
// (entries that do not parse cover nothing). A host that refuses the
// network namespace the proxy is for is E-CAP-005: there is no fallback
// to the host's network.
func Start(allow []string) (*Proxy, error) {
	if err := NeedNetNS(); err != nil {
		return nil, err
	}
	return newProxy(allow), nil
}

// NeedNetNS is E-CAP-005 when this host refuses a network namespace, nil
// when it allows one. A capsule that declares spawn.allow or shell.allow
// needs one, so its launch is refused before its session exists.
func NeedNetNS() error {
	if r := contain.Probe(); !r.NetNS {
		return diag.New("E-CAP-005", "the capsule's commands need a network namespace of their own (docs/containment.md) and this host refuses one: %s", r.NetNSBlocker)
	}
	return nil
}

func newProxy(allow []string) *Proxy {
	p := &Proxy{allow: append([]string(nil), allow...), log: slog.Default().With("component", "egress"), conns: map[net.Conn]struct{}{}}
	tr := &http.Transport{
		Proxy:                 nil, // never a proxy behind the proxy
		DialContext:           p.dial,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		ForceAttemptHTTP2:     false,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// The request-target names the server; the Host header
			// is never trusted over it (RFC 9112 §3.2.2).
			pr.Out.Host = ""
		},
		Transport: tr,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, fmt.Sprintf("murmur egress proxy: %s: %v", r.URL.Host, err), http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: time.Minute, ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)}
	return p
}

// Env is the proxy environment a command in the namespace gets
// (tools.ShellEnv.ProxyEnv): HTTP_PROXY, HTTPS_PROXY and NO_PROXY, upper
// and lower case. Loopback is the namespace's own, so it is not proxied.
func Env() []string {
	u := "http://" + contain.ProxyAddr
	const no = "localhost,127.0.0.1,::1"
	return []string{
		"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "NO_PROXY=" + no,
		"http_proxy=" + u, "https_proxy=" + u, "no_proxy=" + no,
	}
}

// Serve answers proxy requests on ln until ln is closed (then it returns
// net.ErrClosed) or the proxy is.
func (p *Proxy) Serve(ln net.Listener) error {
	err := p.srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return net.ErrClosed
	}
	return err
}

// Close ends every listener, connection and tunnel.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	return p.srv.Close()
}

// ServeHTTP answers one proxy request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Host == "" {
		http.Error(w, "murmur egress proxy: a request through the proxy names its target in absolute form (http://host/path) or uses CONNECT", http.StatusBadRequest)
		return
	}
	if r.URL.Scheme != "http" {
		http.Error(w, fmt.Sprintf("murmur egress proxy: %s requests go through CONNECT; the proxy does not terminate TLS", r.URL.Scheme), http.StatusBadRequest)
		return
	}
	host, port, ok := target(r.URL.Host, 80)
	if !ok || !manifest.NetListCovers(p.allow, "http://"+net.JoinHostPort(host, port)) {
		p.refuse(w, r, host, port)
		return
	}
	p.log.Debug("allow", "method", r.Method, "target", net.JoinHostPort(host, port))
	// Dial what was checked: the normalised name, never the Host header.
	r.URL.Host = net.JoinHostPort(host, port)
	p.rp.ServeHTTP(w, r)
}

func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, ok := target(r.Host, 0)
	if !ok || !manifest.NetListCovers(p.allow, "https://"+net.JoinHostPort(host, port)) {
		p.refuse(w, r, host, port)
		return
	}
	up, err := p.dial(r.Context(), "tcp", net.JoinHostPort(host, port))
	if err != nil {
		http.Error(w, fmt.Sprintf("murmur egress proxy: %s: %v", net.JoinHostPort(host, port), err), http.StatusBadGateway)
		return
	}
	if !p.track(up) {
		up.Close()
		http.Error(w, "murmur egress proxy: closed", http.StatusServiceUnavailable)
		return
	}
	defer p.untrack(up)
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "murmur egress proxy: the connection cannot be tunnelled", http.StatusInternalServerError)
		return
	}
	down, brw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer down.Close()
	p.log.Debug("allow", "method", "CONNECT", "target", net.JoinHostPort(host, port))
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// Bytes the client sent after its request, already read into the
	// server's buffer, go first.
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	done := make(chan struct{})
	go func() {
		// TCP to TCP: io.Copy splices in the kernel.
		io.Copy(up, down)
		closeWrite(up)
		close(done)
	}()
	io.Copy(down, up)
	closeWrite(down)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// refuse answers 403 naming host:port and the manifest key to edit.
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, host, port string) {
	asked := net.JoinHostPort(host, port)
	if host == "" {
		asked = r.Host
		if r.Method != http.MethodConnect && r.URL != nil {
			asked = r.URL.Host
		}
	}
	p.refused.Add(1)
	p.log.Info("deny", "method", r.Method, "target", asked, "key", Key)
	what := "plain HTTP"
	if r.Method == http.MethodConnect {
		what = "CONNECT"
	}
	http.Error(w, fmt.Sprintf("murmur egress proxy: %s to %s is not covered by %s", what, asked, Key), http.StatusForbidden)
}

// target splits an authority into a normalised host and a port (def when
// none is written and def is not 0). ok is false for anything that is not
// host:port with a port from 1 to 65535.
func target(authority string, def int) (host, port string, ok bool) {
	h, p, err := net.SplitHostPort(authority)
	if err != nil {
		if def == 0 {
			return "", "", false
		}
		h, p = strings.Trim(authority, "[]"), strconv.Itoa(def)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 || h == "" {
		return "", "", false
	}
	e, err := manifest.ParseNetEntry(net.JoinHostPort(h, p))
	if err != nil {
		return "", "", false
	}
	return e.Host, strconv.Itoa(n), true
}

func (p *Proxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if h, port, err := net.SplitHostPort(addr); err == nil {
		if m, ok := p.hosts[h]; ok {
			addr = net.JoinHostPort(m, port)
		}
	}
	d := net.Dialer{Timeout: 30 * time.Second}
	return d.DialContext(ctx, network, addr)
}
