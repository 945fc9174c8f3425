package telemetry

import (
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	mtrace "github.com/murmur-go/murmur/internal/trace"
)

// SpanMCPServer is one start of an MCP server, under the session span.
const SpanMCPServer = "capsule.mcp_server"

type mcpOpen struct {
	at    time.Time
	attrs []attribute.KeyValue
	ok    bool
}

// mcpStart remembers a server's start; its span is written at its end.
func (s *Session) mcpStart(ev mtrace.MCPServerStart, at time.Time) {
	var tools []string
	for _, t := range ev.Tools {
		tools = append(tools, t.ModelName)
	}
	attrs := []attribute.KeyValue{
		attribute.String("server", ev.Server), attribute.String("name", ev.Name), attribute.String("version", ev.Version),
		attribute.Int("start", ev.Start), attribute.String("transport", ev.Transport), attribute.String("status", ev.Status),
		attribute.String("protocol_version", ev.ProtocolVersion), attribute.String("mcp.protocol.version", ev.ProtocolVersion),
		attribute.String("server_info.name", ev.ServerInfo.Name), attribute.String("server_info.version", ev.ServerInfo.Version),
		attribute.Int("listed", ev.Listed), attribute.StringSlice("tools", tools),
	}
	if ev.Binary != nil {
		attrs = append(attrs, attribute.String("binary", *ev.Binary))
	}
	if ev.BinarySHA256 != nil {
		attrs = append(attrs, attribute.String("binary_sha256", *ev.BinarySHA256))
	}
	if ev.URL != nil {
		attrs = append(attrs, attribute.String("url", *ev.URL))
	}
	if ev.Containment != nil {
		attrs = append(attrs, attribute.String("containment.achieved", ev.Containment.Achieved))
	}
	if ev.Error != nil {
		attrs = append(attrs, attribute.String("error", *ev.Error))
	}
	s.mcpOpen.Store(fmt.Sprintf("%s/%d", ev.Server, ev.Start), mcpOpen{at: at.Add(-ms(ev.DurationMS)), attrs: attrs, ok: ev.Status == "ok"})
}

// mcpEnd writes the start's capsule.mcp_server span: error status when the
// start failed or the server ended for any reason but the session's end.
func (s *Session) mcpEnd(ev mtrace.MCPServerEnd, at time.Time) {
	o, ok := s.mcpOpen.LoadAndDelete(fmt.Sprintf("%s/%d", ev.Server, ev.Start))
	if !ok {
		return
	}
	open := o.(mcpOpen)
	_, sp := s.tracer.Start(s.ctx, SpanMCPServer, trace.WithTimestamp(open.at), trace.WithAttributes(open.attrs...))
	sp.SetAttributes(attribute.String("reason", ev.Reason), attribute.Int("calls", ev.Calls),
		attribute.Int("errors", ev.Errors), attribute.Int("denied", ev.Denied))
	if !open.ok || ev.Reason != "session_end" {
		sp.SetStatus(codes.Error, ev.Reason)
	}
	sp.End(trace.WithTimestamp(at))
}

// openCall is a tool call's capsule.tool_call span opened before the call
// was sent (OpenToolCall); its tool_call line ends it.
type openCall struct {
	span  trace.Span
	start time.Time
}

func callKey(parent, toolCallID string) string { return parent + "\x00" + toolCallID }

// OpenToolCall opens the capsule.tool_call span of a call about to be sent,
// a client span where its tool_call line under parent will put it (its
// task's, or its plan step's), and returns its traceparent: the call's
// params._meta.traceparent, so an instrumented server's spans nest under
// the call (trace.SpanSink). "" when the parent line has no task span.
func (s *Session) OpenToolCall(parent, toolCallID string, at time.Time) string {
	if s == nil {
		return ""
	}
	t := s.taskOf(parent)
	if t == nil {
		return ""
	}
	ctx, sp, ok := t.childUnder(s.planCtx(parent), SpanToolCall, trace.SpanKindClient, at,
		attribute.String("tool_call_id", toolCallID))
	if !ok {
		return ""
	}
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	key := callKey(parent, toolCallID)
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return "" // the span is dropped with the exporter
	}
	old := s.calls[key]
	s.calls[key] = &openCall{span: sp, start: at}
	s.mu.Unlock()
	if old != nil { // a call opened again without its line: never left open
		old.cutShort("the call was opened again before its line", at)
	}
	return carrier.Get("traceparent")
}

// takeCall is the open span of the call whose line is under parent, nil
// for none.
func (s *Session) takeCall(parent, toolCallID string) *openCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := callKey(parent, toolCallID)
	c := s.calls[key]
	delete(s.calls, key)
	return c
}

// end ends the opened span with its tool_call line at end.
func (c *openCall) end(line ToolCallLine, durationMS int64, end time.Time) {
	attrs, _ := toolCallAttrs(line, durationMS)
	c.span.SetAttributes(attrs...)
	endToolCall(c.span, line, end)
}

// cutShort ends an opened span that got no line.
func (c *openCall) cutShort(why string, end time.Time) {
	c.span.SetAttributes(attribute.Bool("cut_short", true))
	c.span.SetStatus(codes.Error, why)
	c.span.End(trace.WithTimestamp(end))
}
