package wit_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

// The exchange on the guest's thread (internal/wasmhost/httpsync.go): its
// connections are the run's own, kept alive between a run's requests, and
// must behave as the transport's did when the server closes them, when the
// run is cancelled while the guest waits, and when a body ends early.

// countingServer is echoServer's handlers on a server that counts the
// connections it accepted.
func countingServer(t *testing.T, mux *http.ServeMux) (*httptest.Server, *atomic.Int64) {
	accepts := new(atomic.Int64)
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			accepts.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, accepts
}

func bytesHandler(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(r.PathValue("n"))
	w.Header().Set("Content-Length", strconv.Itoa(n))
	w.Write(pattern(n))
}

func lines(got string) []string { return strings.Split(strings.TrimSpace(got), "\n") }

// TestGoKitHTTPKeepAlive: a run's requests to one origin, made one after
// another, share one connection (the server accepts once), whatever the
// body's size and framing; a response the server ends with close is not
// reused.
func TestGoKitHTTPKeepAlive(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/bytes/{n}", bytesHandler)
	mux.HandleFunc("/close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.Write([]byte("bye"))
	})
	b := wit.HTTPBounds{MaxBodyBytes: 64 << 20, MaxInFlight: 16}
	cases := []struct {
		name    string
		task    []string
		accepts int64
	}{
		{"five small GETs", []string{"-GET %s/bytes/1024", "-GET %s/bytes/1024", "-GET %s/bytes/0", "-GET %s/bytes/1024", "-GET %s/bytes/1024"}, 1},
		{"large bodies between", []string{"-GET %s/bytes/1024", "-GET %s/bytes/" + strconv.Itoa(1<<20), "-GET %s/bytes/1024"}, 1},
		{"a close in between", []string{"-GET %s/bytes/1024", "-GET %s/close", "-GET %s/bytes/1024"}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A server of its own: connections are kept across runs too.
			srv, accepts := countingServer(t, mux)
			u, _ := url.Parse(srv.URL)
			before := accepts.Load()
			task := fmt.Sprintf(strings.Join(c.task, "\n")+"\n", anyN(srv.URL, len(c.task))...)
			got, _, err := runHTTPCapsule(t, task, wit.NetworkAllow([]string{u.Host}, "k"), b, wasmhost.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range lines(got) {
				if !strings.HasPrefix(l, "status=200 ") || !strings.Contains(l, "err=<nil>") {
					t.Errorf("request %d: %q", i, l)
				}
			}
			if n := accepts.Load() - before; n != c.accepts {
				t.Errorf("the server accepted %d connections, want %d", n, c.accepts)
			}
		})
	}
}

func anyN(s string, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestGoKitHTTPServerClosesBetween: a server that closes a kept connection
// between requests (after answering in full, or on reading the next
// request without answering it) costs the guest nothing for a request that
// can be sent again (GET): the next request is made on a new connection.
// A POST whose request was already sent on the closed connection is not
// sent twice: the guest gets the error.
func TestGoKitHTTPServerClosesBetween(t *testing.T) {
	var served atomic.Int64
	mux := http.NewServeMux()
	// /then-close answers in full, then closes the connection.
	mux.HandleFunc("/then-close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "2")
		w.Write([]byte("ok"))
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	// /second-dies: every second request on a connection is read and its
	// connection closed unanswered.
	mux.HandleFunc("/second-dies", func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1)%2 == 0 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Header().Set("Content-Length", "2")
		w.Write([]byte("ok"))
	})
	b := wit.HTTPBounds{MaxBodyBytes: 1 << 20, MaxInFlight: 16}
	cases := []struct {
		name    string
		task    []string
		want    []string
		accepts int64
	}{
		{"closed after a full answer", []string{"-GET %s/then-close", "-GET %s/then-close", "-GET %s/then-close"},
			[]string{"status=200 bytes=2 err=<nil>", "status=200 bytes=2 err=<nil>", "status=200 bytes=2 err=<nil>"}, 3},
		{"closed on reading the next GET", []string{"-GET %s/second-dies", "-GET %s/second-dies"},
			[]string{"status=200 bytes=2 err=<nil>", "status=200 bytes=2 err=<nil>"}, 2},
		{"closed on reading the next POST", []string{"-GET %s/second-dies", "-POST %s/second-dies 10 length"},
			[]string{"status=200 bytes=2 err=<nil>", "error Post \"%s/second-dies\": wasi:http: connection-terminated"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, accepts := countingServer(t, mux) // (connections are kept across runs)
			u, _ := url.Parse(srv.URL)
			served.Store(0)
			before := accepts.Load()
			task := fmt.Sprintf(strings.Join(c.task, "\n")+"\n", anyN(srv.URL, len(c.task))...)
			got, _, err := runHTTPCapsule(t, task, wit.NetworkAllow([]string{u.Host}, "k"), b, wasmhost.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			gl := lines(got)
			if len(gl) != len(c.want) {
				t.Fatalf("got %q", got)
			}
			for i, w := range c.want {
				if strings.Contains(w, "%s") {
					w = fmt.Sprintf(w, srv.URL)
				}
				if !strings.HasPrefix(gl[i], w) {
					t.Errorf("request %d: got %q, want %q", i, gl[i], w)
				}
			}
			if n := accepts.Load() - before; n != c.accepts {
				t.Errorf("the server accepted %d connections, want %d", n, c.accepts)
			}
		})
	}
}

// TestGoKitHTTPCancelWhileWaiting: a run whose guest is blocked on its
// own thread waiting for a response head (or a body that stalls) returns
// as soon as its caller cancels, with a CancelledError, and leaves no
// descriptor or goroutine behind.
func TestGoKitHTTPCancelWhileWaiting(t *testing.T) {
	for _, path := range []string{"/hang", "/stall"} {
		t.Run(path, func(t *testing.T) {
			arrived := make(chan struct{}, 1)
			release := make(chan struct{})
			defer close(release)
			mux := http.NewServeMux()
			mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
				arrived <- struct{}{}
				select {
				case <-r.Context().Done():
				case <-release:
				}
			})
			mux.HandleFunc("/bytes/{n}", bytesHandler)
			mux.HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "1024")
				w.Write([]byte("partial"))
				w.(http.Flusher).Flush()
				arrived <- struct{}{}
				select {
				case <-r.Context().Done():
				case <-release:
				}
			})
			srv, _ := countingServer(t, mux)
			u, _ := url.Parse(srv.URL)
			e, c := gokitComponent(t, httpWasm)
			// A first run: what the engine makes once (its helpers, their
			// descriptors) is not the run's.
			if _, _, err := runHTTPCapsule(t, "-GET "+srv.URL+"/bytes/1\n", wit.NetworkAllow([]string{u.Host}, "k"),
				wit.HTTPBounds{MaxBodyBytes: 1 << 20, MaxInFlight: 16}, wasmhost.Limits{}); err != nil {
				t.Fatal(err)
			}
			srv.CloseClientConnections()
			fds0, g0 := countFDs(t), runtime.NumGoroutine()

			s := newSession(t, "GET "+srv.URL+path+"\n")
			h := wasmhost.NewHost()
			wit.GrantHTTPBounded(h, wit.NetworkAllow([]string{u.Host}, "k"), slog.New(slog.DiscardHandler),
				wit.HTTPBounds{MaxBodyBytes: 1 << 20, MaxInFlight: 16})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			inst, err := instantiate(e, ctx, c, wasmhost.RunConfig{Limits: wasmhost.Limits{Deadline: time.Minute}, WASI: s.wasi(nil), Host: h})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- wit.CallCapsuleRun(ctx, inst) }()
			<-arrived
			cancelled := time.Now()
			cancel()
			err = <-done
			took := time.Since(cancelled)
			inst.Close()
			var ce *wasmhost.CancelledError
			if !errors.As(err, &ce) {
				out, _ := os.ReadFile(filepath.Join(s.work, "out", "result.txt"))
				t.Fatalf("want a CancelledError, got %v (the guest wrote %q)", err, out)
			}
			// Promptly: well inside the call's grace, which is what a wait
			// that ignored the cancellation would take.
			if took > 5*time.Second {
				t.Errorf("the run took %v to end after its cancel", took)
			}
			srv.CloseClientConnections()
			var fds, g int
			for range 100 {
				if fds, g = countFDs(t), runtime.NumGoroutine(); fds <= fds0+2 && g <= g0+2 {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Fatalf("after close: %d fds (before %d), %d goroutines (before %d)", fds, fds0, g, g0)
		})
	}
}

func countFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	return len(ents)
}

// TestGoKitHTTPClosesMidBody: a server that declares a length and closes
// the connection part-way through the body: the guest reads what came and
// then HTTP-response-incomplete, for a small body (read on the guest's
// thread) and a large one (spooled by a goroutine); the next request of the
// run is made on a new connection.
func TestGoKitHTTPClosesMidBody(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/bytes/{n}", bytesHandler)
	mux.HandleFunc("/cut/{n}/{sent}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		sent, _ := strconv.Atoi(r.PathValue("sent"))
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", n)
		buf.Write(pattern(sent))
		buf.Flush()
	})
	b := wit.HTTPBounds{MaxBodyBytes: 64 << 20, MaxInFlight: 16}
	for _, c := range []struct{ n, sent int }{{1024, 100}, {1 << 20, 300 << 10}} {
		t.Run(strconv.Itoa(c.n), func(t *testing.T) {
			srv, accepts := countingServer(t, mux) // (connections are kept across runs)
			u, _ := url.Parse(srv.URL)
			before := accepts.Load()
			task := fmt.Sprintf("GET %s/cut/%d/%d\n-GET %s/bytes/10\n", srv.URL, c.n, c.sent, srv.URL)
			got, _, err := runHTTPCapsule(t, task, wit.NetworkAllow([]string{u.Host}, "k"), b, wasmhost.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			gl := lines(got)
			want := fmt.Sprintf("status=200 bytes=%d error wasi:http: HTTP-response-incomplete", c.sent)
			if len(gl) != 2 || !strings.HasPrefix(gl[0], want) || !strings.HasPrefix(gl[1], "status=200 bytes=10 err=<nil>") {
				t.Fatalf("got %q, want %q then a good GET", got, want)
			}
			if n := accepts.Load() - before; n != 2 {
				t.Errorf("the server accepted %d connections, want 2", n)
			}
		})
	}
}

// TestGoKitHTTPDeadlineInHandle: a capsule's request is written in handle,
// so a server that never reads a large request body holds the guest there;
// the call's deadline ends it as a wait naming handle.
func TestGoKitHTTPDeadlineInHandle(t *testing.T) {
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/sink", func(w http.ResponseWriter, r *http.Request) {
		// The body is never read, so the server sees no close from the
		// client either: the test lets it go.
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv, _ := countingServer(t, mux)
	t.Cleanup(func() { close(release) }) // before the server's Close, which waits for this handler
	u, _ := url.Parse(srv.URL)
	start := time.Now()
	_, _, err := runHTTPCapsule(t, "POST "+srv.URL+"/sink "+strconv.Itoa(32<<20)+" length\n", wit.NetworkAllow([]string{u.Host}, "k"),
		wit.HTTPBounds{MaxBodyBytes: 1 << 20, MaxInFlight: 16}, wasmhost.Limits{Deadline: 3 * time.Second})
	var de *wasmhost.DeadlineError
	if !errors.As(err, &de) || !de.Waiting || de.Call != "wasi:http/outgoing-handler#handle" {
		t.Fatalf("want a DeadlineError waiting on handle, got %#v (%v)", de, err)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
}
