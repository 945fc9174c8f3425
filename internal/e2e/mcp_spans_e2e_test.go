package e2e_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// TestMCPCallSpanTraceparent: with span export on, an MCP call carries its
// own capsule.tool_call span's traceparent in params._meta (mcpbad's meta
// mode writes the _meta it got to its stderr log), so a server's spans
// nest under the call; that span is a client span with the line's
// attributes.
func TestMCPCallSpanTraceparent(t *testing.T) {
	dir := mcpbad(t)
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	proj := mcpProject(t, calls(`mcp__bad__noop, input: {}`), badEntry(dir, "meta", "noop", ""),
		"observability:\n  otel_endpoint: "+srv.URL+"\n")
	homeDir := t.TempDir()
	if r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "go"); r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	recs := sessionsUnder(homeDir)
	if len(recs) != 1 {
		t.Fatalf("sessions %v", recs)
	}
	recv.Mu.Lock()
	spans := append([]*tracepb.Span(nil), recv.Spans...)
	recv.Mu.Unlock()
	var call *tracepb.Span
	for _, s := range spans {
		if s.Name == "capsule.tool_call" {
			if call != nil {
				t.Fatal("two capsule.tool_call spans")
			}
			call = s
		}
	}
	if call == nil {
		t.Fatalf("no capsule.tool_call span among %d spans", len(spans))
	}
	names := map[string]string{}
	for _, a := range call.Attributes {
		names[a.Key] = a.Value.GetStringValue()
	}
	if call.Kind != tracepb.Span_SPAN_KIND_CLIENT || names["gen_ai.tool.name"] != "noop" || names["status"] != "ok" || names["tool_call_id"] != "call_1" {
		t.Errorf("the call's span: kind %v, %v", call.Kind, names)
	}
	want := fmt.Sprintf(`"traceparent":"00-%x-%x-01"`, call.TraceId, call.SpanId)
	if log := probeText(t, recs[0]); !strings.Contains(log, want) {
		t.Errorf("the server's _meta lacks %s:\n%s", want, log)
	}
}
