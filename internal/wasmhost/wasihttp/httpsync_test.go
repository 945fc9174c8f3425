package wasihttp

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/wasmhost"
)

// TestHTTPRequestOptions: request-options timeouts end a request with the
// error-code a guest library expects (connection-read-timeout), for the
// head (first-byte) and within the body (between-bytes), and a server
// slower than no limit it set is not cut short; on the exchange done on
// the guest's thread and on the transport's alike. httpopts.wat returns 0
// for a good response, 10 + the future's error case, 20 + the body's.
func TestHTTPRequestOptions(t *testing.T) {
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	mux.HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1024")
		w.Write([]byte("0123456789"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		w.Write([]byte("late"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(release)
	u, _ := url.Parse(srv.URL)
	const (
		readTimeout = 10 + 2 // connection-read-timeout, the future's
		bodyTimeout = 20 + 2 // connection-read-timeout, the body's
	)
	ms := uint64(time.Millisecond)
	cases := []struct {
		name           string
		path           string
		first, between uint64
		want           uint32
	}{
		{"no limits reached", "/ok", 5000 * ms, 5000 * ms, 0},
		{"first byte", "/hang", 200 * ms, 0, readTimeout},
		{"between bytes", "/stall", 0, 200 * ms, bodyTimeout},
		{"slow within its limit", "/slow", 5000 * ms, 0, 0},
	}
	for _, k := range runKinds {
		for _, onThread := range []bool{true, false} {
			for _, c := range cases {
				name := k.name + ": " + c.name + map[bool]string{true: " (guest's thread)", false: " (transport)"}[onThread]
				t.Run(name, func(t *testing.T) {
					syncExchanges = onThread
					defer func() { syncExchanges = true }()
					h := wasmhost.NewHost()
					Enable(h, Grant{Decide: allowAll, MaxBodyBytes: 1 << 20, MaxInFlight: 4})
					i, err := instantiateFull(testEngine, context.Background(), k.fixture(t, "httpopts.wat"),
						wasmhost.RunConfig{GoIO: k.goIO, Host: h, Limits: wasmhost.Limits{Deadline: 20 * time.Second}})
					if err != nil {
						t.Fatal(err)
					}
					defer i.Close()
					start := time.Now()
					v, err := i.Call(bg, "", "fetch", u.Host, c.path, c.first, c.between)
					if err != nil {
						t.Fatal(err)
					}
					if v != c.want {
						t.Fatalf("fetch = %v, want %d", v, c.want)
					}
					if c.want != 0 && time.Since(start) > 10*time.Second {
						t.Errorf("the timeout ended the request after %v", time.Since(start))
					}
				})
			}
		}
	}
}

// TestHTTPTwoOutstanding: a guest that hands two requests to handle before
// waiting on either, and waits on the second first, gets both answers,
// though the second one's server answers only once the first one's whole
// answer (32 MiB, more than the connection buffers) has been read: the
// first exchange, begun on the guest's thread, is handed to a goroutine
// when the second is made, so it progresses while the guest waits on the
// other.
func TestHTTPTwoOutstanding(t *testing.T) {
	aDone := make(chan struct{}, 4)
	mux := http.NewServeMux()
	mux.HandleFunc("/a/{n}", func(w http.ResponseWriter, r *http.Request) {
		n := 1
		if r.PathValue("n") == "big" {
			n = 32 << 20
		}
		w.Header().Set("Content-Length", strconv.Itoa(n))
		w.Write(make([]byte, n))
		aDone <- struct{}{}
	})
	mux.HandleFunc("/b", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-aDone:
			w.Write([]byte("b"))
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
			// a's answer was never read: a body cut short, which the
			// guest sees as HTTP-response-incomplete.
			w.Header().Set("Content-Length", "10")
			w.Write([]byte("x"))
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	for _, k := range runKinds {
		for _, onThread := range []bool{true, false} {
			for _, a := range []string{"/a/small", "/a/big"} {
				if !k.spool && a == "/a/big" {
					// A live body (Go's wasi:io) is never more than
					// liveBodyBuffer ahead of the guest: a's server cannot
					// finish until the guest reads, by design, on either
					// path.
					continue
				}
				t.Run(fmt.Sprintf("%s %s thread=%v", k.name, a, onThread), func(t *testing.T) {
					syncExchanges = onThread
					defer func() { syncExchanges = true }()
					h := wasmhost.NewHost()
					Enable(h, Grant{Decide: allowAll, MaxBodyBytes: 64 << 20, MaxInFlight: 4})
					i, err := instantiateFull(testEngine, context.Background(), k.fixture(t, "httpopts.wat"),
						wasmhost.RunConfig{GoIO: k.goIO, Host: h, Limits: wasmhost.Limits{Deadline: 20 * time.Second}})
					if err != nil {
						t.Fatal(err)
					}
					defer i.Close()
					v, err := i.Call(bg, "", "fetch2", u.Host, a, "/b")
					if err != nil || v != uint32(0) {
						t.Fatalf("fetch2 = %v, %v; want 0 (both answered, their bodies ended well)", v, err)
					}
				})
			}
		}
	}
}

// TestHTTPEmptyBodyEnds: a response with no body bytes (content-length 0,
// 204, and a chunked body with no chunks) is finished and its trailers
// answered in every kind of run. (A read of such a body's stream is
// internal/wit's TestCToolHTTPGet: "empty body", "no content".)
func TestHTTPEmptyBodyEnds(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/zero", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "0")
	})
	mux.HandleFunc("/nocontent", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/nochunks", func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush() // the head out before any byte: chunked
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	for _, k := range runKinds {
		for _, path := range []string{"/zero", "/nocontent", "/nochunks"} {
			t.Run(k.name+" "+path, func(t *testing.T) {
				h := wasmhost.NewHost()
				Enable(h, Grant{Decide: allowAll, MaxBodyBytes: 1 << 20, MaxInFlight: 4})
				i, err := instantiateFull(testEngine, context.Background(), k.fixture(t, "httpopts.wat"),
					wasmhost.RunConfig{GoIO: k.goIO, Host: h, Limits: wasmhost.Limits{Deadline: 5 * time.Second}})
				if err != nil {
					t.Fatal(err)
				}
				defer i.Close()
				v, err := i.Call(bg, "", "fetch", u.Host, path, uint64(0), uint64(0))
				if err != nil || v != uint32(0) {
					t.Fatalf("fetch %s = %v, %v; want 0 (the body ended)", path, v, err)
				}
			})
		}
	}
}
