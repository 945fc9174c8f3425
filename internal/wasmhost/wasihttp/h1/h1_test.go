package h1

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// server is a loopback server counting the connections it accepted.
func server(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	var accepts atomic.Int64
	s := httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			accepts.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s, &accepts
}

func hostOf(s *httptest.Server) string { u, _ := url.Parse(s.URL); return u.Host }

// get does one GET of path on a connection of p (or a new one) on the
// calling goroutine, as the guest's thread does, and gives the connection
// back when the body was read to its end.
func get(t *testing.T, p *Pool, host, path string) (string, error) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	tg, err := Resolve(ctx, "http", host, 0, deadline)
	if err != nil {
		return "", err
	}
	var c *Conn
	for _, a := range tg.Addrs() {
		if c = p.Get(tg.Key(a)); c != nil {
			break
		}
	}
	if c == nil {
		if c, err = Dial(ctx, tg, 0, deadline); err != nil {
			return "", err
		}
	}
	req, _ := http.NewRequest("GET", "http://"+host+path, nil)
	c.Limit(deadline, 0, nil)
	if err := req.Write(c.Writer()); err != nil {
		c.Close()
		return "", err
	}
	if err := c.Writer().Flush(); err != nil {
		c.Close()
		return "", err
	}
	resp, err := http.ReadResponse(c.Reader(), req)
	if err != nil {
		c.Close()
		return "", err
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.Close {
		c.Close()
		return string(b), err
	}
	p.Put(c)
	return string(b), nil
}

// TestExchangeKeepsConnection: exchanges on the calling goroutine over
// the pool's connections: ten requests, one accept, bodies whole, both a
// small declared body and a chunked one.
func TestExchangeKeepsConnection(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	s, accepts := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			w.Write([]byte(big[:50<<10]))
			w.(http.Flusher).Flush()
			w.Write([]byte(big[50<<10:]))
			return
		}
		w.Write([]byte("ok"))
	})
	p := NewPool()
	defer p.Close()
	for i := range 10 {
		path, want := "/ok", "ok"
		if i%2 == 1 {
			path, want = "/chunked", big
		}
		got, err := get(t, p, hostOf(s), path)
		if err != nil || got != want {
			t.Fatalf("request %d: %d bytes, %v; want %d bytes", i, len(got), err, len(want))
		}
	}
	if n := accepts.Load(); n != 1 {
		t.Errorf("%d connections accepted for 10 requests, want 1", n)
	}
	if !p.Usable(hostOf(s)) {
		t.Error("the pool keeps no usable connection to the server")
	}
	p.CloseIdle()
	if p.Size() != 0 {
		t.Error("CloseIdle left idle connections")
	}
}

// TestKillWakesBlockedRead: Kill from another goroutine wakes a read
// blocked in poll(2) on the connection, with ErrKilled.
func TestKillWakesBlockedRead(t *testing.T) {
	release := make(chan struct{})
	s, _ := server(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	defer close(release)
	ctx := context.Background()
	tg, err := Resolve(ctx, "http", hostOf(s), 0, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial(ctx, tg, 0, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req, _ := http.NewRequest("GET", s.URL+"/", nil)
	req.Write(c.Writer())
	c.Writer().Flush()
	time.AfterFunc(20*time.Millisecond, c.Kill)
	_, err = http.ReadResponse(c.Reader(), req)
	if !errors.Is(err, ErrKilled) {
		t.Fatalf("read after Kill: %v, want ErrKilled", err)
	}
}

// TestLimits: the first-byte limit ends a wait on a silent server with
// its error, which Classify maps to connection-read-timeout through the
// caller's context cause, and the call's deadline ends it with
// ErrCallDeadline.
func TestLimits(t *testing.T) {
	release := make(chan struct{})
	s, _ := server(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	defer close(release)
	ctx := context.Background()
	tg, err := Resolve(ctx, "http", hostOf(s), 0, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		set  func(c *Conn)
		want error
	}{
		{"first-byte", func(c *Conn) { c.Limit(time.Now().Add(time.Minute), 30*time.Millisecond, ErrFirstByteTimeout) }, ErrFirstByteTimeout},
		{"deadline", func(c *Conn) { c.Limit(time.Now().Add(30*time.Millisecond), 0, nil) }, ErrCallDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Dial(ctx, tg, 0, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			req, _ := http.NewRequest("GET", s.URL+"/", nil)
			req.Write(c.Writer())
			c.Writer().Flush()
			tc.set(c)
			start := time.Now()
			_, err = http.ReadResponse(c.Reader(), req)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the limit took %v", d)
			}
			if c.BytesRead() != 0 {
				t.Errorf("BytesRead = %d from a silent server", c.BytesRead())
			}
		})
	}
}

// TestClassify: the failures a dial or exchange meets map onto the
// error-codes a guest library expects.
func TestClassify(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tg, err := Resolve(ctx, "http", addr, 0, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Dial(ctx, tg, 0, time.Time{})
	if got := Classify(ctx, err); got.Case != "connection-refused" {
		t.Errorf("dial to a closed port: %v, want connection-refused", got)
	}
	cases := map[error]string{
		ErrConnectTimeout:            "connection-timeout",
		io.ErrUnexpectedEOF:          "HTTP-response-incomplete",
		io.EOF:                       "connection-terminated",
		context.DeadlineExceeded:     "HTTP-response-timeout",
		context.Canceled:             "internal-error",
		errors.New("something else"): "HTTP-protocol-error",
		&net.DNSError{Err: "no such host", IsNotFound: true}: "DNS-error",
	}
	for err, want := range cases {
		if got := Classify(ctx, err); got.Case != want {
			t.Errorf("Classify(%v) = %v, want %s", err, got, want)
		}
	}
	if got := Classify(ctx, &net.DNSError{IsNotFound: true}); got.Rcode != "NXDOMAIN" {
		t.Errorf("not found: rcode %q, want NXDOMAIN", got.Rcode)
	}
}

// TestTransportDialsResolved: NewTransport's exchanges reach the server
// and honour WithConnectTimeout's context value.
func TestTransportDialsResolved(t *testing.T) {
	s, _ := server(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	tr := NewTransport()
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(WithConnectTimeout(context.Background(), time.Second), "GET", s.URL+"/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Errorf("body %q", b)
	}
}

// TestReadBody: a body read to its end, one cut at its bound (the part
// within the bound still handed over), a sink that stops the read, and
// the between-bytes timeout on a server that stalls mid-body.
func TestReadBody(t *testing.T) {
	release := make(chan struct{})
	s, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write(make([]byte, 600))
		if r.URL.Path == "/stall" {
			w.(http.Flusher).Flush()
			<-release
		}
		w.Write(make([]byte, 400))
	})
	defer close(release)
	get := func(path string) *http.Response {
		resp, err := http.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	buf := make([]byte, 256)
	var got int
	count := func(b []byte) error { got += len(b); return nil }
	if eof, err := ReadBody(get("/"), buf, 1000, 0, nil, count); !eof || err != nil || got != 1000 {
		t.Errorf("whole body: eof %v, %v, %d bytes", eof, err, got)
	}
	got = 0
	var big *TooLargeError
	if eof, err := ReadBody(get("/"), buf, 700, 0, nil, count); eof || !errors.As(err, &big) || big.N <= 700 || got != 700 {
		t.Errorf("past the bound: eof %v, %v, %d bytes handed", eof, err, got)
	}
	stop := errors.New("stop")
	if _, err := ReadBody(get("/"), buf, 1000, 0, nil, func([]byte) error { return stop }); err != stop {
		t.Errorf("a sink's error: %v", err)
	}
	resp := get("/stall")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopBody := context.AfterFunc(ctx, func() { resp.Body.Close() })
	defer stopBody()
	if _, err := ReadBody(resp, buf, 1000, 50*time.Millisecond, cancel, func([]byte) error { return nil }); err != ErrBetweenBytes {
		t.Errorf("a stalled body: %v, want ErrBetweenBytes", err)
	}
}
