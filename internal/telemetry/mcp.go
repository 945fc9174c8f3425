package telemetry

import (
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
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
