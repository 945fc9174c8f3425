package h1

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// newExchange is a GET of path from s on p's connections, as the guest's
// thread makes one.
func newExchange(p *Pool, host, method, path string) *Exchange {
	return &Exchange{Pool: p, Ctx: context.Background(), Scheme: "http", Authority: host,
		Deadline: time.Now().Add(10 * time.Second),
		Build: func() (*http.Request, error) {
			return http.NewRequest(method, "http://"+host+path, nil)
		},
		Replayable: func() bool { return Replayable(method, nil, true) },
	}
}

// TestExchangeSkipsInterim: a 103 before the answer is skipped; the body
// read to its end gives the connection back, and the next exchange takes
// it.
func TestExchangeSkipsInterim(t *testing.T) {
	s, accepts := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Write([]byte("answer"))
	})
	p := NewPool()
	defer p.Close()
	var spin Spin
	for range 3 {
		ex := newExchange(p, hostOf(s), "GET", "/")
		if err := ex.Write(); err != nil {
			t.Fatal(err)
		}
		resp, err := ex.ReadHead(&spin)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(b) != "answer" || err != nil {
			t.Fatalf("got %d %q %v", resp.StatusCode, b, err)
		}
		ex.Release(!resp.Close)
	}
	if n := accepts.Load(); n != 1 {
		t.Errorf("%d connections for 3 exchanges, want 1", n)
	}
}

// TestExchangeReplaysOnClosedReuse: a kept connection the server closes
// without answering: a replayable request is sent again on a new one, a
// POST is not and fails with ECONNRESET (no byte of an answer came).
func TestExchangeReplaysOnClosedReuse(t *testing.T) {
	var n atomic.Int64
	s, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 2 {
			// The second request: hang up without a byte.
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
			return
		}
		w.Write([]byte("ok"))
	})
	for _, c := range []struct {
		method string
		want   error
	}{{"GET", nil}, {"POST", syscall.ECONNRESET}} {
		n.Store(0)
		p := NewPool()
		first := newExchange(p, hostOf(s), "GET", "/")
		if err := first.Write(); err != nil {
			t.Fatal(err)
		}
		resp, err := first.ReadHead(nil)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		first.Release(true)
		ex := newExchange(p, hostOf(s), c.method, "/")
		if err := ex.Write(); err != nil {
			t.Fatal(err)
		}
		if !ex.Conn.Reused() {
			t.Fatal("the second exchange did not take the kept connection")
		}
		resp, err = ex.ReadHead(nil)
		if !errors.Is(err, c.want) || (c.want == nil && resp.StatusCode != 200) {
			t.Errorf("%s on a connection closed under it: %v, want %v", c.method, err, c.want)
		}
		ex.Drop()
		p.Close()
	}
}

// TestReplayable: net/http's rule.
func TestReplayable(t *testing.T) {
	for _, c := range []struct {
		method  string
		headers [][2]string
		again   bool
		want    bool
	}{
		{"GET", nil, true, true},
		{"HEAD", nil, true, true},
		{"POST", nil, true, false},
		{"POST", [][2]string{{"Idempotency-Key", "k"}}, true, true},
		{"GET", nil, false, false},
	} {
		if got := Replayable(c.method, c.headers, c.again); got != c.want {
			t.Errorf("Replayable(%s, %v, %v) = %v", c.method, c.headers, c.again, got)
		}
	}
}

// TestHeadReady: not ready before the server answers; ready once the head
// is arriving, or once the first-byte limit has passed.
func TestHeadReady(t *testing.T) {
	release := make(chan struct{})
	s, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/slow") {
			<-release
		}
		w.Write([]byte("ok"))
	})
	defer close(release)
	p := NewPool()
	defer p.Close()
	ex := newExchange(p, hostOf(s), "GET", "/slow")
	if err := ex.Write(); err != nil {
		t.Fatal(err)
	}
	if ex.HeadReady() {
		t.Error("ready before the server answered")
	}
	ex.FirstByte = time.Nanosecond
	if !ex.HeadReady() {
		t.Error("not ready once the first-byte limit passed")
	}
	ex.Drop()
	fast := newExchange(p, hostOf(s), "GET", "/")
	if err := fast.Write(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !fast.HeadReady(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("never ready though the server answered")
		}
	}
	fast.Drop()
}
