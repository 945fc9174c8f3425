package roost

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// exchange writes raw to addr, half-closes, and reads everything the server
// answers until it closes; the Date header's value is blanked.
func exchange(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("read: %v", err)
	}
	return dateRE.ReplaceAllString(string(b), "Date: -")
}

var dateRE = regexp.MustCompile(`Date: [^\r]*`)

// TestFastPathMatchesNetHTTP sends the same bytes to the daemon's handler
// behind net/http alone and behind the fast path, and requires the same
// bytes back: the plain requests answered on the fast path, everything
// else by net/http after the hand-off.
func TestFastPathMatchesNetHTTP(t *testing.T) {
	fx := newFixture(t)
	srv, _, err := New(Options{MaxDepth: 3, MaxConcurrent: 4, MaxLiveCapsules: 16,
		SpawnAllow: []string{"local/orchestrator"}, Registry: StoreRegistry(fx.reg)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	plainLn, fastLn := listen(), listen()
	plain := newHTTPServer(srv)
	fast := newFastServer(newHTTPServer(srv))
	go plain.Serve(plainLn)
	served := make(chan error, 1)
	go func() { served <- fast.Serve(fastLn) }()
	defer plain.Close()

	const spawnBody = `{"name": "local/worker-a", "version": "0.1.0"}`
	get := func(path string, hdr ...string) string {
		return "GET " + path + " HTTP/1.1\r\nHost: roost\r\n" + strings.Join(hdr, "") + "\r\n"
	}
	post := func(path, body string, hdr ...string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: roost\r\n" + strings.Join(hdr, "") +
			"Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body
	}
	for _, c := range []struct {
		name string
		raw  string
		fast bool // answered without a hand-off
	}{
		{"health", get("/health"), true},
		{"unknown session", get("/status/ses_nobody"), true},
		{"not found", get("/nowhere"), true},
		{"method not allowed", post("/health", ""), true},
		{"empty body", post("/spawn", ""), true},
		{"no credential", post("/spawn", spawnBody), true},
		{"bad credential", post("/spawn", spawnBody, HeaderCredential+": mrc1.x.y\r\n"), true},
		{"lower-case names", "GET /health HTTP/1.1\r\nhost: roost\r\nuser-agent: t\r\naccept: */*\r\n\r\n", true},
		{"not JSON", post("/deregister", `{"outcome"`, HeaderCredential+": x\r\n"), true},
		{"bad outcome", post("/deregister", `{"outcome": "maybe"}`, HeaderCredential+": x\r\n"), true},
		{"register without name", post("/register", `{"session_id": "ses_x"}`), true},
		{"three pipelined", get("/health") + post("/spawn", "{}") + get("/status/nobody"), true},
		{"approval header present but empty", post("/register", `{"session_id": "ses_y", "name": "local/worker-a", "version": "0.1.0"}`, HeaderApproval+":\r\n"), true},

		{"HEAD", "HEAD /health HTTP/1.1\r\nHost: roost\r\n\r\n", false},
		{"HTTP/1.0", "GET /health HTTP/1.0\r\n\r\n", false},
		{"no Host", "GET /health HTTP/1.1\r\n\r\n", false},
		{"two Hosts", "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", false},
		{"query", get("/health?x=1"), false},
		{"escape", get("/status/%73es"), false},
		{"Connection: close", get("/health", "Connection: close\r\n"), false},
		{"credential twice", post("/spawn", spawnBody, HeaderCredential+": a\r\n", HeaderCredential+": b\r\n"), false},
		{"other header", get("/health", "X-Other: 1\r\n"), false},
		{"chunked", "POST /deregister HTTP/1.1\r\nHost: roost\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n0\r\n\r\n", false},
		{"body too large", post("/register", strings.Repeat("x", MaxBodyBytes+1)), false},
		{"garbage", "GARBAGE\r\n\r\n", false},
		{"lower-case method", "get /health HTTP/1.1\r\nHost: roost\r\n\r\n", false},
		{"cut short", "POST /spawn HTTP/1.1\r\nHost: roost\r\nContent-Length: 10\r\n\r\n{}", false},
		{"header cut short", "GET /health HTTP/1.1\r\nHost: ro", false},
		{"fast then not", get("/health") + "HEAD /health HTTP/1.1\r\nHost: roost\r\n\r\n" + get("/health"), false},
		{"control byte", get("/health", "User-Agent: a\x01b\r\n"), false},
		{"bare LF", "GET /health HTTP/1.1\nHost: roost\n\n", false},
		{"bare LF in a header", "GET /health HTTP/1.1\r\nHost: roost\nUser-Agent: x\r\n\r\n", false},
		{"header past the bound", get("/health", "User-Agent: "+strings.Repeat("a", 70<<10)+"\r\n"), false},
		{"CRLF after a POST", post("/spawn", "{}") + "\r\n" + get("/health"), true},
		{"CRLF after a POST, then nothing", post("/spawn", "{}") + "\r\n\r\n", true},
		{"three bytes after a request", get("/health") + "GET", true},
		{"CRLF after a GET", get("/health") + "\r\n" + get("/health"), false},
		{"header just within the bound", get("/health", "User-Agent: "+strings.Repeat("a", 60<<10)+"\r\n"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := fast.handoffs.Load()
			want := exchange(t, plainLn.Addr().String(), c.raw)
			got := exchange(t, fastLn.Addr().String(), c.raw)
			if got != want {
				t.Errorf("fast path answered\n%q\nnet/http\n%q", got, want)
			}
			if handed := fast.handoffs.Load() != before; handed == c.fast {
				t.Errorf("handed to net/http: %v, want %v", handed, !c.fast)
			}
		})
	}

	// A whole delegation on the fast path, through the typed client's
	// bodies: register, spawn, register the child, status, deregister.
	before := fast.handoffs.Load()
	cl := &client{t: t, base: "http://" + fastLn.Addr().String(), hc: &http.Client{Timeout: 10 * time.Second}}
	cred := cl.mustRegister("ses_fast", "local/orchestrator", "0.1.0", "")
	g := cl.mustSpawn(cred, "local/worker-a", "0.1.0")
	child := cl.mustRegister("ses_fast_c", "local/worker-a", "0.1.0", g.str("approval"))
	expectFigures(t, cl, "ses_fast", "running", 3, 1, 2)
	if r := cl.deregister(child, "complete"); r.code != 200 {
		t.Fatalf("deregister: %d %s", r.code, r.raw)
	}
	expectFigures(t, cl, "ses_fast_c", "complete", 2, 0, 1)
	if n := fast.handoffs.Load() - before; n != 0 {
		t.Errorf("Go's own client was handed to net/http %d times", n)
	}

	// Shutdown closes an idle keep-alive connection and ends Serve.
	idle, err := net.Dial("tcp", fastLn.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, get("/health"))
	buf := make([]byte, 4096)
	if n, err := idle.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200 OK") {
		t.Fatalf("before shutdown: %q %v", buf[:n], err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := fast.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v", err)
	}
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := idle.Read(buf); err == nil {
		t.Errorf("the idle connection is still open after Shutdown: %q", buf[:n])
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// tokenRE and expiresRE blank what two daemons mint differently.
var (
	tokenRE   = regexp.MustCompile(`ms[ca]1\.[A-Za-z0-9_.-]+`)
	expiresRE = regexp.MustCompile(`"expires_at_ms":[0-9]+`)
)

// FuzzFastPathMatchesNetHTTP: any bytes a client sends get the same answer
// from two identical daemons, one behind net/http alone and one behind the
// fast path (tokens and expiry times blanked: each daemon has its own keys).
func FuzzFastPathMatchesNetHTTP(f *testing.F) {
	fx := newFixture(f)
	serve := func(fast bool) string {
		srv, _, err := New(Options{MaxDepth: 3, MaxConcurrent: 4, MaxLiveCapsules: 1 << 20,
			SpawnAllow: []string{"local/orchestrator"}, Registry: StoreRegistry(fx.reg)})
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(srv.Close)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			f.Fatal(err)
		}
		hs := newHTTPServer(srv)
		if fast {
			fs := newFastServer(hs)
			go fs.Serve(ln)
			f.Cleanup(func() { fs.Shutdown(context.Background()) })
		} else {
			go hs.Serve(ln)
			f.Cleanup(func() { hs.Close() })
		}
		return ln.Addr().String()
	}
	plainAddr, fastAddr := serve(false), serve(true)
	for _, s := range []string{
		"GET /health HTTP/1.1\r\nHost: roost\r\n\r\n",
		"GET /status/ses_a HTTP/1.1\r\nHost: roost\r\n\r\n",
		"POST /register HTTP/1.1\r\nHost: roost\r\nContent-Length: 68\r\n\r\n{\"session_id\": \"ses_a\", \"name\": \"local/orchestrator\", \"version\": \"0.1.0\"}",
		"POST /spawn HTTP/1.1\r\nHost: roost\r\nX-Murmur-Spawn-Credential: x\r\nContent-Length: 46\r\n\r\n{\"name\": \"local/worker-a\", \"version\": \"0.1.0\"}",
		"HEAD /health HTTP/1.0\r\n\r\n",
		"GET /health HTTP/1.1\nHost: roost\n\n",
		"GET /health HTTP/1.1\r\nHost: roost\r\n\r\nPOST /deregister HTTP/1.1\r\nHost: roost\r\nContent-Length: 20\r\n\r\n{\"outcome\": \"maybe\"}GET /x HTTP/1.1\r\nHost: roost\r\n\r\n",
		"POST /deregister HTTP/1.1\r\nHost: roost\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
		"GET /health HTTP/1.1\r\nHost: roost\r\nConnection: close\r\n\r\nGET /health HTTP/1.1\r\nHost: roost\r\n\r\n",
		"POST /spawn HTTP/1.1\r\nHost: roost\r\nContent-Length: 2\r\nX-Murmur-Spawn-Credential: a\r\nx-murmur-spawn-credential: b\r\n\r\n{}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 8<<10 {
			return
		}
		norm := func(s string) string {
			return expiresRE.ReplaceAllString(tokenRE.ReplaceAllString(s, "TOKEN"), "EXPIRES")
		}
		want := norm(exchange(t, plainAddr, string(raw)))
		got := norm(exchange(t, fastAddr, string(raw)))
		if got != want {
			t.Fatalf("request %q\nfast path answered\n%q\nnet/http\n%q", raw, got, want)
		}
	})
}

// A connection that never sends a byte is cut off by the header timeout, as
// net/http cuts it off, not kept for the idle timeout.
func TestFastPathSilentConnection(t *testing.T) {
	srv, _, err := New(Options{MaxDepth: 3, MaxConcurrent: 4, MaxLiveCapsules: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := newHTTPServer(srv)
	hs.ReadHeaderTimeout = 200 * time.Millisecond
	fs := newFastServer(hs)
	go fs.Serve(ln)
	defer fs.Shutdown(context.Background())
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(30 * time.Second)) // IdleTimeout is 60 s
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("the server wrote to a connection that sent nothing")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a silent connection was kept past the header timeout")
	}
}
