package telemetry

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// headerCollector is a loopback OTLP/HTTP receiver that decodes each
// ExportTraceServiceRequest and keeps the path and headers it came with.
type headerCollector struct {
	mu      sync.Mutex
	paths   []string
	headers []http.Header
	spans   []string // names
}

func (c *headerCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paths = append(c.paths, r.URL.Path)
	c.headers = append(c.headers, r.Header.Clone())
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				c.spans = append(c.spans, sp.Name)
			}
		}
	}
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (c *headerCollector) got() ([]string, []http.Header, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.paths...), append([]http.Header(nil), c.headers...), append([]string(nil), c.spans...)
}

// clearOTLPEnv unsets every OTLP variable for the test, so the developer's
// own environment cannot leak in.
func clearOTLPEnv(t *testing.T) {
	for _, k := range []string{EnvMurmurEndpoint, EnvEndpoint, EnvTracesEndpoint, EnvHeaders, EnvTracesHeaders, EnvTimeout, EnvTracesTimeout} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// runOneSession starts a session with the manifest endpoint ep (maybe
// empty), ends it and returns otel.log.
func runOneSession(t *testing.T, ep string) string {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "otel.log")
	s, err := Start(ep, Identity{SessionID: "s-env", CapsuleName: "local/env", CapsuleVersion: "0.1.0", Kind: "script"}, logPath, Options{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s.ToolCall("echo", time.Now(), time.Now(), 1, 1, "ok", "")
	s.End("ok", "", time.Now())
	log, _ := os.ReadFile(logPath)
	return string(log)
}

func TestEnvEndpoint(t *testing.T) {
	clearOTLPEnv(t)
	c := &headerCollector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	t.Setenv(EnvEndpoint, srv.URL+"/base/")
	if !Wanted("") {
		t.Fatalf("Wanted is false with %s set", EnvEndpoint)
	}
	log := runOneSession(t, "")
	paths, _, spans := c.got()
	if len(paths) == 0 || paths[0] != "/base/v1/traces" {
		t.Errorf("paths %v, want /base/v1/traces", paths)
	}
	if strings.Join(spans, ",") != SpanToolCall+","+SpanSession {
		t.Errorf("spans %v", spans)
	}
	if !strings.Contains(log, "endpoint="+srv.URL+"/base/v1/traces") {
		t.Errorf("otel.log does not name the endpoint:\n%s", log)
	}
}

func TestEnvTracesEndpointIsTheWholeURL(t *testing.T) {
	clearOTLPEnv(t)
	c, other := &headerCollector{}, &headerCollector{}
	srv, osrv := httptest.NewServer(c), httptest.NewServer(other)
	defer srv.Close()
	defer osrv.Close()
	t.Setenv(EnvEndpoint, osrv.URL)
	t.Setenv(EnvTracesEndpoint, srv.URL+"/collect/spans")
	runOneSession(t, "")
	if paths, _, spans := c.got(); len(paths) == 0 || paths[0] != "/collect/spans" || len(spans) != 2 {
		t.Errorf("traces endpoint got paths %v spans %v", paths, spans)
	}
	if paths, _, _ := other.got(); len(paths) != 0 {
		t.Errorf("the general endpoint was posted to as well: %v", paths)
	}
}

// MURMUR_OTEL_ENDPOINT (a container's collector, docs/deploy.md) is a base
// URL like the manifest's, and wins over the standard variables.
func TestMurmurEndpoint(t *testing.T) {
	clearOTLPEnv(t)
	c, other := &headerCollector{}, &headerCollector{}
	srv, osrv := httptest.NewServer(c), httptest.NewServer(other)
	defer srv.Close()
	defer osrv.Close()
	t.Setenv(EnvEndpoint, osrv.URL)
	t.Setenv(EnvTracesEndpoint, osrv.URL+"/v1/traces")
	t.Setenv(EnvMurmurEndpoint, srv.URL+"/pod")
	if !Wanted("") {
		t.Fatalf("Wanted is false with %s set", EnvMurmurEndpoint)
	}
	runOneSession(t, "")
	if paths, _, spans := c.got(); len(paths) == 0 || paths[0] != "/pod/v1/traces" || len(spans) != 2 {
		t.Errorf("MURMUR_OTEL_ENDPOINT got paths %v spans %v", paths, spans)
	}
	if paths, _, _ := other.got(); len(paths) != 0 {
		t.Errorf("the standard variables' endpoint was posted to: %v", paths)
	}
	t.Setenv(EnvMurmurEndpoint, "ftp://x")
	if _, err := resolveTarget("", 0, os.Getenv); err == nil || !strings.Contains(err.Error(), EnvMurmurEndpoint) {
		t.Errorf("a bad %s: %v", EnvMurmurEndpoint, err)
	}
}

func TestEnvHeaders(t *testing.T) {
	clearOTLPEnv(t)
	c := &headerCollector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	t.Setenv(EnvEndpoint, srv.URL)
	t.Setenv(EnvHeaders, " api-key = s%20ecret%2Cx , x-team=blue,broken, bad name=1")
	log := runOneSession(t, "")
	_, hs, _ := c.got()
	if len(hs) == 0 {
		t.Fatal("nothing posted")
	}
	h := hs[0]
	if h.Get("Api-Key") != "s ecret,x" || h.Get("X-Team") != "blue" || h.Get("Content-Type") != "application/x-protobuf" {
		t.Errorf("headers %v", h)
	}
	if h.Get("Broken") != "" || h.Get("Bad Name") != "" {
		t.Errorf("a malformed entry was sent: %v", h)
	}
	if !strings.Contains(log, EnvHeaders+": entry 3 ") || !strings.Contains(log, EnvHeaders+": entry 4 ") {
		t.Errorf("otel.log does not say the malformed entries were skipped:\n%s", log)
	}
	if strings.Contains(log, "ecret") {
		t.Errorf("otel.log repeats a header value:\n%s", log)
	}

	// The signal's own variable replaces the general one.
	c2 := &headerCollector{}
	srv2 := httptest.NewServer(c2)
	defer srv2.Close()
	t.Setenv(EnvEndpoint, srv2.URL)
	t.Setenv(EnvTracesHeaders, "x-only=traces")
	runOneSession(t, "")
	_, hs, _ = c2.got()
	if len(hs) == 0 || hs[0].Get("X-Only") != "traces" || hs[0].Get("Api-Key") != "" {
		t.Errorf("with %s set, headers %v", EnvTracesHeaders, hs)
	}
}

// The manifest's endpoint wins, and the environment's headers (a
// collector's credentials, often) are not sent to it.
func TestManifestEndpointWins(t *testing.T) {
	clearOTLPEnv(t)
	mc, ec := &headerCollector{}, &headerCollector{}
	msrv, esrv := httptest.NewServer(mc), httptest.NewServer(ec)
	defer msrv.Close()
	defer esrv.Close()
	t.Setenv(EnvEndpoint, esrv.URL)
	t.Setenv(EnvTracesEndpoint, esrv.URL+"/v1/traces")
	t.Setenv(EnvHeaders, "authorization=Bearer%20secret")
	runOneSession(t, msrv.URL)
	paths, hs, spans := mc.got()
	if len(paths) == 0 || paths[0] != "/v1/traces" || len(spans) != 2 {
		t.Fatalf("manifest endpoint got paths %v spans %v", paths, spans)
	}
	if hs[0].Get("Authorization") != "" {
		t.Errorf("the environment's headers went to the manifest's endpoint: %v", hs[0])
	}
	if paths, _, _ := ec.got(); len(paths) != 0 {
		t.Errorf("the environment's endpoint was posted to: %v", paths)
	}
}

func TestEnvTimeout(t *testing.T) {
	clearOTLPEnv(t)
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	t.Setenv(EnvEndpoint, srv.URL)
	t.Setenv(EnvTimeout, "5000")
	t.Setenv(EnvTracesTimeout, "150")
	tgt, err := resolveTarget("", 0, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if tgt.timeout != 150*time.Millisecond {
		t.Errorf("timeout %v, want the traces variable's 150ms", tgt.timeout)
	}
	// One real export to the hanging collector is cut at that timeout.
	exp := newOTLPExporter(tgt)
	spans := testSpans()
	t0 := time.Now()
	err = exp.ExportSpans(t.Context(), spans)
	if took := time.Since(t0); err == nil || took > 1500*time.Millisecond {
		t.Errorf("export to a hanging collector: err %v after %v, want a timeout near 150ms", err, took)
	}

	// The general variable when the signal's is unset; a caller's timeout
	// wins; a value that does not parse keeps the default and is noted.
	os.Unsetenv(EnvTracesTimeout)
	if tgt, _ := resolveTarget("", 0, os.Getenv); tgt.timeout != 5*time.Second {
		t.Errorf("general timeout: %v", tgt.timeout)
	}
	if tgt, _ := resolveTarget("", time.Second, os.Getenv); tgt.timeout != time.Second {
		t.Errorf("caller's timeout: %v", tgt.timeout)
	}
	t.Setenv(EnvTimeout, "2s")
	if tgt, _ := resolveTarget("", 0, os.Getenv); tgt.timeout != defaultExportTimeout || len(tgt.notes) != 1 || !strings.Contains(tgt.notes[0], EnvTimeout) {
		t.Errorf("bad timeout: %v, notes %v", tgt.timeout, tgt.notes)
	}
}

func TestEnvEndpointMustBeHTTP(t *testing.T) {
	clearOTLPEnv(t)
	if Wanted("") {
		t.Fatal("Wanted with nothing set")
	}
	for _, v := range []struct{ name, val string }{{EnvEndpoint, "127.0.0.1:4318"}, {EnvTracesEndpoint, "grpc://x"}} {
		t.Setenv(v.name, v.val)
		_, err := Start("", Identity{}, filepath.Join(t.TempDir(), "otel.log"), Options{}, time.Now())
		if err == nil || !strings.Contains(err.Error(), v.name) {
			t.Errorf("%s=%s: err %v, want one naming the variable", v.name, v.val, err)
		}
		os.Unsetenv(v.name)
	}
}

func testSpans() []sdktrace.ReadOnlySpan {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled})
	return tracetest.SpanStubs{{Name: SpanSession, SpanContext: sc, StartTime: time.Now(), EndTime: time.Now()}}.Snapshots()
}
