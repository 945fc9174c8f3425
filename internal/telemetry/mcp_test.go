package telemetry

import (
	"fmt"
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

// An MCP call's span is opened before the call is sent: the traceparent
// OpenToolCall returns names the exported capsule.tool_call span of that
// call (under its task), which its tool_call line ended with the line's
// attributes; a call opened but never given a line is ended, cut short, by
// the session's end.
func TestMCPCallSpanIsItsTraceparent(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	dir := t.TempDir()
	sink, err := Open(trace.SpanExport{Endpoint: srv.URL, SessionID: "ses_t", CapsuleName: "local/agent", CapsuleVersion: "0.1.0",
		Kind: "agent", LogPath: filepath.Join(dir, "otel.log"), Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := trace.Create(filepath.Join(dir, trace.FileName), "ses_t", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	rec := trace.NewRecorder(tw, sink, time.Now(), nil)
	rec.Emit(trace.AgentSessionStart{SessionStart: trace.SessionStart{CapsuleName: "local/agent", CapsuleVersion: "0.1.0", Kind: "agent"}})
	task := rec.Emit(trace.TaskStart{TaskID: "tsk_1", ContextID: "ctx_1", Source: "a2a", Origin: "user"})
	inf := rec.EmitUnder(task, trace.Inference{TaskID: "tsk_1", Turn: 1, Model: "replay", StopReason: "tool_call"})
	if tp := rec.OpenToolCall("evt_none", "c0"); tp != "" {
		t.Errorf("a parent line with no task opened a span: %q", tp)
	}
	tp1 := rec.OpenToolCall(inf, "c1")
	tp2 := rec.OpenToolCall(inf, "c2") // never gets its line
	failed := "it failed on purpose"
	rec.EmitUnder(inf, trace.AgentToolCall{ToolCall: trace.ToolCall{ToolName: "mcp__bad__fail", Status: "error", Error: &failed, DurationMS: 2},
		TaskID: "tsk_1", Turn: 1, ToolCallID: "c1", Kind: "mcp", Ending: "tool_error", Server: "bad", MCPTool: "fail",
		MCPTransport: "pipe", MCPProtocol: "2025-06-18"})
	rec.EmitUnder(task, &trace.TaskEnd{TaskID: "tsk_1", ExitStatus: "ok", Turns: 1, ToolCalls: 1})
	rec.EndAgent("ok", "", true)
	if tp := rec.OpenToolCall(inf, "c3"); tp != "" {
		t.Errorf("a span opened after the session's end: %q", tp)
	}

	task1 := c.one(t, SpanTask)
	calls := c.byName(SpanToolCall)
	if len(calls) != 2 {
		t.Fatalf("%d tool_call spans, want 2", len(calls))
	}
	byID := map[string]string{}
	for _, sp := range calls {
		a := attrs(sp)
		id, _ := a["tool_call_id"].(string)
		byID[id] = fmt.Sprintf("00-%x-%x-01", sp.TraceId, sp.SpanId)
		if !under(sp, task1) || sp.Kind != tracepb.Span_SPAN_KIND_CLIENT || sp.Status == nil || sp.Status.Code != tracepb.Status_STATUS_CODE_ERROR {
			t.Errorf("%s: kind %v status %v, under the task %v", id, sp.Kind, sp.Status, under(sp, task1))
		}
		switch id {
		case "c1":
			if a["mcp.method.name"] != "tools/call" || a["gen_ai.tool.name"] != "fail" || a["error"] != failed ||
				a["ending"] != "tool_error" || a["duration_ms"] != int64(2) || a["network.transport"] != "pipe" {
				t.Errorf("c1's span %v", a)
			}
		case "c2":
			if a["tool_name"] != nil || sp.Status.Message != "the session ended before the call did" {
				t.Errorf("c2's span %v %v", a, sp.Status)
			}
		}
	}
	if tp1 == "" || byID["c1"] != tp1 || byID["c2"] != tp2 {
		t.Errorf("traceparents %q %q; spans %v", tp1, tp2, byID)
	}
}

// A plan step's MCP call: its span, opened before the call, is under the
// step's capsule.plan_step span, and the traceparent names it.
func TestMCPCallSpanInPlanStep(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	dir := t.TempDir()
	sink, err := Open(trace.SpanExport{Endpoint: srv.URL, SessionID: "ses_q", CapsuleName: "local/agent", CapsuleVersion: "0.1.0",
		Kind: "agent", LogPath: filepath.Join(dir, "otel.log"), Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := trace.Create(filepath.Join(dir, trace.FileName), "ses_q", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	rec := trace.NewRecorder(tw, sink, time.Now(), nil)
	rec.Emit(trace.AgentSessionStart{SessionStart: trace.SessionStart{CapsuleName: "local/agent", CapsuleVersion: "0.1.0", Kind: "agent"}})
	task := rec.Emit(trace.TaskStart{TaskID: "tsk_1", ContextID: "ctx_1", Source: "a2a", Origin: "user"})
	inf := rec.EmitUnder(task, trace.Inference{TaskID: "tsk_1", Turn: 1, Model: "replay", ToolCalls: []string{"submit-plan"}})
	ps := rec.EmitUnder(inf, trace.PlanStart{TaskID: "tsk_1", Turn: 1, ToolCallID: "call_1", PlanID: "p", StepCount: 1})
	st := rec.EmitUnder(ps, trace.PlanStepStart{PlanID: "p", StepID: "a", Kind: "tool"})
	tp := rec.OpenToolCall(st, "call_1.a.1")
	rec.EmitUnder(st, trace.AgentToolCall{ToolCall: trace.ToolCall{ToolName: "mcp__bad__noop", Status: "ok"}, TaskID: "tsk_1", Turn: 1,
		ToolCallID: "call_1.a.1", Kind: "mcp", Server: "bad", MCPTool: "noop", PlanCall: trace.PlanCall{PlanID: "p", StepID: "a", Attempt: 1}})
	rec.EmitUnder(ps, trace.PlanStep{PlanID: "p", StepID: "a", Kind: "tool", Status: "success", Attempts: 1})
	rec.EmitUnder(ps, trace.PlanEnd{PlanID: "p", Outcome: "completed", StepsTotal: 1, StepsSucceeded: 1})
	rec.EmitUnder(task, &trace.TaskEnd{TaskID: "tsk_1", ExitStatus: "ok", Turns: 1})
	rec.EndAgent("ok", "", true)

	step, call := c.one(t, SpanPlanStep), c.one(t, SpanToolCall)
	if !under(call, step) || call.Kind != tracepb.Span_SPAN_KIND_CLIENT || attrs(call)["gen_ai.tool.name"] != "noop" {
		t.Errorf("the step's call span: under the step %v, kind %v, %v", under(call, step), call.Kind, attrs(call))
	}
	if want := fmt.Sprintf("00-%x-%x-01", call.TraceId, call.SpanId); tp != want {
		t.Errorf("traceparent %q, the span is %s", tp, want)
	}
}
