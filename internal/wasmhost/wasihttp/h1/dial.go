package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Target is where a request goes: its origin, and the addresses its name
// resolved to (once per request: the policy's check and the connection
// see the same name, and a pooled connection is taken only if it was
// dialled to one of these addresses).
type Target struct {
	scheme, authority, host, port string
	addrs                         []string // ip:port, in the resolver's order
}

// Key is the pool key of a connection to t dialled to addr.
func (t *Target) Key(addr string) string { return t.scheme + "://" + t.authority + "/" + addr }

// Resolve resolves scheme://authority's name, within the connect
// timeout and the deadline.
func Resolve(ctx context.Context, scheme, authority string, connect time.Duration, deadline time.Time) (*Target, error) {
	host, port, err := net.SplitHostPort(authority)
	if err != nil {
		host, port = authority, "80"
		if scheme == "https" {
			port = "443"
		}
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	dctx, cancel := dialContext(ctx, connect, deadline)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIPAddr(dctx, host)
	if err != nil {
		return nil, dialErr(dctx, err)
	}
	t := &Target{scheme: scheme, authority: authority, host: host, port: port}
	for _, ip := range ips {
		t.addrs = append(t.addrs, net.JoinHostPort(ip.IP.String(), port))
	}
	return t, nil
}

func dialContext(ctx context.Context, connect time.Duration, deadline time.Time) (context.Context, context.CancelFunc) {
	dctx, cancel := context.WithCancel(ctx)
	if !deadline.IsZero() {
		dctx, cancel = context.WithDeadline(ctx, deadline)
	}
	if connect > 0 {
		d2, c2 := context.WithTimeoutCause(dctx, connect, ErrConnectTimeout)
		return d2, func() { c2(); cancel() }
	}
	return dctx, cancel
}

// Dial opens a connection to t the way newTransport's dialer does (the
// resolved addresses dialled in order, no proxy), within the connect
// timeout and the deadline; an https one has its TLS handshake done
// (HTTP/1.1 offered in ALPN, the certificate checked against t's host).
func Dial(ctx context.Context, t *Target, connect time.Duration, deadline time.Time) (*Conn, error) {
	dctx, cancel := dialContext(ctx, connect, deadline)
	defer cancel()
	d := &net.Dialer{KeepAlive: 30 * time.Second}
	var nc net.Conn
	var last error
	var addr string
	for _, a := range t.addrs {
		var err error
		nc, err = d.DialContext(dctx, "tcp", a)
		if err == nil {
			addr = a
			break
		}
		last = err
	}
	if nc == nil {
		if last == nil {
			last = &net.DNSError{Err: "no addresses", Name: t.host, IsNotFound: true}
		}
		return nil, dialErr(dctx, last)
	}
	fd, err := dupSocket(nc)
	nc.Close()
	if err != nil {
		return nil, err
	}
	raw := &rawConn{fd: fd, local: nc.LocalAddr(), remote: nc.RemoteAddr()}
	c := &Conn{fd: fd, key: t.scheme + "://" + t.authority, poolKey: t.Key(addr), raw: raw}
	if t.scheme == "https" {
		raw.limit(deadline, 0, nil)
		if connect > 0 {
			raw.limit(deadline, connect, ErrConnectTimeout)
		}
		stop := context.AfterFunc(ctx, c.Kill)
		tc := tls.Client(raw, &tls.Config{ServerName: t.host, NextProtos: []string{"http/1.1"}})
		err := tc.Handshake()
		stop()
		if err != nil {
			c.Close()
			return nil, err
		}
		c.tls = tc
	}
	c.br = bufio.NewReaderSize(c.conn(), 4096)
	c.bw = bufio.NewWriterSize(c.conn(), 4096)
	return c, nil
}

func dialErr(ctx context.Context, err error) error {
	if context.Cause(ctx) == ErrConnectTimeout {
		return ErrConnectTimeout
	}
	return err
}

// dupSocket is a descriptor of our own onto nc's socket (still
// non-blocking, as Go opened it), so it can be driven without the
// netpoller once nc is closed.
func dupSocket(nc net.Conn) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1, errors.New("h1: not a socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, os.NewSyscallError("fcntl", derr)
	}
	return fd, nil
}

// Addrs are the addresses t's name resolved to (ip:port), in the
// resolver's order: a pooled connection is looked for under each.
func (t *Target) Addrs() []string { return t.addrs }

type connectTimeoutKey struct{}

// WithConnectTimeout carries a request-options connect timeout to
// NewTransport's dialer.
func WithConnectTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, connectTimeoutKey{}, d)
}

// NewTransport is a net/http transport that reads no proxy variables and
// dials the address it resolved itself, once, so the name the policy
// checked cannot be re-resolved to another address between check and
// connect (the standard dialer resolves again on every attempt). It is
// for the exchanges a goroutine does (the calling thread's use Dial).
func NewTransport() *http.Transport {
	d := &net.Dialer{KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if t, ok := ctx.Value(connectTimeoutKey{}).(time.Duration); ok && t > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeoutCause(ctx, t, ErrConnectTimeout)
				defer cancel()
			}
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			ips, err := net.DefaultResolver.LookupIPAddr(ctx, host)
			if err != nil {
				return nil, err
			}
			var last error
			for _, ip := range ips {
				c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.IP.String(), port))
				if err == nil {
					return c, nil
				}
				last = err
			}
			if last == nil {
				last = &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
			}
			if context.Cause(ctx) == ErrConnectTimeout {
				return nil, ErrConnectTimeout
			}
			return nil, last
		},
		ForceAttemptHTTP2:   true,
		DisableCompression:  true, // the guest sees the body as sent, content-coding included
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}
}
