package wasihttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/wasmhost"
)

// TestDriverHTTPNoHostLeak: 1,000 requests whose handles a driver run never
// drops leave no descriptors or goroutines once the instance is closed.
func TestDriverHTTPNoHostLeak(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
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
	i, err := instantiateFull(testEngine, context.Background(), fixture(t, "httpleak.wat"), wasmhost.RunConfig{GoIO: true, Host: h})
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := i.ProviderState(ProviderName).(*httpRun); h == nil || !h.live {
		t.Fatal("the driver run's wasi:http is not on Go streams")
	}
	v, err := i.Call(bg, "", "requests", uint32(1000), u.Host)
	if err != nil || v != uint32(1000) {
		t.Fatalf("requests = %v, %v; want 1000 accepted", v, err)
	}
	i.Close()
	srv.CloseClientConnections()
	var fds, g int
	for range 100 {
		if fds, g = countFDs(), runtime.NumGoroutine(); fds <= fds0+2 && g <= g0+2 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("after close: %d fds (before %d), %d goroutines (before %d)", fds, fds0, g, g0)
}

// TestLiveBodyPump: a driver's response body reaches its Go stream as the
// server sends it, never more than the stream's buffer ahead of the
// reader, and a body past the bound ends with HTTP-response-body-size after
// the bytes within it.
func TestLiveBodyPump(t *testing.T) {
	const size = 1 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 16<<10)
		for i := range chunk {
			chunk[i] = byte(i)
		}
		for n := 0; n < size; n += len(chunk) {
			w.Write(chunk)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	for _, c := range []struct {
		name string
		max  int64
		want string // the ending's error-code, "" for a clean end
	}{
		{"within the bound", size, ""},
		{"past the bound", 100_000, "HTTP-response-body-size"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			const max = 64 << 10
			s := wasmhost.NewInputStream(max, "")
			done := make(chan wasmhost.Value, 1)
			go func() {
				end := pumpBody(ctx, resp, s, c.max, 0, cancel)
				s.Finish(end)
				done <- end
			}()
			var got int64
			for {
				b, ending, ok := s.Take(8 << 10)
				if !ok {
					if v, _ := ending.(wasmhost.Variant); v.Case != c.want || (c.want == "") != (ending == nil) {
						t.Fatalf("ending %v, want %q", ending, c.want)
					}
					break
				}
				got += int64(len(b))
				if n := s.Buffered(); n > max {
					t.Errorf("the stream holds %d bytes, more than its %d", n, max)
				}
				if len(b) == 0 {
					for p := s.Pollable(); !p.Ready(); {
						time.Sleep(50 * time.Microsecond) // (the engine's wait needs a run)
					}
				}
			}
			if want := min(c.max, size); got != want {
				t.Fatalf("read %d bytes, want %d", got, want)
			}
			<-done
		})
	}
}
