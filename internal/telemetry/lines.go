package telemetry

import (
	"reflect"
	"time"

	"github.com/murmur-go/murmur/internal/trace"
)

// This file is the one table of which trace line becomes which span, with
// which attributes (docs/telemetry.md describes the result); the recorder
// hands every line to Session.Line, so no caller writes a span itself.
//
//	tool_call (a script's)   capsule.tool_call under capsule.session
//	task_start               opens capsule.task (under the traceparent the task came with, else the session)
//	inference                capsule.inference under its task
//	tool_call (an agent's)   capsule.tool_call under its task
//	shell                    capsule.shell under its task
//	call_denied              capsule.call_denied under its task (error status); by operator
//	                         or timeout, also capsule.approval (decision denied|timed_out)
//	call_approved            capsule.approval under its task (decision approved)
//	task_end                 closes capsule.task
//	delegation               closes the capsule.delegation OpenDelegation opened
//	plan_start               opens capsule.plan under its task (plan.go)
//	plan_step_start          opens capsule.plan_step under its plan
//	tool_call, shell         of a plan step: under its capsule.plan_step
//	plan_step                closes capsule.plan_step
//	plan_end                 closes capsule.plan (a refused plan's is opened and closed at once)
//	mcp_server_start/_end    one capsule.mcp_server span per start, under capsule.session
//	tool_call (kind mcp)     capsule.tool_call as a client span with the MCP attributes; the
//	                         span was opened when the call was sent (OpenToolCall, its
//	                         traceparent went in _meta) and the line ends it
//
// A line's span parent is found from its parent_id: an inference line's
// parent is its task_start, a tool line's its inference. A span starts at
// the line's time less its duration_ms and ends at the line's time.

var _ trace.SpanSink = (*Session)(nil)

// Open starts a session's span export (the run's span sink), or returns
// none when neither the manifest nor the environment names a collector
// (Wanted).
func Open(e trace.SpanExport) (trace.SpanSink, error) {
	if !Wanted(e.Endpoint) {
		return nil, nil
	}
	s, err := Start(e.Endpoint, Identity{SessionID: e.SessionID, CapsuleName: e.CapsuleName,
		CapsuleVersion: e.CapsuleVersion, Kind: e.Kind, FormationID: e.FormationID}, e.LogPath, Options{}, e.Started)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Line mirrors one trace line as a span (trace.SpanSink).
func (s *Session) Line(l trace.Emitted) {
	if s == nil {
		return
	}
	switch ev := deref(l.Event).(type) {
	case trace.ToolCall:
		s.ToolCall(ev.ToolName, l.At.Add(-ms(ev.DurationMS)), l.At, ev.InputBytes, ev.OutputBytes, ev.Status, str(ev.Error))
	case trace.TaskStart:
		t := s.StartTask(TaskStartLine{TaskID: ev.TaskID, ContextID: ev.ContextID, Source: ev.Source, Origin: ev.Origin,
			MessageBytes: ev.MessageBytes}, ev.TraceParent, l.At)
		s.note(l.EventID, t)
	case trace.Inference:
		t := s.taskOf(l.ParentID)
		t.Inference(InferenceLine{Turn: ev.Turn, Model: ev.Model, InputTokens: ev.InputTokens, OutputTokens: ev.OutputTokens,
			StopReason: ev.StopReason, ToolCalls: ev.ToolCalls, Err: ev.Err}, l.At.Add(-ms(ev.DurationMS)), l.At)
		s.note(l.EventID, t)
	case trace.PlanStart, trace.PlanStepStart, trace.PlanStep, trace.PlanEnd:
		s.planLine(l, ev)
	case trace.AgentToolCall:
		line := ToolCallLine{ToolName: ev.ToolName, Turn: ev.Turn, ToolCallID: ev.ToolCallID, Kind: ev.Kind,
			InputBytes: ev.InputBytes, OutputBytes: ev.OutputBytes, Status: ev.Status, Error: str(ev.Error),
			Ending: ev.Ending, Server: ev.Server, MCPTool: ev.MCPTool,
			MCPTransport: ev.MCPTransport, MCPProtocol: ev.MCPProtocol}
		// An MCP call's span was opened when the call was sent
		// (OpenToolCall); ending's read lock keeps End's flush after it.
		s.ending.RLock()
		c := s.takeCall(l.ParentID, ev.ToolCallID)
		if c != nil {
			c.end(line, ev.DurationMS, l.At)
		}
		s.ending.RUnlock()
		if c != nil {
			break
		}
		s.taskOf(l.ParentID).under(s.planCtx(l.ParentID)).ToolCall(line, l.At.Add(-ms(ev.DurationMS)), l.At)
	case trace.Shell:
		s.taskOf(l.ParentID).under(s.planCtx(l.ParentID)).Shell(ShellLine{Turn: ev.Turn, ToolCallID: ev.ToolCallID, Binary: ev.Binary, Command: ev.Command,
			ExitCode: ev.ExitCode, StdoutBytes: int(ev.StdoutBytes), StderrBytes: int(ev.StderrBytes), Truncated: ev.Truncated,
			LogPath: ev.LogPath}, l.At.Add(-ms(ev.DurationMS)), l.At)
	case trace.CallDenied:
		t := s.taskOf(l.ParentID)
		start := l.At.Add(-ms(ev.DurationMS))
		t.CallDenied(CallDeniedLine{ToolName: ev.ToolName, ToolCallID: ev.ToolCallID, Kind: ev.Kind, By: ev.By, Reason: ev.Reason,
			Turn: ev.Turn, Binary: ev.Binary, Hook: ev.Hook, PlanID: ev.PlanID, StepID: ev.StepID}, start, l.At)
		if ev.By != trace.DeniedByHook {
			decision := "denied"
			if ev.By == trace.DeniedByTimeout {
				decision = "timed_out"
			}
			t.Approval(ev.ToolName, ev.ToolCallID, decision, ev.Reason, start, l.At)
		}
	case trace.CallApproved:
		s.taskOf(l.ParentID).Approval(ev.ToolName, ev.ToolCallID, "approved", "", l.At.Add(-ms(ev.WaitedMS)), l.At)
	case trace.MCPServerStart:
		s.mcpStart(ev, l.At)
	case trace.MCPServerEnd:
		s.mcpEnd(ev, l.At)
	case trace.TaskEnd:
		t := s.taskOf(l.ParentID)
		t.End(TaskEndLine{ExitStatus: ev.ExitStatus, Turns: ev.Turns, InputTokens: ev.InputTokens, OutputTokens: ev.OutputTokens,
			ToolCalls: ev.ToolCalls, ToolErrors: ev.ToolErrors, ShellCalls: ev.ShellCalls, CallsDenied: ev.CallsDenied}, l.At)
		s.forget(t)
	case trace.Delegation:
		s.mu.Lock()
		d := s.delegations[ev.DelegationID]
		delete(s.delegations, ev.DelegationID)
		s.mu.Unlock()
		d.End(DelegationLine{ChildSessionID: ev.ChildSessionID, Outcome: ev.Outcome, Reason: str(ev.Reason)}, l.At)
	case trace.MemberCall:
		s.mu.Lock()
		d := s.delegations[ev.CallID]
		delete(s.delegations, ev.CallID)
		s.mu.Unlock()
		d.End(DelegationLine{Outcome: ev.Status, Reason: str(ev.Reason)}, l.At)
	}
}

// OpenMemberCall opens a call-member call's capsule.member_call span under
// the task of the line parent and returns its traceparent
// (trace.SpanSink); the member_call line with its call_id closes it.
func (s *Session) OpenMemberCall(parent, callID, member string, at time.Time) string {
	if s == nil {
		return ""
	}
	d := s.taskOf(parent).StartMemberCall(callID, member, at)
	if d == nil {
		return ""
	}
	s.mu.Lock()
	if s.delegations != nil {
		s.delegations[callID] = d
	}
	s.mu.Unlock()
	return d.Traceparent()
}

// OpenDelegation opens a delegation's capsule.delegation span under the
// task of the line parent, or under the session span for "" (a script
// parent has no tasks), and returns its traceparent (trace.SpanSink).
func (s *Session) OpenDelegation(parent string, ev trace.DelegationStart, at time.Time) string {
	if s == nil {
		return ""
	}
	line := DelegationStartLine{DelegationID: ev.DelegationID, Capsule: ev.Capsule, Version: ev.Version, ChildSessionID: ev.ChildSessionID}
	var d *Delegation
	if parent == "" {
		d = s.StartDelegation(line, at)
	} else {
		d = s.taskOf(parent).StartDelegation(line, at)
	}
	if d == nil {
		return ""
	}
	s.mu.Lock()
	if s.delegations != nil {
		s.delegations[ev.DelegationID] = d
	}
	s.mu.Unlock()
	return d.Traceparent()
}

// note records that the line id belongs to task t, so the lines under it
// find their task.
func (s *Session) note(id string, t *Task) {
	if t == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byLine == nil {
		return // the session ended
	}
	s.byLine[id] = t
	t.lines = append(t.lines, id)
}

// taskOf is the task the line id belongs to; nil for none.
func (s *Session) taskOf(id string) *Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byLine[id]
}

// forget drops an ended task's lines.
func (s *Session) forget(t *Task) {
	if t == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range t.lines {
		delete(s.byLine, id)
	}
	t.lines = nil
}

// deref gives the value a pointer event points to.
func deref(ev any) any {
	if v := reflect.ValueOf(ev); v.Kind() == reflect.Pointer && !v.IsNil() {
		return v.Elem().Interface()
	}
	return ev
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
