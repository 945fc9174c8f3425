package wit_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

const httpWasm = "testdata/components/capsule-http/capsule-http.wasm"

// pattern is the body the capsule-http fixture sends: bytes 0..250 repeated.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

func sum8(b []byte) string {
	s := sha256.Sum256(b)
	return fmt.Sprintf("%x", s[:4])
}

// echoServer answers /bytes/N with N pattern bytes (chunked for /chunked/N),
// and /echo with x-echo: "<len> <sum> <transfer> <x-sent trailer>" and a
// trailer x-sum of the request body.
func echoServer(t *testing.T) (*httptest.Server, *int) {
	hits := new(int)
	mux := http.NewServeMux()
	mux.HandleFunc("/bytes/{n}", func(w http.ResponseWriter, r *http.Request) {
		*hits++
		n, _ := strconv.Atoi(r.PathValue("n"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		w.Header().Set("X-Echo", r.URL.RawQuery)
		w.Write(pattern(n))
	})
	mux.HandleFunc("/chunked/{n}", func(w http.ResponseWriter, r *http.Request) {
		*hits++
		n, _ := strconv.Atoi(r.PathValue("n"))
		w.Header().Set("Trailer", "X-Sum")
		b := pattern(n)
		for len(b) > 0 {
			k := min(len(b), 100000)
			w.Write(b[:k])
			w.(http.Flusher).Flush()
			b = b[k:]
		}
		w.Header().Set("X-Sum", sum8(pattern(n)))
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		*hits++
		b, _ := io.ReadAll(r.Body)
		te := "length"
		if len(r.TransferEncoding) > 0 {
			te = r.TransferEncoding[0]
		}
		w.Header().Set("Trailer", "X-Sum")
		w.Header().Set("X-Echo", fmt.Sprintf("%s:%d:%s:%s:%s", r.Method, len(b), sum8(b), te, r.Trailer.Get("X-Sent")))
		w.Write([]byte("ok"))
		w.Header().Set("X-Sum", sum8(b))
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		*hits++
		http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		*hits++
		<-r.Context().Done()
	})
	mux.HandleFunc("/lying", func(w http.ResponseWriter, r *http.Request) {
		*hits++
		w.Header().Set("Content-Length", "1000")
		w.Write([]byte("short"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, hits
}

func runHTTPCapsule(t *testing.T, task string, policy wit.HTTPPolicy, b wit.HTTPBounds, lim wasmhost.Limits) (string, string, error) {
	t.Helper()
	s := newSession(t, task)
	var log bytes.Buffer
	h := wasmhost.NewHost()
	wit.GrantHTTPBounded(h, policy, slog.New(slog.NewTextHandler(&log, nil)), b)
	err := runCapsule(t, httpWasm, s, h, lim, nil)
	if err != nil {
		return "", log.String(), err
	}
	return s.result(t), log.String(), nil
}

// TestGoKitHTTPEgress: the Go kit's net/http client, in a real component,
// against a loopback server: bodies both ways, both framings, headers,
// trailers, a redirect handed back rather than followed, and the refusals.
func TestGoKitHTTPEgress(t *testing.T) {
	srv, hits := echoServer(t)
	u, _ := url.Parse(srv.URL)
	allow := []string{"http://" + u.Host}
	b := wit.HTTPBounds{MaxBodyBytes: 64 << 20, MaxInFlight: 16}
	big := 10 << 20
	cases := []struct {
		name, line, want string
		allow            []string
		bounds           *wit.HTTPBounds
	}{
		{"GET 0 B", "GET %s/bytes/0?q=1", "status=200 bytes=0 sum=" + sum8(nil) + " x-echo=q=1 trailer=", allow, nil},
		{"GET 1 KiB", "GET %s/bytes/1024", "status=200 bytes=1024 sum=" + sum8(pattern(1024)) + " x-echo= trailer=", allow, nil},
		{"GET 10 MiB", "GET %s/bytes/" + strconv.Itoa(big), fmt.Sprintf("status=200 bytes=%d sum=%s x-echo= trailer=", big, sum8(pattern(big))), allow, nil},
		{"GET 10 MiB chunked with a trailer", "GET %s/chunked/" + strconv.Itoa(big),
			fmt.Sprintf("status=200 bytes=%d sum=%s x-echo= trailer=%s", big, sum8(pattern(big)), sum8(pattern(big))), allow, nil},
		{"POST 0 B", "POST %s/echo 0", "status=200 bytes=2 sum=" + sum8([]byte("ok")) + " x-echo=POST:0:" + sum8(nil) + ":length: trailer=" + sum8(nil), allow, nil},
		{"POST 1 KiB content-length", "POST %s/echo 1024 length", "status=200 bytes=2 sum=" + sum8([]byte("ok")) +
			" x-echo=POST:1024:" + sum8(pattern(1024)) + ":length: trailer=" + sum8(pattern(1024)), allow, nil},
		{"PUT 10 MiB chunked with a trailer", "PUT %s/echo " + strconv.Itoa(big) + " chunked trailer", "status=200 bytes=2 sum=" + sum8([]byte("ok")) +
			fmt.Sprintf(" x-echo=PUT:%d:%s:chunked:%d trailer=%s", big, sum8(pattern(big)), big, sum8(pattern(big))), allow, nil},
		{"redirect handed back", "GET %s/redirect", "status=302 bytes=", allow, nil},
		{"denied: host not listed", "GET %s/bytes/1", "error Get \"%s/bytes/1\": wasi:http: HTTP-request-denied", []string{"example.com"}, nil},
		{"denied: other port", "GET %s/bytes/1", "error Get \"%s/bytes/1\": wasi:http: HTTP-request-denied", []string{"http://127.0.0.1:1"}, nil},
		{"denied: other scheme", "GET %s/bytes/1", "error Get \"%s/bytes/1\": wasi:http: HTTP-request-denied", []string{"https://127.0.0.1:" + u.Port()}, nil},
		{"bare host covers every port", "GET %s/bytes/1", "status=200 bytes=1", []string{"127.0.0.1"}, nil},
		{"body over the bound (declared)", "GET %s/bytes/2048", "error Get \"%s/bytes/2048\": wasi:http: HTTP-response-body-size", allow, &wit.HTTPBounds{MaxBodyBytes: 1024, MaxInFlight: 16}},
		{"body over the bound (chunked)", "GET %s/chunked/2048", "status=200 bytes=1024 error wasi:http: HTTP-response-body-size", allow, &wit.HTTPBounds{MaxBodyBytes: 1024, MaxInFlight: 16}},
		{"lying content-length", "GET %s/lying", "status=200 bytes=5 error wasi:http: HTTP-response-incomplete", allow, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bb := b
			if c.bounds != nil {
				bb = *c.bounds
			}
			before := *hits
			got, log, err := runHTTPCapsule(t, fmt.Sprintf(c.line, srv.URL), wit.NetworkAllow(c.allow, "capabilities.network.allow"), bb, wasmhost.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			want := c.want
			if strings.Contains(want, "%s") {
				want = fmt.Sprintf(want, srv.URL)
			}
			if !strings.HasPrefix(got, want) {
				t.Fatalf("got  %q\nwant %q", got, want)
			}
			if strings.HasPrefix(c.name, "denied") {
				if *hits != before {
					t.Error("a denied request reached the server")
				}
				if !strings.Contains(log, "wasi:http request denied") || !strings.Contains(log, srv.URL+"/bytes/1") ||
					!strings.Contains(log, "capabilities.network.allow") {
					t.Errorf("log line: %s", log)
				}
			}
			if c.name == "redirect handed back" && *hits != before+1 {
				t.Errorf("hits %d, want one (the redirect not followed)", *hits-before)
			}
		})
	}
}

// TestGoKitHTTPDeadline: a server that never answers is ended by the call
// deadline, reported as waiting on the host.
func TestGoKitHTTPDeadline(t *testing.T) {
	srv, _ := echoServer(t)
	u, _ := url.Parse(srv.URL)
	start := time.Now()
	_, _, err := runHTTPCapsule(t, "GET "+srv.URL+"/hang", wit.NetworkAllow([]string{u.Host}, "k"),
		wit.HTTPBounds{MaxBodyBytes: 1 << 20, MaxInFlight: 16}, wasmhost.Limits{Deadline: 2 * time.Second})
	var de *wasmhost.DeadlineError
	if !errors.As(err, &de) || !de.Waiting {
		t.Fatalf("want a waiting DeadlineError, got %v", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
}

// BenchmarkHTTPGet1KiB: one GET of 1 KiB from a Go-kit component (100 per
// capsule run, so instantiation is amortised) against the same request from
// Go net/http in the host. Compare ns/request of the two sub-benchmarks.
func BenchmarkHTTPGet1KiB(b *testing.B) {
	t := &testing.T{}
	srv, _ := echoServer(t)
	u, _ := url.Parse(srv.URL)
	defer srv.Close()
	const per = 100
	task := strings.Repeat("-GET "+srv.URL+"/bytes/1024\n", per)
	b.Run("component", func(b *testing.B) {
		policy := wit.NetworkAllow([]string{u.Host}, "k")
		gokitComponent(b, httpWasm) // compiled once, outside the measured loop
		for b.Loop() {
			s := newSession(b, task)
			h := wasmhost.NewHost()
			wit.GrantHTTPBounded(h, policy, slog.New(slog.DiscardHandler), wit.HTTPBounds{MaxBodyBytes: 1 << 20, MaxInFlight: 16})
			if err := runCapsule(b, httpWasm, s, h, wasmhost.Limits{}, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/request")
	})
	b.Run("host", func(b *testing.B) {
		c := &http.Client{}
		for b.Loop() {
			for range per {
				resp, err := c.Get(srv.URL + "/bytes/1024")
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/request")
	})
}

// BenchmarkHTTPBody10MiB: a 10 MiB response streamed into a component (MB/s).
func BenchmarkHTTPBody10MiB(b *testing.B) {
	t := &testing.T{}
	srv, _ := echoServer(t)
	u, _ := url.Parse(srv.URL)
	defer srv.Close()
	policy := wit.NetworkAllow([]string{u.Host}, "k")
	b.SetBytes(10 << 20)
	gokitComponent(b, httpWasm) // compiled once, outside the measured loop
	for b.Loop() {
		s := newSession(b, "-GET "+srv.URL+"/bytes/"+strconv.Itoa(10<<20))
		h := wasmhost.NewHost()
		wit.GrantHTTPBounded(h, policy, slog.New(slog.DiscardHandler), wit.HTTPBounds{MaxBodyBytes: 64 << 20, MaxInFlight: 16})
		if err := runCapsule(b, httpWasm, s, h, wasmhost.Limits{}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
