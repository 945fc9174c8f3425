package wit_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp/h1"
	"github.com/murmur-go/murmur/internal/wit"
)

const httpWasm = "testdata/components/capsule-http/capsule-http.wasm"

// pattern is the body the capsule-http fixture sends: bytes 0..250 repeated.
// Callers must not change it: up to 16 MiB it is a slice of one shared
// buffer, made once, so the test server's cost of a 10 MiB answer is not
// generating it byte by byte (which had been a quarter of
// BenchmarkHTTPBody10MiB).
func pattern(n int) []byte {
	if base := patternBase(); n <= len(base) {
		return base[:n:n]
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

var patternBase = sync.OnceValue(func() []byte {
	b := make([]byte, 16<<20)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
})

func sum8(b []byte) string {
	s := sha256.Sum256(b)
	return fmt.Sprintf("%x", s[:4])
}

// echoServer answers /bytes/N with N pattern bytes (chunked for /chunked/N),
// and /echo with x-echo: "<len> <sum> <transfer> <x-sent trailer>" and a
// trailer x-sum of the request body.
func echoServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	hits := new(atomic.Int64) // handlers run concurrently
	srv := httptest.NewServer(echoMux(hits))
	t.Cleanup(srv.Close)
	return srv, hits
}

// echoMux is echoServer's handler, counting requests in hits.
func echoMux(hits *atomic.Int64) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/bytes/{n}", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		n, _ := strconv.Atoi(r.PathValue("n"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		w.Header().Set("X-Echo", r.URL.RawQuery)
		w.Write(pattern(n))
	})
	mux.HandleFunc("/chunked/{n}", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
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
		hits.Add(1)
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
		hits.Add(1)
		http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		<-r.Context().Done()
	})
	mux.HandleFunc("/nocontent", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/lying", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Length", "1000")
		w.Write([]byte("short"))
	})
	return mux
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
		{"GET 0 B chunked", "GET %s/chunked/0", "status=200 bytes=0 sum=" + sum8(nil) + " x-echo= trailer=" + sum8(nil), allow, nil},
		{"GET 1 KiB chunked", "GET %s/chunked/1024", "status=200 bytes=1024 sum=" + sum8(pattern(1024)) + " x-echo= trailer=" + sum8(pattern(1024)), allow, nil},
		{"POST 1 KiB chunked", "POST %s/echo 1024 chunked", "status=200 bytes=2 sum=" + sum8([]byte("ok")) +
			" x-echo=POST:1024:" + sum8(pattern(1024)) + ":chunked: trailer=" + sum8(pattern(1024)), allow, nil},
		{"POST 10 MiB content-length", "POST %s/echo " + strconv.Itoa(big) + " length", "status=200 bytes=2 sum=" + sum8([]byte("ok")) +
			fmt.Sprintf(" x-echo=POST:%d:%s:length: trailer=%s", big, sum8(pattern(big)), sum8(pattern(big))), allow, nil},
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
	// lean: the same requests through guest/httpcore (capsule-http's ^METHOD),
	// whose errors carry no net/http prefix.
	netHTTPPrefix := regexp.MustCompile(`error [A-Z][a-z]+ "[^"]*": `)
	for _, lean := range []bool{false, true} {
		for _, c := range cases {
			name, line, want := c.name, c.line, c.want
			if lean {
				name, line, want = "lean/"+name, "^"+line, netHTTPPrefix.ReplaceAllString(want, "error ")
			}
			t.Run(name, func(t *testing.T) {
				bb := b
				if c.bounds != nil {
					bb = *c.bounds
				}
				before := hits.Load()
				got, log, err := runHTTPCapsule(t, fmt.Sprintf(line, srv.URL), wit.NetworkAllow(c.allow, "capabilities.network.allow"), bb, wasmhost.Limits{})
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(want, "%s") {
					want = fmt.Sprintf(want, srv.URL)
				}
				if !strings.HasPrefix(got, want) {
					t.Fatalf("got  %q\nwant %q", got, want)
				}
				if strings.HasPrefix(c.name, "denied") {
					if hits.Load() != before {
						t.Error("a denied request reached the server")
					}
					if !strings.Contains(log, "wasi:http request denied") || !strings.Contains(log, srv.URL+"/bytes/1") ||
						!strings.Contains(log, "capabilities.network.allow") {
						t.Errorf("log line: %s", log)
					}
				}
				if c.name == "redirect handed back" && hits.Load() != before+1 {
					t.Errorf("hits %d, want one (the redirect not followed)", hits.Load()-before)
				}
			})
		}
	}
}

// TestGoKitHTTPSpoolReuse: one run's response bodies share spool files
// (wasmhost's pool, truncated between bodies): each body reads as itself
// after longer ones, after a body dropped while it was still arriving, and
// after one of 0 bytes. Chunked bodies are read to the stream's end, so a
// file not emptied would show the last body's tail.
func TestGoKitHTTPSpoolReuse(t *testing.T) {
	srv, _ := echoServer(t)
	u, _ := url.Parse(srv.URL)
	steps := []struct{ line, want string }{
		{"GET %s/chunked/300000", fmt.Sprintf("status=200 bytes=300000 sum=%s x-echo= trailer=%s", sum8(pattern(300000)), sum8(pattern(300000)))},
		{"GET %s/chunked/1000", fmt.Sprintf("status=200 bytes=1000 sum=%s x-echo= trailer=%s", sum8(pattern(1000)), sum8(pattern(1000)))},
		{"GET %s/bytes/" + strconv.Itoa(8<<20) + " drop", "status=200 dropped"},
		{"GET %s/chunked/10", fmt.Sprintf("status=200 bytes=10 sum=%s x-echo= trailer=%s", sum8(pattern(10)), sum8(pattern(10)))},
		{"GET %s/bytes/0", "status=200 bytes=0 sum=" + sum8(nil) + " x-echo= trailer="},
		{"GET %s/chunked/5", fmt.Sprintf("status=200 bytes=5 sum=%s x-echo= trailer=%s", sum8(pattern(5)), sum8(pattern(5)))},
		{"GET %s/bytes/70000", "status=200 bytes=70000 sum=" + sum8(pattern(70000)) + " x-echo= trailer="},
		{"GET %s/bytes/3", "status=200 bytes=3 sum=" + sum8(pattern(3)) + " x-echo= trailer="},
	}
	var task, want strings.Builder
	for range 3 {
		for _, st := range steps {
			fmt.Fprintf(&task, st.line+"\n", srv.URL)
			want.WriteString(st.want + "\n")
		}
	}
	got, _, err := runHTTPCapsule(t, task.String(), wit.NetworkAllow([]string{u.Host}, "k"),
		wit.HTTPBounds{MaxBodyBytes: 64 << 20, MaxInFlight: 16}, wasmhost.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got != want.String() {
		t.Fatalf("got\n%s\nwant\n%s", got, want.String())
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
	if !errors.As(err, &de) || !de.Waiting || de.Call != "wasi:http/types#[method]future-incoming-response.subscribe" {
		t.Fatalf("want a DeadlineError waiting on future-incoming-response.subscribe, got %#v (%v)", de, err)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
}

// TestGoKitHTTPBodyNotLive: a capsule's bodies stay on the spool
// (internal/wasmhost/RATIONALE.md, "Live streaming"): a server that sends
// its first chunk and then holds the rest leaves the capsule waiting for the
// whole body in incoming-body.stream, not reading the first chunk, until the
// call's deadline. A driver's bodies stream live: TestDriverComponentsStreamLive
// (internal/driver/wasm) is issue 10's live-streaming test, and
// TestDriverComponentsLiveBodyDeadline there the same drip read by a driver.
func TestGoKitHTTPBodyNotLive(t *testing.T) {
	first := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/drip", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("first chunk\n"))
		w.(http.Flusher).Flush()
		close(first)
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	_, _, err := runHTTPCapsule(t, "GET "+srv.URL+"/drip", wit.NetworkAllow([]string{u.Host}, "k"),
		wit.HTTPBounds{MaxBodyBytes: 1 << 20, MaxInFlight: 16}, wasmhost.Limits{Deadline: 2 * time.Second})
	select {
	case <-first:
	default:
		t.Fatal("the server never sent its first chunk")
	}
	var de *wasmhost.DeadlineError
	if !errors.As(err, &de) || !de.Waiting || de.Call != "wasi:http/types#[method]incoming-body.stream" {
		t.Fatalf("want a DeadlineError waiting on incoming-body.stream, got %#v (%v)", de, err)
	}
}

// BenchmarkHTTPGet1KiB: one GET of 1 KiB from a component (100 per capsule
// run, so instantiation is amortised) against the same request from Go
// net/http in the host, to a server in the test's own process. Compare
// p50-ns/request of the sub-benchmarks.
func BenchmarkHTTPGet1KiB(b *testing.B) {
	t := &testing.T{}
	srv, _ := echoServer(t)
	defer srv.Close()
	benchGet1KiB(b, srv.URL)
}

// BenchmarkHTTPGet1KiBServerProcess: BenchmarkHTTPGet1KiB with the server in
// a process of its own (echoServerProcess), as in a real mur run.
func BenchmarkHTTPGet1KiBServerProcess(b *testing.B) {
	benchGet1KiB(b, echoServerProcess(b))
}

func benchGet1KiB(b *testing.B, base string) {
	u, _ := url.Parse(base)
	const per = 100
	// ~GET: the guest times each request (ns=N on its result line), for the
	// p50 the target names; ns/request also counts the run's start.
	// "component" goes through the kit's net/http Transport, "component-lean"
	// (^~GET) through guest/httpcore.
	for _, sub := range []struct{ name, method string }{{"component", "~GET"}, {"component-lean", "^~GET"}} {
		task := strings.Repeat(sub.method+" "+base+"/bytes/1024\n", per)
		b.Run(sub.name, func(b *testing.B) {
			policy := wit.NetworkAllow([]string{u.Host}, "k")
			gokitComponent(b, httpWasm) // compiled once, outside the measured loop
			var each []time.Duration
			for b.Loop() {
				s := newSession(b, task)
				h := wasmhost.NewHost()
				wit.GrantHTTPBounded(h, policy, slog.New(slog.DiscardHandler), wit.HTTPBounds{MaxBodyBytes: 1 << 20, MaxInFlight: 16})
				if err := runCapsule(b, httpWasm, s, h, wasmhost.Limits{}, nil); err != nil {
					b.Fatal(err)
				}
				out, err := os.ReadFile(filepath.Join(s.work, "out", "result.txt"))
				if err != nil {
					b.Fatal(err)
				}
				for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
					_, ns, ok := strings.Cut(line, " ns=")
					n, err := strconv.ParseInt(ns, 10, 64)
					if !ok || err != nil || !strings.HasPrefix(line, "status=200 bytes=1024 err=<nil>") {
						b.Fatalf("result line %q", line)
					}
					each = append(each, time.Duration(n))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/request")
			b.ReportMetric(float64(p50(each).Nanoseconds()), "p50-ns/request")
		})
	}
	// "component-c": the freestanding C tool (no guest runtime), run as a
	// tool inside mur run is (internal/tools: wit.ChooseIO, the grant).
	b.Run("component-c", func(b *testing.B) {
		policy := wit.NetworkAllow([]string{u.Host}, "k")
		gokitComponent(b, httpGetCWasm) // compiled once, outside the measured loop
		var each []time.Duration
		for b.Loop() {
			h := wasmhost.NewHost()
			wit.GrantHTTPBounded(h, policy, slog.New(slog.DiscardHandler), wit.HTTPBounds{MaxBodyBytes: 1 << 20, MaxInFlight: 16})
			res, err := runGetC(b, h, base+"/bytes/1024", per)
			if err != nil {
				b.Fatal(err)
			}
			ns, err := getCDurations(res, per, 1024)
			if err != nil {
				b.Fatal(err)
			}
			each = append(each, ns...)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/request")
		b.ReportMetric(float64(p50(each).Nanoseconds()), "p50-ns/request")
	})
	b.Run("host", func(b *testing.B) {
		c := &http.Client{}
		var each []time.Duration
		for b.Loop() {
			for range per {
				start := time.Now()
				resp, err := c.Get(base + "/bytes/1024")
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				each = append(each, time.Since(start))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/request")
		b.ReportMetric(float64(p50(each).Nanoseconds()), "p50-ns/request")
	})
}

const httpGetCWasm = "testdata/components/http-get-c/http-get-c.wasm"

// runGetC runs the C tool http-get-c once with "<url> <n>", in the run
// config a tool gets inside mur run (internal/tools: wit.ChooseIO, the
// manifest's default limits, h's grant).
func runGetC(tb testing.TB, h *wasmhost.Host, url string, n int) (wit.ToolResult, error) {
	tb.Helper()
	e, c := gokitComponent(tb, httpGetCWasm)
	return runGetCComponent(e, c, h, url, n)
}

func runGetCComponent(e *wasmhost.Engine, c *wasmhost.Component, h *wasmhost.Host, url string, n int) (wit.ToolResult, error) {
	return runGetCData(e, c, h, url+" "+strconv.Itoa(n))
}

// runGetCData runs http-get-c with tool-input.data data.
func runGetCData(e *wasmhost.Engine, c *wasmhost.Component, h *wasmhost.Host, data string) (wit.ToolResult, error) {
	inst, err := instantiate(e, context.Background(), c, wasmhost.RunConfig{Host: h})
	if err != nil {
		return wit.ToolResult{}, err
	}
	defer inst.Close()
	return wit.CallToolRun(context.Background(), inst, wit.ToolInput{Data: &data})
}

// TestCToolHTTPGetInput: http-get-c takes "<url> <n>" or the JSON object a
// model's tool call passes; anything else fails with the usage.
func TestCToolHTTPGetInput(t *testing.T) {
	srv, _ := echoServer(t)
	u, _ := url.Parse(srv.URL)
	const usage = `tool-input.data is not "<url> <n>" or {"url": "<url>", "n": <n>}`
	cases := []struct {
		name, data string
		n          int // GETs of 1 KiB, when it passes
		want       string
	}{
		{"JSON", `{"url": "` + srv.URL + `/bytes/1024", "n": 3}`, 3, ""},
		{"JSON without n", `{"n_":7,"url":"` + srv.URL + `/bytes/1024"}`, 1, ""},
		{"words", srv.URL + "/bytes/1024 2", 2, ""},
		{"JSON without url", `{"n": 1}`, 0, usage},
		{"JSON url not a string", `{"url": 5}`, 0, usage},
		{"JSON url with an escape", `{"url": "http:\/\/x"}`, 0, usage},
		{"no count", srv.URL, 0, usage},
		{"not a URL", `{"url": "ftp://x/"}`, 0, "the URL is not http(s)"},
	}
	e, c := gokitComponent(t, httpGetCWasm)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			h := wasmhost.NewHost()
			wit.GrantHTTPBounded(h, wit.NetworkAllow([]string{u.Host}, "k"), slog.New(slog.DiscardHandler), wit.HTTPBounds{MaxBodyBytes: 1 << 20, MaxInFlight: 16})
			res, err := runGetCData(e, c, h, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if _, err := getCDurations(res, tt.n, 1024); err != nil {
					t.Fatal(err)
				}
			} else if res.Status != wit.StatusFailed || res.Summary == nil || *res.Summary != tt.want {
				t.Fatalf("got %s, want failed %q", show(res), tt.want)
			}
		})
	}
}

// getCDurations checks a passed http-get-c result of n GETs of size bytes
// each and answers the guest-timed durations.
func getCDurations(res wit.ToolResult, n, size int) ([]time.Duration, error) {
	if res.Status != wit.StatusPassed || res.Data == nil {
		return nil, fmt.Errorf("http-get-c: %s", show(res))
	}
	if want := "bytes=" + strconv.Itoa(n*size); res.Summary == nil || *res.Summary != want {
		return nil, fmt.Errorf("http-get-c: summary %s, want %q", show(res), want)
	}
	f := strings.Fields(*res.Data)
	if len(f) != n {
		return nil, fmt.Errorf("http-get-c: %d durations, want %d: %q", len(f), n, *res.Data)
	}
	d := make([]time.Duration, n)
	for i, x := range f {
		ns, err := strconv.ParseInt(x, 10, 64)
		if err != nil || ns <= 0 {
			return nil, fmt.Errorf("http-get-c: duration %q", x)
		}
		d[i] = time.Duration(ns)
	}
	return d, nil
}

// BenchmarkHTTPGet1KiBCProfile times the host calls of component-c's GETs
// from inside the guest: MURMUR_HTTPGETC_PROFILE names a profiling build of
// http-get-c (get.c with -DMURMUR_PROFILE; docs/benchmarks.md), whose
// summary holds each request's ns per kind of host call. It reports the p50
// of each kind, of the whole request ("request") and of the rest ("guest":
// the request less its host calls, which is the guest's own code and the
// clock reads around each call).
func BenchmarkHTTPGet1KiBCProfile(b *testing.B) {
	path := os.Getenv("MURMUR_HTTPGETC_PROFILE")
	if path == "" {
		b.Skip("MURMUR_HTTPGETC_PROFILE names no profiling build of http-get-c")
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	e, _ := gokitComponent(b, httpGetCWasm) // the shared engine
	c, err := e.Compile(wasm)
	if err != nil {
		b.Fatal(err)
	}
	t := &testing.T{}
	srv, _ := echoServer(t)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	policy := wit.NetworkAllow([]string{u.Host}, "k")
	const per = 100
	kinds := []string{"setup", "handle", "wait", "resp", "read", "end", "drop"}
	each := map[string][]time.Duration{}
	var clock []time.Duration
	for b.Loop() {
		h := wasmhost.NewHost()
		wit.GrantHTTPBounded(h, policy, slog.New(slog.DiscardHandler), wit.HTTPBounds{MaxBodyBytes: 1 << 20, MaxInFlight: 16})
		res, err := runGetCComponent(e, c, h, srv.URL+"/bytes/1024", per)
		if err != nil {
			b.Fatal(err)
		}
		if res.Status != wit.StatusPassed || res.Data == nil || res.Summary == nil {
			b.Fatalf("http-get-c: %s", show(res))
		}
		_, prof, ok := strings.Cut(*res.Summary, " PROFILE ")
		if !ok {
			b.Fatalf("not a profiling build: summary %q", *res.Summary)
		}
		got := map[string][]int64{}
		for _, f := range strings.Fields(prof) {
			k, vals, _ := strings.Cut(f, "=")
			for _, v := range strings.Split(vals, ",") {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					b.Fatalf("profile field %q", f)
				}
				got[k] = append(got[k], n)
			}
		}
		clock = append(clock, time.Duration(got["clock"][0]))
		for i, x := range strings.Fields(*res.Data) {
			total, _ := strconv.ParseInt(x, 10, 64)
			rest := total
			for _, k := range kinds {
				if len(got[k]) != per {
					b.Fatalf("profile kind %s: %d values, want %d", k, len(got[k]), per)
				}
				each[k] = append(each[k], time.Duration(got[k][i]))
				rest -= got[k][i]
			}
			each["request"] = append(each["request"], time.Duration(total))
			each["guest"] = append(each["guest"], time.Duration(rest))
		}
	}
	for _, k := range append(kinds, "request", "guest") {
		b.ReportMetric(float64(p50(each[k]).Nanoseconds()), "p50-ns/"+k)
	}
	b.ReportMetric(float64(p50(clock).Nanoseconds()), "ns/clock-pair")
}

// TestCToolHTTPGet: the freestanding C tool's GETs under the grant: each
// answers 200 with the whole body, and a URL the grant does not cover (or
// a status other than 200) ends the run failed, naming why.
func TestCToolHTTPGet(t *testing.T) {
	srv, hits := echoServer(t)
	u, _ := url.Parse(srv.URL)
	other := httptest.NewServer(http.NotFoundHandler()) // same host, another port
	t.Cleanup(other.Close)
	cases := []struct {
		name, url string
		n, size   int
		allow     []string
		want      string // the failed run's summary; "" for passed
		wantHits  int64
	}{
		{"1 KiB", srv.URL + "/bytes/1024", 5, 1024, []string{u.Host}, "", 5},
		{"empty body", srv.URL + "/bytes/0", 2, 0, []string{u.Host}, "", 2},
		{"no content", srv.URL + "/nocontent", 1, 0, []string{u.Host}, "status 204", 1},
		{"200 KiB body", srv.URL + "/bytes/204800", 1, 204800, []string{"http://" + u.Host}, "", 1},
		{"bare host covers every port", srv.URL + "/bytes/1024", 1, 1024, []string{u.Hostname()}, "", 1},
		{"port not covered", other.URL + "/bytes/1024", 1, 0, []string{u.Host}, "HTTP-request-denied", 0},
		{"scheme not covered", srv.URL + "/bytes/1024", 1, 0, []string{"https://" + u.Host}, "HTTP-request-denied", 0},
		{"host not covered", srv.URL + "/bytes/1024", 1, 0, []string{"example.com"}, "HTTP-request-denied", 0},
		{"status 404", srv.URL + "/nowhere", 1, 0, []string{u.Host}, "status 404", 0},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			before := hits.Load()
			var log bytes.Buffer
			h := wasmhost.NewHost()
			wit.GrantHTTPBounded(h, wit.NetworkAllow(tt.allow, "capabilities.network.allow"), slog.New(slog.NewTextHandler(&log, nil)),
				wit.HTTPBounds{MaxBodyBytes: 1 << 20, MaxInFlight: 16})
			res, err := runGetC(t, h, tt.url, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if _, err := getCDurations(res, tt.n, tt.size); err != nil {
					t.Fatal(err)
				}
			} else if res.Status != wit.StatusFailed || res.Summary == nil || *res.Summary != tt.want {
				t.Fatalf("got %s, want failed %q", show(res), tt.want)
			}
			if got := hits.Load() - before; got != tt.wantHits {
				t.Errorf("the server saw %d requests, want %d", got, tt.wantHits)
			}
			if tt.want == "HTTP-request-denied" && !strings.Contains(log.String(), "capabilities.network.allow") {
				t.Errorf("the refusal's log line does not name the manifest key: %q", log.String())
			}
		})
	}
}

// p50 is the median of d (which it sorts).
func p50(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// BenchmarkHTTPBody10MiB: a 10 MiB response streamed into a component (MB/s).
func BenchmarkHTTPBody10MiB(b *testing.B) {
	benchBody10MiB(b, httpWasm, func(url string, h *wasmhost.Host) error {
		return runCapsule(b, httpWasm, newSession(b, "-GET "+url), h, wasmhost.Limits{}, nil)
	})
}

// BenchmarkHTTPBody10MiBComponentC: the same 10 MiB response read by the
// C tool http-get-c, which imports no wasi:filesystem and so reads its
// bodies through Go's wasi:io (one C API value a byte) instead of the spool.
func BenchmarkHTTPBody10MiBComponentC(b *testing.B) {
	benchBody10MiB(b, httpGetCWasm, func(url string, h *wasmhost.Host) error {
		res, err := runGetC(b, h, url, 1)
		if err == nil {
			_, err = getCDurations(res, 1, 10<<20)
		}
		return err
	})
}

// benchBody10MiB times get, which has component wasm read the URL of a
// 10 MiB body under a grant that allows it.
func benchBody10MiB(b *testing.B, wasm string, get func(url string, h *wasmhost.Host) error) {
	t := &testing.T{}
	srv, _ := echoServer(t)
	u, _ := url.Parse(srv.URL)
	defer srv.Close()
	policy := wit.NetworkAllow([]string{u.Host}, "k")
	b.SetBytes(10 << 20)
	gokitComponent(b, wasm) // compiled once, outside the measured loop
	for b.Loop() {
		h := wasmhost.NewHost()
		wit.GrantHTTPBounded(h, policy, slog.New(slog.DiscardHandler), wit.HTTPBounds{MaxBodyBytes: 64 << 20, MaxInFlight: 16})
		if err := get(srv.URL+"/bytes/"+strconv.Itoa(10<<20), h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHTTPBody10MiBHost: the same 10 MiB response read by Go
// net/http in the host, the figure BenchmarkHTTPBody10MiB is set against.
func BenchmarkHTTPBody10MiBHost(b *testing.B) {
	t := &testing.T{}
	srv, _ := echoServer(t)
	defer srv.Close()
	b.SetBytes(10 << 20)
	c := &http.Client{}
	for b.Loop() {
		resp, err := c.Get(srv.URL + "/bytes/" + strconv.Itoa(10<<20))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// TestGoKitHTTPFailures: the bad-input and failure endings a guest library
// expects, through the Go kit's client: a TLS failure to an allowed host,
// a name that does not resolve, header names and values that are not
// HTTP, a header the host keeps for itself.
func TestGoKitHTTPFailures(t *testing.T) {
	srv, _ := echoServer(t)
	u, _ := url.Parse(srv.URL)
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler()) // a certificate no one trusts
	t.Cleanup(tlsSrv.Close)
	tu, _ := url.Parse(tlsSrv.URL)
	b := wit.HTTPBounds{MaxBodyBytes: 1 << 20, MaxInFlight: 16}
	cases := []struct {
		name, line, want string
		allow            []string
	}{
		{"TLS failure", "GET " + tlsSrv.URL + "/", "error Get \"" + tlsSrv.URL + "/\": wasi:http: TLS-certificate-error", []string{tu.Host}},
		{"DNS failure", "GET http://no-such-host.invalid/", "error Get \"http://no-such-host.invalid/\": wasi:http: DNS-", []string{"no-such-host.invalid"}},
		{"header name not a token", "GET " + srv.URL + "/bytes/1 H:bad%09name:v", "error Get \"" + srv.URL + "/bytes/1\": wasi:http: header \"bad\\tname\": invalid-syntax", []string{u.Host}},
		{"header value with a newline", "GET " + srv.URL + "/bytes/1 H:x-a:%0D", "error Get \"" + srv.URL + "/bytes/1\": wasi:http: header \"x-a\": invalid-syntax", []string{u.Host}},
		{"host header", "GET " + srv.URL + "/bytes/1 H:Host:elsewhere", "error Get \"" + srv.URL + "/bytes/1\": wasi:http: header \"host\": forbidden", []string{u.Host}},
		{"connection header", "GET " + srv.URL + "/bytes/1 H:Connection:close", "error Get \"" + srv.URL + "/bytes/1\": wasi:http: header \"connection\": forbidden", []string{u.Host}},
		{"refused connection", "GET http://127.0.0.1:1/", "error Get \"http://127.0.0.1:1/\": wasi:http: connection-refused", []string{"127.0.0.1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := runHTTPCapsule(t, c.line, wit.NetworkAllow(c.allow, "capabilities.network.allow"), b, wasmhost.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(got, c.want) {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// hostUse is what the process holds: open descriptors and goroutines.
func hostUse(t *testing.T) (fds, goroutines int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(ents), runtime.NumGoroutine()
}

// settles waits (up to 10 s, polling) for the process to hold no more than
// the baseline plus slack, once the engines' idle connections are closed;
// connections the server side closes after the client's go away
// asynchronously.
func settles(t *testing.T, fds0, g0, slack int) {
	t.Helper()
	// Connections kept idle between runs are the pool's, not a leak.
	h1.DefaultPool.CloseIdle()
	var fds, g int
	for range 100 {
		if fds, g = hostUse(t); fds <= fds0+slack && g <= g0+slack {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("after the runs: %d fds (before %d), %d goroutines (before %d)", fds, fds0, g, g0)
}

// TestGoKitHTTPNoHostLeak: guests that drop response bodies unread (10 MiB
// each, mid-spool) and runs of many requests leave no descriptors or
// goroutines behind once their instances are closed.
func TestGoKitHTTPNoHostLeak(t *testing.T) {
	srv, _ := echoServer(t)
	u, _ := url.Parse(srv.URL)
	policy := wit.NetworkAllow([]string{u.Host}, "k")
	b := wit.HTTPBounds{MaxBodyBytes: 64 << 20, MaxInFlight: 16}
	runHTTPCapsule(t, "GET "+srv.URL+"/bytes/1", policy, b, wasmhost.Limits{}) // warm: compile, first connections
	srv.CloseClientConnections()
	fds0, g0 := hostUse(t)
	task := strings.Repeat("GET "+srv.URL+"/chunked/"+strconv.Itoa(10<<20)+" drop\n", 5) +
		strings.Repeat("GET "+srv.URL+"/bytes/1024\n", 200)
	for range 3 {
		got, _, err := runHTTPCapsule(t, task, policy, b, wasmhost.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(got, "status=200 dropped"); n != 5 {
			t.Fatalf("%d bodies dropped, want 5:\n%.300s", n, got)
		}
		if n := strings.Count(got, "status=200 bytes=1024 "); n != 200 {
			t.Fatalf("%d of 200 requests answered", n)
		}
	}
	srv.CloseClientConnections()
	settles(t, fds0, g0, 2)
}

// TestGoKitHTTPConcurrentCapsules: 20 capsules at once, each making 100
// requests, all answered, and nothing left behind.
func TestGoKitHTTPConcurrentCapsules(t *testing.T) {
	srv, _ := echoServer(t)
	u, _ := url.Parse(srv.URL)
	policy := wit.NetworkAllow([]string{u.Host}, "k")
	b := wit.HTTPBounds{MaxBodyBytes: 1 << 20, MaxInFlight: 16}
	// The warm-up runs as many at once as the test does, so the engine's kept
	// call workers (a bounded pool that outlives a call) are in the baseline.
	var warm sync.WaitGroup
	for range 20 {
		warm.Go(func() { runHTTPCapsule(t, "GET "+srv.URL+"/bytes/1", policy, b, wasmhost.Limits{}) })
	}
	warm.Wait()
	srv.CloseClientConnections()
	fds0, g0 := hostUse(t)
	task := strings.Repeat("GET "+srv.URL+"/bytes/1024\n", 100)
	errs := make(chan error, 20)
	for i := range 20 {
		go func() {
			got, _, err := runHTTPCapsule(t, task, policy, b, wasmhost.Limits{})
			if err == nil && strings.Count(got, "status=200 bytes=1024 sum="+sum8(pattern(1024))) != 100 {
				err = fmt.Errorf("capsule %d: not every request answered:\n%.300s", i, got)
			}
			errs <- err
		}()
	}
	for range 20 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	srv.CloseClientConnections()
	settles(t, fds0, g0, 2)
}

// TestFetchExample: examples/fetch against a loopback server its grant
// covers, and refused for one it does not.
func TestFetchExample(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("first line\nsecond\n"))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	for _, c := range []struct{ allow, want string }{
		{"http://" + u.Host, srv.URL + "/: 200 OK, text/plain, first line \"first line\"\n"},
		{"https://example.com", srv.URL + "/: refused: capabilities.network.allow does not cover it\n"},
	} {
		s := newSession(t, srv.URL+"/")
		h := wasmhost.NewHost()
		wit.GrantHTTPBounded(h, wit.NetworkAllow([]string{c.allow}, "capabilities.network.allow"), slog.New(slog.DiscardHandler), wit.DefaultHTTPBounds())
		if err := runCapsule(t, "examples/fetch/fetch.wasm", s, h, wasmhost.Limits{}, nil); err != nil {
			t.Fatal(err)
		}
		if got := s.result(t); got != c.want {
			t.Errorf("allow %s: got %q, want %q", c.allow, got, c.want)
		}
	}
}
