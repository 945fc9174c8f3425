package wasihttp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/wasmhost"
)

// TestHTTPDecision: handle hands the guest's request to Enable's decide
// and answers by its verdict (http.wat returns 1 for HTTP-request-denied, 2
// for another error, 0 for a future); nil decide denies.
func TestHTTPDecision(t *testing.T) {
	cases := []struct {
		name   string
		decide func(context.Context, *Request) error
		want   uint32
	}{
		{"denied", func(context.Context, *Request) error { return errors.New("no") }, 1},
		{"nil denies", nil, 1},
		{"allowed: a future", func(context.Context, *Request) error { return nil }, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var seen []Request
			decide := c.decide
			if decide != nil {
				decide = func(ctx context.Context, req *Request) error {
					seen = append(seen, *req)
					return c.decide(ctx, req)
				}
			}
			h := wasmhost.NewHost()
			Enable(h, Grant{Decide: decide, MaxBodyBytes: 1 << 20, MaxInFlight: 4})
			i := instantiate(t, "http.wat", wasmhost.RunConfig{Host: h})
			v, err := i.Call(bg, "", "attempt")
			if err != nil || v != c.want {
				t.Fatalf("attempt = %v, %v; want %d", v, err, c.want)
			}
			if decide != nil && (len(seen) != 1 || seen[0].URL() != "https://blocked.example.com/secret?x=1" || seen[0].Method != "GET") {
				t.Fatalf("decide saw %+v", seen)
			}
		})
	}
}
func TestHTTPNotGranted(t *testing.T) {
	i := instantiate(t, "http.wat", wasmhost.RunConfig{Host: wasmhost.NewHost()})
	_, err := i.Call(bg, "", "attempt")
	te := asTrap(t, err)
	if te.Message != "capability not granted: wasi:http/types@0.2.9#[constructor]fields" {
		t.Fatalf("message %q", te.Message)
	}
}

// TestHTTPHandlesCapped: a guest that makes wasi:http resources and never
// drops them is stopped at MaxHostObjects with an error naming the cap.
func TestHTTPHandlesCapped(t *testing.T) {
	h := wasmhost.NewHost()
	Enable(h, Grant{Decide: allowAll, MaxBodyBytes: 1 << 20, MaxInFlight: 4})
	i := instantiate(t, "httpleak.wat", wasmhost.RunConfig{Host: h})
	_, err := i.Call(bg, "", "fields", uint32(3_000_000))
	te := asTrap(t, err)
	want := "wasi:http [constructor]fields: the component holds 100000 wasi:http resources (fields, requests, responses, bodies, futures) it has not dropped; the host allows 100000"
	if !strings.Contains(te.Message, want) {
		t.Fatalf("message %q", te.Message)
	}
}

// TestHTTPLeakedRequests: 1,000 requests handed to handle and never read
// or dropped (their server never answers) leave no descriptors or
// goroutines in the host once the call has ended and the instance is closed.
func TestHTTPLeakedRequests(t *testing.T) {
	// httpleak.wat imports no wasi:filesystem: by default its bodies are
	// Go's (Component.goIO); its spool copy checks the spool's path.
	for _, spool := range []bool{false, true} {
		t.Run(map[bool]string{false: "live", true: "spool"}[spool], func(t *testing.T) {
			c := fixture(t, "httpleak.wat")
			if spool {
				c = spoolFixture(t, "httpleak.wat")
			}
			testHTTPLeakedRequests(t, c)
		})
	}
}

func testHTTPLeakedRequests(t *testing.T, c *wasmhost.Component) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer srv.Close()
	defer close(hang)
	u, _ := url.Parse(srv.URL)
	countFDs := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip(err)
		}
		return len(ents)
	}
	fds0, g0 := countFDs(), runtime.NumGoroutine()
	h := wasmhost.NewHost()
	Enable(h, Grant{Decide: allowAll, MaxBodyBytes: 1 << 20, MaxInFlight: 16})
	i, err := instantiateFull(testEngine, context.Background(), c, wasmhost.RunConfig{Host: h})
	if err != nil {
		t.Fatal(err)
	}
	v, err := i.Call(bg, "", "requests", uint32(1000), u.Host)
	if err != nil || v != uint32(1000) {
		t.Fatalf("requests = %v, %v; want 1000 accepted", v, err)
	}
	i.Close()
	srv.CloseClientConnections()
	var fds, g int
	for range 100 { // the server side's goroutines end after the client's connections
		if fds, g = countFDs(), runtime.NumGoroutine(); fds <= fds0+2 && g <= g0+2 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("after close: %d fds (before %d), %d goroutines (before %d)", fds, fds0, g, g0)
}

// TestHTTPHoldingRSS reports the process's peak RSS after a guest makes 3 M
// fields handles it never drops (MURMUR_HTTP_RSS=capped, or =uncapped for
// the figure without the cap). A figure, not a check: run it alone.
func TestHTTPHoldingRSS(t *testing.T) {
	mode := os.Getenv("MURMUR_HTTP_RSS")
	if mode == "" {
		t.Skip("set MURMUR_HTTP_RSS=capped|uncapped to measure")
	}
	if mode == "uncapped" {
		defer func(n int) { maxHostObjects = n }(maxHostObjects)
		maxHostObjects = 1 << 30
	}
	h := wasmhost.NewHost()
	Enable(h, Grant{Decide: allowAll, MaxBodyBytes: 1 << 20, MaxInFlight: 4})
	i := instantiate(t, "httpleak.wat", wasmhost.RunConfig{Host: h})
	_, err := i.Call(bg, "", "fields", uint32(3_000_000))
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t.Logf("%s: 3M fields handles: err=%v; peak RSS %d KiB", mode, err, ru.Maxrss)
}

// TestHTTPAppendRSS reports the peak RSS after one 64 MiB fields.append
// (MURMUR_HTTP_RSS=append); the value is over the fields bound, so the
// guest gets invalid-syntax. A figure, not a check: run it alone.
func TestHTTPAppendRSS(t *testing.T) {
	if os.Getenv("MURMUR_HTTP_RSS") != "append" {
		t.Skip("set MURMUR_HTTP_RSS=append to measure")
	}
	h := wasmhost.NewHost()
	Enable(h, Grant{Decide: allowAll, MaxBodyBytes: 1 << 20, MaxInFlight: 4})
	i := instantiate(t, "httpleak.wat", wasmhost.RunConfig{Host: h, Limits: wasmhost.Limits{MemoryBytes: 256 << 20}})
	v, err := i.Call(bg, "", "append", uint32(64<<20))
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t.Logf("64 MiB fields.append: %v, %v; peak RSS %d KiB", v, err, ru.Maxrss)
}
