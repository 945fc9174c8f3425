package wasmhost

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
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
	for _, onThread := range []bool{true, false} {
		for _, c := range cases {
			name := c.name + map[bool]string{true: " (guest's thread)", false: " (transport)"}[onThread]
			t.Run(name, func(t *testing.T) {
				syncExchanges = onThread
				defer func() { syncExchanges = true }()
				h := NewHost()
				h.HTTP(HTTPGrant{Decide: allowAll, MaxBodyBytes: 1 << 20, MaxInFlight: 4})
				i, err := instantiateFull(testEngine, context.Background(), fixture(t, "httpopts.wat"),
					RunConfig{Host: h, Limits: Limits{Deadline: 20 * time.Second}})
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
