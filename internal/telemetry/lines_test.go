package telemetry

import (
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/trace"
)

// TestLinesBecomeSpans drives a real recorder into the sink: each line
// becomes its span, placed by its parent_id, with the line's fields as
// attributes, and a delegation's span opened ahead of its line is closed by
// it.
func TestLinesBecomeSpans(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	dir := t.TempDir()
	sink, err := Open(trace.SpanExport{Endpoint: srv.URL, SessionID: "ses_l", CapsuleName: "local/agent", CapsuleVersion: "0.2.0",
		Kind: "agent", LogPath: filepath.Join(dir, "otel.log"), Started: time.Now(), FormationID: "frm_1"})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := trace.Create(filepath.Join(dir, trace.FileName), "ses_l", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	rec := trace.NewRecorder(tw, sink, time.Now(), nil)
	rec.Emit(trace.AgentSessionStart{SessionStart: trace.SessionStart{CapsuleName: "local/agent", CapsuleVersion: "0.2.0", Kind: "agent"}})
	task := rec.Emit(trace.TaskStart{TaskID: "tsk_1", ContextID: "ctx_1", Source: "a2a", Origin: "user", MessageBytes: 3})
	inf := rec.EmitUnder(task, trace.Inference{TaskID: "tsk_1", Turn: 1, Model: "replay", StopReason: "tool_call", ToolCalls: []string{"echo"}, DurationMS: 5})
	errText := "boom"
	rec.EmitUnder(inf, trace.AgentToolCall{ToolCall: trace.ToolCall{ToolName: "echo", InputBytes: 2, OutputBytes: 11, DurationMS: 3,
		Status: "error", Error: &errText}, TaskID: "tsk_1", Turn: 1, ToolCallID: "call_1", Kind: "wasm", Ending: "trapped"})
	rec.EmitUnder(inf, trace.Shell{TaskID: "tsk_1", Turn: 1, ToolCallID: "call_2", Binary: "/bin/ls", Command: "ls", ExitCode: 1})
	tp := rec.OpenDelegation(inf, trace.DelegationStart{DelegationID: "dlg_1", Capsule: "child", Version: "1.0.0"})
	rec.Emit(trace.Delegation{DelegationID: "dlg_1", Capsule: "child", Version: "1.0.0", ChildSessionID: "ses_c", Outcome: "ok"})
	mtp := rec.OpenMemberCall(inf, "mcl_1", "worker")
	mt, why := "tsk_m", "the member ended its task without an answer: nothing"
	rec.EmitUnder(inf, trace.MemberCall{TaskID: "tsk_1", CallID: "mcl_1", Member: "worker", MemberTaskID: &mt, Status: "no_answer", Offers: 1, Reason: &why})
	rec.EmitUnder(task, &trace.TaskEnd{TaskID: "tsk_1", ExitStatus: "ok", Turns: 1, ToolCalls: 1, ToolErrors: 1, ShellCalls: 1})
	rec.ToolCall("local/echo", time.Now().Add(-2*time.Millisecond), 1, 2, "")
	rec.EndAgent("ok", "", true)

	root, ts := c.one(t, SpanSession), c.one(t, SpanTask)
	if attrs(root)["murmur.formation_id"] != "frm_1" {
		t.Errorf("session span %v", attrs(root))
	}
	if !under(ts, root) || attrs(ts)["task_id"] != "tsk_1" || attrs(ts)["tool_errors"] != int64(1) {
		t.Errorf("task span %v", attrs(ts))
	}
	for _, name := range []string{SpanInference, SpanShell, SpanDelegation, SpanMemberCall} {
		if sp := c.one(t, name); !under(sp, ts) {
			t.Errorf("%s is not under the task span", name)
		}
	}
	var agentCall, scriptCall bool
	for _, sp := range c.byName(SpanToolCall) {
		a := attrs(sp)
		switch {
		case under(sp, ts):
			agentCall = a["tool_name"] == "echo" && a["error"] == "boom" && a["ending"] == "trapped" && a["duration_ms"] == int64(3)
		case under(sp, root):
			scriptCall = a["tool_name"] == "local/echo" && a["status"] == "ok"
		}
	}
	if !agentCall || !scriptCall {
		t.Errorf("tool_call spans: the agent's %v, the script's %v", agentCall, scriptCall)
	}
	d := c.one(t, SpanDelegation)
	if a := attrs(d); a["outcome"] != "ok" || a["child_session_id"] != "ses_c" || tp == "" {
		t.Errorf("delegation span %v, traceparent %q", a, tp)
	}
	m := c.one(t, SpanMemberCall)
	if a := attrs(m); a["call_id"] != "mcl_1" || a["member"] != "worker" || a["outcome"] != "no_answer" || a["reason"] != why || mtp == "" || mtp == tp {
		t.Errorf("member call span %v, traceparent %q", a, mtp)
	}
}

// The policy gate's lines: a call_denied line becomes capsule.call_denied
// under its task (error status), and an operator's answer capsule.approval
// (denied or timed out: error status; approved: not).
func TestGateLinesBecomeSpans(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	dir := t.TempDir()
	sink, err := Open(trace.SpanExport{Endpoint: srv.URL, SessionID: "ses_g", CapsuleName: "local/agent", CapsuleVersion: "0.2.0",
		Kind: "agent", LogPath: filepath.Join(dir, "otel.log"), Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := trace.Create(filepath.Join(dir, trace.FileName), "ses_g", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	rec := trace.NewRecorder(tw, sink, time.Now(), nil)
	rec.Emit(trace.AgentSessionStart{SessionStart: trace.SessionStart{CapsuleName: "local/agent", CapsuleVersion: "0.2.0", Kind: "agent"}})
	task := rec.Emit(trace.TaskStart{TaskID: "tsk_1", ContextID: "ctx_1", Source: "a2a", Origin: "user"})
	inf := rec.EmitUnder(task, trace.Inference{TaskID: "tsk_1", Turn: 1, Model: "replay"})
	hook, bin := "local/p", "/bin/bash"
	rec.EmitUnder(inf, trace.CallDenied{TaskID: "tsk_1", Turn: 1, ToolCallID: "call_1", ToolName: "bash", Kind: "shell", Binary: &bin,
		By: "hook", Hook: &hook, Reason: "the policy hook local/p denied it: no", DurationMS: 2})
	rec.EmitUnder(inf, trace.CallDenied{TaskID: "tsk_1", Turn: 1, ToolCallID: "call_2", ToolName: "bash", Kind: "shell",
		By: "timeout", Reason: "no operator answered within lifecycle.input_timeout_secs (1s)", DurationMS: 1000})
	rec.EmitUnder(inf, trace.CallApproved{TaskID: "tsk_1", ToolCallID: "call_3", ToolName: "bash", WaitedMS: 40, MessageID: "op-1"})
	rec.EmitUnder(task, &trace.TaskEnd{TaskID: "tsk_1", ExitStatus: "ok", Turns: 1, CallsDenied: 2})
	rec.EndAgent("ok", "", true)

	ts := c.one(t, SpanTask)
	if attrs(ts)["calls_denied"] != int64(2) {
		t.Errorf("task span %v", attrs(ts))
	}
	denied := c.byName(SpanCallDenied)
	if len(denied) != 2 {
		t.Fatalf("%d capsule.call_denied spans", len(denied))
	}
	for _, sp := range denied {
		if a := attrs(sp); !under(sp, ts) || a["tool_name"] != "bash" || a["reason"] == "" || a["by"] == "" {
			t.Errorf("capsule.call_denied %v", a)
		}
	}
	if a := attrs(denied[0]); a["hook"] != "local/p" || a["binary"] != "/bin/bash" || a["duration_ms"] != int64(2) {
		t.Errorf("capsule.call_denied by a hook %v", a)
	}
	decisions := map[any]bool{}
	for _, sp := range c.byName(SpanApproval) {
		decisions[attrs(sp)["decision"]] = under(sp, ts)
	}
	if len(decisions) != 2 || !decisions["timed_out"] || !decisions["approved"] {
		t.Errorf("capsule.approval spans %v", decisions)
	}
}
