package telemetry

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestEncodeExportRequestDecodes checks the hand-written wire format
// against the generated OTLP types: every field the exporter writes is
// decoded and compared.
func TestEncodeExportRequestDecodes(t *testing.T) {
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	sid := trace.SpanID{1, 1, 1, 1, 1, 1, 1, 1}
	pid := trace.SpanID{2, 2, 2, 2, 2, 2, 2, 2}
	lid := trace.SpanID{3, 3, 3, 3, 3, 3, 3, 3}
	ts, _ := trace.ParseTraceState("k=v")
	start := time.Unix(1700000000, 123456789)
	end := start.Add(1500 * time.Millisecond)
	res := resource.NewSchemaless(attribute.String("service.name", "hello"))
	stub := tracetest.SpanStub{
		Name:        "capsule.tool_call",
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts}),
		Parent:      trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid, Remote: true}),
		SpanKind:    trace.SpanKindServer,
		StartTime:   start,
		EndTime:     end,
		Attributes: []attribute.KeyValue{
			attribute.String("s", "x"), attribute.String("empty", ""),
			attribute.Int("i", -7), attribute.Int("zero", 0),
			attribute.Bool("t", true), attribute.Bool("f", false),
			attribute.Float64("d", 2.5),
			attribute.StringSlice("ss", []string{"a", "b"}),
			attribute.Int64Slice("is", []int64{1, 2}),
		},
		Events: []sdktrace.Event{{Name: "ev", Time: start.Add(time.Millisecond), Attributes: []attribute.KeyValue{attribute.Int("n", 3)}}},
		Links: []sdktrace.Link{{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: lid, Remote: true, TraceFlags: trace.FlagsSampled}),
			Attributes: []attribute.KeyValue{attribute.String("why", "remote parent")}}},
		Status:               sdktrace.Status{Code: codes.Error, Description: "boom"},
		Resource:             res,
		InstrumentationScope: instrumentation.Scope{Name: "github.com/murmur-go/murmur", Version: "1"},
	}
	second := stub
	second.Name = "capsule.session"
	second.Parent = trace.SpanContext{}
	second.Status = sdktrace.Status{}
	second.Attributes, second.Events, second.Links = nil, nil, nil
	spans := tracetest.SpanStubs{stub, second}.Snapshots()

	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(encodeExportRequest(spans), &req); err != nil {
		t.Fatal(err)
	}
	if len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans) != 1 {
		t.Fatalf("want one resource and one scope, got %v", &req)
	}
	rs := req.ResourceSpans[0]
	if a := rs.Resource.Attributes; len(a) != 1 || a[0].Key != "service.name" || a[0].Value.GetStringValue() != "hello" {
		t.Errorf("resource attributes %v", a)
	}
	sc := rs.ScopeSpans[0]
	if sc.Scope.Name != "github.com/murmur-go/murmur" || sc.Scope.Version != "1" {
		t.Errorf("scope %v", sc.Scope)
	}
	if len(sc.Spans) != 2 {
		t.Fatalf("want 2 spans, got %d", len(sc.Spans))
	}
	sp := sc.Spans[0]
	checks := []struct {
		what      string
		got, want any
	}{
		{"trace_id", string(sp.TraceId), string(tid[:])},
		{"span_id", string(sp.SpanId), string(sid[:])},
		{"parent_span_id", string(sp.ParentSpanId), string(pid[:])},
		{"trace_state", sp.TraceState, "k=v"},
		{"name", sp.Name, "capsule.tool_call"},
		{"kind", sp.Kind, tracepb.Span_SPAN_KIND_SERVER},
		{"start", sp.StartTimeUnixNano, uint64(start.UnixNano())},
		{"end", sp.EndTimeUnixNano, uint64(end.UnixNano())},
		{"status code", sp.Status.GetCode(), tracepb.Status_STATUS_CODE_ERROR},
		{"status message", sp.Status.GetMessage(), "boom"},
		{"flags", sp.Flags, uint32(0x301)},
		{"events", len(sp.Events), 1},
		{"event name", sp.Events[0].Name, "ev"},
		{"event time", sp.Events[0].TimeUnixNano, uint64(start.Add(time.Millisecond).UnixNano())},
		{"event attr", sp.Events[0].Attributes[0].Value.GetIntValue(), int64(3)},
		{"links", len(sp.Links), 1},
		{"link span", string(sp.Links[0].SpanId), string(lid[:])},
		{"link attr", sp.Links[0].Attributes[0].Value.GetStringValue(), "remote parent"},
		{"link flags", sp.Links[0].Flags, uint32(0x301)},
		{"second parent", len(sc.Spans[1].ParentSpanId), 0},
		{"second status", sc.Spans[1].Status.GetCode(), tracepb.Status_STATUS_CODE_UNSET},
		{"second flags", sc.Spans[1].Flags, uint32(0x101)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
		}
	}
	{
		for _, kv := range sp.Attributes {
			v := kv.Value
			var ok bool
			switch kv.Key {
			case "s":
				ok = v.GetStringValue() == "x"
			case "empty":
				ok = v.GetStringValue() == "" && v.Value != nil
			case "i":
				ok = v.GetIntValue() == -7
			case "zero":
				ok = v.GetIntValue() == 0 && v.Value != nil
			case "t":
				ok = v.GetBoolValue()
			case "f":
				ok = !v.GetBoolValue() && v.Value != nil
			case "d":
				ok = v.GetDoubleValue() == 2.5
			case "ss":
				a := v.GetArrayValue().GetValues()
				ok = len(a) == 2 && a[0].GetStringValue() == "a" && a[1].GetStringValue() == "b"
			case "is":
				a := v.GetArrayValue().GetValues()
				ok = len(a) == 2 && a[0].GetIntValue() == 1 && a[1].GetIntValue() == 2
			}
			if !ok {
				t.Errorf("attribute %s decoded as %v", kv.Key, v)
			}
		}
		if len(sp.Attributes) != 9 {
			t.Errorf("want 9 attributes, got %d", len(sp.Attributes))
		}
	}
}
