package telemetry

import (
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/murmur-go/murmur/internal/trace"
)

// An MCP server's start and end become one capsule.mcp_server span under
// the session (error status for an end that is not the session's), and an
// MCP call's capsule.tool_call is a client span with the MCP attributes.
func TestMCPSpans(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	dir := t.TempDir()
	sink, err := Open(trace.SpanExport{Endpoint: srv.URL, SessionID: "ses_m", CapsuleName: "local/agent", CapsuleVersion: "0.1.0",
		Kind: "agent", LogPath: filepath.Join(dir, "otel.log"), Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := trace.Create(filepath.Join(dir, trace.FileName), "ses_m", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	rec := trace.NewRecorder(tw, sink, time.Now(), nil)
	rec.Emit(trace.AgentSessionStart{SessionStart: trace.SessionStart{CapsuleName: "local/agent", CapsuleVersion: "0.1.0", Kind: "agent"}})
	rec.Emit(trace.MCPServerStart{Server: "bad", Name: "local/bad", Version: "1", Start: 1, Transport: "stdio", Status: "ok",
		ProtocolVersion: "2025-06-18", Tools: []trace.MCPToolDef{{Name: "noop", ModelName: "mcp__bad__noop"}}, DurationMS: 4})
	task := rec.Emit(trace.TaskStart{TaskID: "tsk_1", ContextID: "ctx_1", Source: "a2a", Origin: "user"})
	inf := rec.EmitUnder(task, trace.Inference{TaskID: "tsk_1", Turn: 1, Model: "replay", StopReason: "tool_call"})
	rec.EmitUnder(inf, trace.AgentToolCall{ToolCall: trace.ToolCall{ToolName: "mcp__bad__noop", Status: "ok"}, TaskID: "tsk_1",
		Turn: 1, ToolCallID: "c1", Kind: "mcp", Ending: "ok", Server: "bad", MCPTool: "noop", MCPTransport: "pipe", MCPProtocol: "2025-06-18"})
	rec.Emit(trace.MCPServerEnd{Server: "bad", Start: 1, Reason: "exited", Calls: 1})
	rec.EmitUnder(task, &trace.TaskEnd{TaskID: "tsk_1", ExitStatus: "ok", Turns: 1, ToolCalls: 1})
	rec.EndAgent("ok", "", true)

	root, sp := c.one(t, SpanSession), c.one(t, SpanMCPServer)
	a := attrs(sp)
	if !under(sp, root) || a["server"] != "bad" || a["reason"] != "exited" || a["calls"] != int64(1) || a["mcp.protocol.version"] != "2025-06-18" {
		t.Errorf("mcp_server span %v", a)
	}
	if sp.Status == nil || sp.Status.Code != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("an exited server's span is not an error: %v", sp.Status)
	}
	call := c.one(t, SpanToolCall)
	if ca := attrs(call); call.Kind != tracepb.Span_SPAN_KIND_CLIENT || ca["mcp.method.name"] != "tools/call" || ca["gen_ai.tool.name"] != "noop" ||
		ca["network.transport"] != "pipe" || ca["mcp.protocol.version"] != "2025-06-18" {
		t.Errorf("tool_call span %v %v", call.Kind, ca)
	}
}
