package telemetry

import (
	"compress/gzip"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is a real OTLP/HTTP receiver: it decodes each protobuf
// ExportTraceServiceRequest posted to /v1/traces.
type collector struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	res   map[string]string
	paths []string
	ctype string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = zr
	}
	data, _ := io.ReadAll(body)
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	c.mu.Lock()
	c.paths = append(c.paths, r.URL.Path)
	c.ctype = r.Header.Get("Content-Type")
	for _, rs := range req.ResourceSpans {
		c.res = map[string]string{}
		for _, a := range rs.GetResource().GetAttributes() {
			c.res[a.Key] = a.Value.GetStringValue()
		}
		for _, ss := range rs.ScopeSpans {
			c.spans = append(c.spans, ss.Spans...)
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func attrs(s *tracepb.Span) map[string]any {
	m := map[string]any{}
	for _, a := range s.Attributes {
		if a.Value.GetStringValue() != "" {
			m[a.Key] = a.Value.GetStringValue()
		} else {
			m[a.Key] = a.Value.GetIntValue()
		}
	}
	return m
}

func TestSpansReachTheCollector(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	logPath := filepath.Join(t.TempDir(), "otel.log")
	t0 := time.Now()
	s, err := Start(srv.URL+"/", Identity{SessionID: "ses_1", CapsuleName: "local/demo", CapsuleVersion: "0.1.0", Kind: "script"}, logPath, Options{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	s.ToolCall("echo", t0, t0.Add(3*time.Millisecond), 5, 7, "ok", "")
	s.ToolCall("missing", t0, t0, 1, 0, "error", "not declared")
	s.End("ok", "", t0.Add(10*time.Millisecond))
	s.End("ok", "", time.Now()) // twice is fine

	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.spans) != 3 {
		t.Fatalf("collector got %d spans, want 3", len(c.spans))
	}
	for _, p := range c.paths {
		if p != "/v1/traces" {
			t.Errorf("posted to %s", p)
		}
	}
	if c.ctype != "application/x-protobuf" {
		t.Errorf("content type %q", c.ctype)
	}
	if c.res["service.name"] != "local/demo" || c.res["service.version"] != "0.1.0" {
		t.Errorf("resource %v", c.res)
	}
	var root *tracepb.Span
	var calls []*tracepb.Span
	for _, sp := range c.spans {
		switch sp.Name {
		case SpanSession:
			root = sp
		case SpanToolCall:
			calls = append(calls, sp)
		}
	}
	if root == nil || len(calls) != 2 {
		t.Fatalf("spans: %v", c.spans)
	}
	if a := attrs(root); a["exit_status"] != "ok" || a["session_id"] != "ses_1" {
		t.Errorf("session span attrs %v", a)
	}
	for _, sp := range calls {
		if string(sp.ParentSpanId) != string(root.SpanId) || string(sp.TraceId) != string(root.TraceId) {
			t.Errorf("tool span %v is not under the session span", attrs(sp))
		}
	}
	if a := attrs(calls[0]); a["tool_name"] != "echo" || a["input_bytes"] != int64(5) || a["duration_ms"] != int64(3) || a["status"] != "ok" {
		t.Errorf("tool span attrs %v", a)
	}
	if a := attrs(calls[1]); a["error"] != "not declared" {
		t.Errorf("failed tool span attrs %v", a)
	}
	if _, ok := attrs(calls[0])["error"]; ok {
		t.Error("a tool call that succeeded has an error attribute")
	}
	if calls[1].Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("failed tool call status %v", calls[1].Status)
	}
}

// A collector that is down: nothing waits on it beyond the bounded flush,
// and the failure lands in otel.log.
func TestCollectorDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now

	logPath := filepath.Join(t.TempDir(), "otel.log")
	s, err := Start("http://"+addr, Identity{SessionID: "ses_2", CapsuleName: "local/demo", CapsuleVersion: "1"}, logPath, Options{ShutdownTimeout: 3 * time.Second}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		s.ToolCall("echo", time.Now(), time.Now(), 1, 1, "ok", "")
	}
	s.End("ok", "", time.Now())
	data, _ := os.ReadFile(logPath)
	if !strings.Contains(string(data), "exporting spans failed") || !strings.Contains(string(data), "connection refused") {
		t.Errorf("otel.log:\n%s", data)
	}
}

// A collector that accepts the connection and never answers: End is bounded.
func TestCollectorHangsShutdownIsBounded(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer srv.Close()
	defer close(block)
	logPath := filepath.Join(t.TempDir(), "otel.log")
	s, err := Start(srv.URL, Identity{SessionID: "ses_3", CapsuleName: "a/b", CapsuleVersion: "1"}, logPath,
		Options{ExportTimeout: 300 * time.Millisecond, ShutdownTimeout: 500 * time.Millisecond}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { s.End("failed", "terminated", time.Now()); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a liveness bound, not a timing figure
		t.Fatal("End never returned against a hanging collector")
	}
	if data, _ := os.ReadFile(logPath); !strings.Contains(string(data), "level=ERROR") {
		t.Errorf("otel.log has no error:\n%s", data)
	}
}

func TestBadEndpoint(t *testing.T) {
	for _, ep := range []string{"", "127.0.0.1:4318", "ftp://x"} {
		if _, err := Start(ep, Identity{}, filepath.Join(t.TempDir(), "otel.log"), Options{}, time.Now()); err == nil {
			t.Errorf("Start(%q) accepted", ep)
		}
	}
	var s *Session
	s.ToolCall("x", time.Now(), time.Now(), 0, 0, "ok", "")
	s.End("ok", "", time.Now())
}
