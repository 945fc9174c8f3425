package telemetry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The line types below carry the fields of the trace line of the same name
// (docs/agent-capsules.md); each becomes a span attribute under the field's own
// name. task_id is the task's and is not repeated here.

// TaskStartLine is task_start's fields.
type TaskStartLine struct {
	TaskID       string
	ContextID    string
	Source       string // task_md | a2a
	Origin       string // user | delegation | completion | peer
	MessageBytes int
}

// TaskEndLine is task_end's fields.
type TaskEndLine struct {
	ExitStatus   string
	Turns        int
	InputTokens  int
	OutputTokens int
	ToolCalls    int
	ToolErrors   int
	ShellCalls   int
	CallsDenied  int
}

// InferenceLine is one inference line (one driver call).
type InferenceLine struct {
	Turn         int
	Model        string
	InputTokens  int
	OutputTokens int
	StopReason   string
	ToolCalls    []string
	// Err is set when the driver call failed; it becomes the span's error
	// status, not an attribute (the trace line has no such field).
	Err string
}

// ToolCallLine is an agent's tool_call line.
type ToolCallLine struct {
	ToolName    string
	Turn        int
	ToolCallID  string
	Kind        string // wasm | skill | runtime
	InputBytes  int
	OutputBytes int
	Status      string // ok | error
	Error       string // the error text when Status is error
	Ending      string // a component call's ending; "" for none
	// Server and MCPTool are an MCP call's server and the server's name
	// for the tool, MCPTransport its network.transport and MCPProtocol its
	// mcp.protocol.version ("" for other kinds).
	Server, MCPTool, MCPTransport, MCPProtocol string
}

// ShellLine is one shell line.
type ShellLine struct {
	Turn        int
	ToolCallID  string
	Binary      string
	Command     string
	ExitCode    int
	StdoutBytes int
	StderrBytes int
	Truncated   bool
	LogPath     string
}

// DelegationStartLine is what delegation_start knows when the child task is
// about to be delivered.
type DelegationStartLine struct {
	DelegationID   string
	Capsule        string
	Version        string
	ChildSessionID string
}

// DelegationLine is the delegation line, written with its outcome.
type DelegationLine struct {
	ChildSessionID string // when it was not known at the start
	Outcome        string // ok | error | crashed | terminated | refused | failed
	Reason         string
}

// Task is one task's capsule.task span. Its methods record the task's lines
// as child spans and are safe for concurrent use; a nil *Task does nothing.
type Task struct {
	s     *Session
	id    string
	ctx   context.Context
	span  trace.Span
	start time.Time
	mu    sync.Mutex
	ended bool
	open  map[*Delegation]struct{}
	lines []string // the event_ids that lead to it (Session.Line); under Session.mu
}

// Delegation is an open capsule.delegation span: started when the child's
// task is about to be delivered, ended with the delegation line. A nil
// *Delegation does nothing and has no traceparent.
type Delegation struct {
	release func(*Delegation) // drops it from its owner's open set
	span    trace.Span
	tp      string
	start   time.Time
	once    sync.Once
}

var traceContext = propagation.TraceContext{}

// StartTask opens a task's capsule.task span at start. traceparent is the
// W3C header the task arrived with ("" for none): a valid one puts the span
// under that remote parent, in the sender's trace, and links the session span
// to it; a malformed one is logged at debug level to otel.log and the span
// goes under the session span as if there were none.
func (s *Session) StartTask(line TaskStartLine, traceparent string, start time.Time) *Task {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if ended {
		return nil
	}
	parent := s.ctx
	var remote trace.SpanContext
	if traceparent != "" {
		ctx := traceContext.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			parent, remote = ctx, sc
		} else {
			s.log.Debug("traceparent is malformed; the task's span goes under the session span",
				"task_id", line.TaskID, "traceparent", traceparent)
		}
	}
	kind := trace.SpanKindInternal
	if remote.IsValid() {
		kind = trace.SpanKindConsumer
	}
	ctx, sp := s.tracer.Start(parent, SpanTask, trace.WithTimestamp(start), trace.WithSpanKind(kind),
		trace.WithAttributes(
			attribute.String("task_id", line.TaskID),
			attribute.String("context_id", line.ContextID),
			attribute.String("source", line.Source),
			attribute.String("origin", line.Origin),
			attribute.Int("message_bytes", line.MessageBytes),
		))
	if remote.IsValid() {
		// The task lives in the sender's trace; the link lets the session's
		// own trace lead there.
		s.root.AddLink(trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{
			attribute.String("task_id", line.TaskID),
		}})
	}
	t := &Task{s: s, id: line.TaskID, ctx: ctx, span: sp, start: start}
	s.mu.Lock()
	if s.ended { // the session ended meanwhile: nothing more is exported
		s.mu.Unlock()
		return nil
	}
	s.open[t] = struct{}{}
	s.mu.Unlock()
	return t
}

// child starts a span under the task, or reports false once the task ended.
func (t *Task) child(name string, kind trace.SpanKind, start time.Time, attrs ...attribute.KeyValue) (context.Context, trace.Span, bool) {
	return t.childUnder(t.ctx, name, kind, start, attrs...)
}

// childUnder starts a span under parent, a span within the task (a plan
// step's), or under the task itself when parent is nil.
func (t *Task) childUnder(parent context.Context, name string, kind trace.SpanKind, start time.Time, attrs ...attribute.KeyValue) (context.Context, trace.Span, bool) {
	t.mu.Lock()
	ended := t.ended
	t.mu.Unlock()
	if ended {
		return nil, nil, false
	}
	if parent == nil {
		parent = t.ctx
	}
	ctx, sp := t.s.tracer.Start(parent, name, trace.WithTimestamp(start), trace.WithSpanKind(kind),
		trace.WithAttributes(append(attrs, attribute.String("task_id", t.id))...))
	return ctx, sp, true
}

// Inference records one capsule.inference span, from start to end.
func (t *Task) Inference(line InferenceLine, start, end time.Time) {
	if t == nil {
		return
	}
	_, sp, ok := t.child(SpanInference, trace.SpanKindClient, start,
		attribute.Int("turn", line.Turn),
		attribute.String("model", line.Model),
		attribute.Int("input_tokens", line.InputTokens),
		attribute.Int("output_tokens", line.OutputTokens),
		attribute.String("stop_reason", line.StopReason),
		attribute.StringSlice("tool_calls", line.ToolCalls),
		attribute.Int64("duration_ms", end.Sub(start).Milliseconds()),
	)
	if !ok {
		return
	}
	if line.Err != "" {
		sp.SetStatus(codes.Error, line.Err)
	}
	sp.End(trace.WithTimestamp(end))
}

// ToolCall records one capsule.tool_call span, from start to end; a Status
// other than ok is the span's error status with Error as its description.
func (t *Task) ToolCall(line ToolCallLine, start, end time.Time) {
	if t != nil {
		t.under(t.ctx).ToolCall(line, start, end)
	}
}

// taskSpan is a task seen from a span within it: its call spans go under
// that span (a plan step's), or under the task when it is nil.
type taskSpan struct {
	t      *Task
	parent context.Context
}

// under is the task with its call spans under parent (nil: the task).
func (t *Task) under(parent context.Context) taskSpan { return taskSpan{t, parent} }

// ToolCall records one capsule.tool_call span, from start to end.
func (ts taskSpan) ToolCall(line ToolCallLine, start, end time.Time) {
	t := ts.t
	if t == nil {
		return
	}
	attrs, kind := toolCallAttrs(line, end.Sub(start).Milliseconds())
	_, sp, ok := t.childUnder(ts.parent, SpanToolCall, kind, start, attrs...)
	if !ok {
		return
	}
	endToolCall(sp, line, end)
}

// toolCallAttrs are a tool_call line's span attributes and the span's kind:
// an MCP call's is a client span with the OTel GenAI MCP names.
func toolCallAttrs(line ToolCallLine, durationMS int64) ([]attribute.KeyValue, trace.SpanKind) {
	attrs := []attribute.KeyValue{
		attribute.String("tool_name", line.ToolName),
		attribute.Int("turn", line.Turn),
		attribute.String("tool_call_id", line.ToolCallID),
		attribute.String("kind", line.Kind),
		attribute.Int("input_bytes", line.InputBytes),
		attribute.Int("output_bytes", line.OutputBytes),
		attribute.Int64("duration_ms", durationMS),
		attribute.String("status", line.Status),
	}
	if line.Error != "" {
		attrs = append(attrs, attribute.String("error", line.Error))
	}
	if line.Ending != "" {
		attrs = append(attrs, attribute.String("ending", line.Ending))
	}
	kind := trace.SpanKindInternal
	if line.Kind == "mcp" {
		kind = trace.SpanKindClient
		attrs = append(attrs, attribute.String("server", line.Server), attribute.String("mcp_tool", line.MCPTool),
			attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", line.MCPTool),
			attribute.String("network.transport", line.MCPTransport), attribute.String("mcp.protocol.version", line.MCPProtocol))
	}
	return attrs, kind
}

// endToolCall ends a tool_call span at end; a Status other than ok is its
// error status with Error as its description.
func endToolCall(sp trace.Span, line ToolCallLine, end time.Time) {
	if line.Status != "ok" {
		sp.SetStatus(codes.Error, line.Error)
	}
	sp.End(trace.WithTimestamp(end))
}

// CallDeniedLine is call_denied's fields.
type CallDeniedLine struct {
	ToolName, ToolCallID, Kind, By, Reason string
	Turn                                   int
	Binary, Hook, PlanID, StepID           *string
}

// CallDenied records one capsule.call_denied span: a call the policy gate
// stopped, from the first gate call (or the approval request) to the
// decision, with the line's fields and error status.
func (t *Task) CallDenied(line CallDeniedLine, start, end time.Time) {
	if t == nil {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.String("tool_name", line.ToolName),
		attribute.Int("turn", line.Turn),
		attribute.String("tool_call_id", line.ToolCallID),
		attribute.String("kind", line.Kind),
		attribute.String("by", line.By),
		attribute.String("reason", line.Reason),
		attribute.Int64("duration_ms", end.Sub(start).Milliseconds()),
	}
	for k, p := range map[string]*string{"binary": line.Binary, "hook": line.Hook, "plan_id": line.PlanID, "step_id": line.StepID} {
		if p != nil {
			attrs = append(attrs, attribute.String(k, *p))
		}
	}
	_, sp, ok := t.child(SpanCallDenied, trace.SpanKindInternal, start, attrs...)
	if !ok {
		return
	}
	sp.SetStatus(codes.Error, line.Reason)
	sp.End(trace.WithTimestamp(end))
}

// Approval records one capsule.approval span, from the request to the
// answer; error status unless the decision is approved.
func (t *Task) Approval(tool, callID, decision, reason string, start, end time.Time) {
	if t == nil {
		return
	}
	_, sp, ok := t.child(SpanApproval, trace.SpanKindInternal, start,
		attribute.String("tool_name", tool),
		attribute.String("tool_call_id", callID),
		attribute.String("decision", decision),
		attribute.Int64("waited_ms", end.Sub(start).Milliseconds()),
	)
	if !ok {
		return
	}
	if decision != "approved" {
		sp.SetStatus(codes.Error, reason)
	}
	sp.End(trace.WithTimestamp(end))
}

// Shell records one capsule.shell span, from start to end; a non-zero exit
// code is the span's error status.
func (t *Task) Shell(line ShellLine, start, end time.Time) {
	if t != nil {
		t.under(t.ctx).Shell(line, start, end)
	}
}

// Shell records one capsule.shell span, from start to end.
func (ts taskSpan) Shell(line ShellLine, start, end time.Time) {
	t := ts.t
	if t == nil {
		return
	}
	_, sp, ok := t.childUnder(ts.parent, SpanShell, trace.SpanKindInternal, start,
		attribute.Int("turn", line.Turn),
		attribute.String("tool_call_id", line.ToolCallID),
		attribute.String("binary", line.Binary),
		attribute.String("command", line.Command),
		attribute.Int("exit_code", line.ExitCode),
		attribute.Int("stdout_bytes", line.StdoutBytes),
		attribute.Int("stderr_bytes", line.StderrBytes),
		attribute.Int64("duration_ms", end.Sub(start).Milliseconds()),
		attribute.Bool("truncated", line.Truncated),
		attribute.String("log_path", line.LogPath),
	)
	if !ok {
		return
	}
	if line.ExitCode != 0 {
		sp.SetStatus(codes.Error, fmt.Sprintf("exit code %d", line.ExitCode))
	}
	sp.End(trace.WithTimestamp(end))
}

// StartDelegation opens a capsule.delegation span under the task at start.
// Its Traceparent is what the parent sends as the traceparent header of the
// task it delivers, so the child's capsule.task span lands under it and the
// whole delegation tree is one trace.
func (t *Task) StartDelegation(line DelegationStartLine, start time.Time) *Delegation {
	return t.startHandoff(SpanDelegation, trace.SpanKindProducer, start, delegationAttrs(line)...)
}

// StartMemberCall opens a capsule.member_call span under the task at start:
// the member's capsule.task span lands under it through its Traceparent.
// It is ended as a delegation's is (its outcome the call's status).
func (t *Task) StartMemberCall(callID, member string, start time.Time) *Delegation {
	return t.startHandoff(SpanMemberCall, trace.SpanKindClient, start,
		attribute.String("call_id", callID), attribute.String("member", member))
}

// startHandoff opens the span of work the task hands to another session,
// kept open in the task until its line ends it (or the task does).
func (t *Task) startHandoff(name string, kind trace.SpanKind, start time.Time, attrs ...attribute.KeyValue) *Delegation {
	if t == nil {
		return nil
	}
	ctx, sp, ok := t.child(name, kind, start, attrs...)
	if !ok {
		return nil
	}
	d := newDelegation(ctx, sp, start, func(d *Delegation) {
		t.mu.Lock()
		delete(t.open, d)
		t.mu.Unlock()
	})
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return nil
	}
	if t.open == nil {
		t.open = map[*Delegation]struct{}{}
	}
	t.open[d] = struct{}{}
	return d
}

// StartDelegation opens a capsule.delegation span under the session span,
// for a script capsule's delegate-task (a script has no tasks).
func (s *Session) StartDelegation(line DelegationStartLine, start time.Time) *Delegation {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if ended {
		return nil
	}
	ctx, sp := s.tracer.Start(s.ctx, SpanDelegation, trace.WithTimestamp(start),
		trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(delegationAttrs(line)...))
	d := newDelegation(ctx, sp, start, func(d *Delegation) {
		s.mu.Lock()
		delete(s.dlg, d)
		s.mu.Unlock()
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil
	}
	s.dlg[d] = struct{}{}
	return d
}

func delegationAttrs(line DelegationStartLine) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String("delegation_id", line.DelegationID),
		attribute.String("capsule", line.Capsule),
		attribute.String("version", line.Version),
	}
	if line.ChildSessionID != "" {
		attrs = append(attrs, attribute.String("child_session_id", line.ChildSessionID))
	}
	return attrs
}

func newDelegation(ctx context.Context, sp trace.Span, start time.Time, release func(*Delegation)) *Delegation {
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	return &Delegation{release: release, span: sp, tp: carrier.Get("traceparent"), start: start}
}

// Traceparent is the delegation span's W3C traceparent header value.
func (d *Delegation) Traceparent() string {
	if d == nil {
		return ""
	}
	return d.tp
}

// End closes the delegation span with the delegation line at end; an
// outcome other than ok is the span's error status. Only the first call
// counts.
func (d *Delegation) End(line DelegationLine, end time.Time) {
	if d == nil {
		return
	}
	d.once.Do(func() {
		d.release(d)
		if line.ChildSessionID != "" {
			d.span.SetAttributes(attribute.String("child_session_id", line.ChildSessionID))
		}
		d.span.SetAttributes(
			attribute.String("outcome", line.Outcome),
			attribute.Int64("duration_ms", end.Sub(d.start).Milliseconds()),
		)
		if line.Reason != "" {
			d.span.SetAttributes(attribute.String("reason", line.Reason))
		}
		if line.Outcome != "ok" && line.Outcome != "completed" { // a member call's ok is completed
			d.span.SetStatus(codes.Error, line.Outcome)
		}
		d.span.End(trace.WithTimestamp(end))
	})
}

// End closes the task span with the task_end line at end; an exit status
// other than ok is the span's error status. A delegation still open is ended
// first (outcome terminated). Only the first call counts; later calls on the
// task do nothing.
func (t *Task) End(line TaskEndLine, end time.Time) {
	if t == nil {
		return
	}
	t.s.ending.RLock()
	defer t.s.ending.RUnlock()
	if !t.finish(end) {
		return
	}
	t.span.SetAttributes(
		attribute.String("exit_status", line.ExitStatus),
		attribute.Int("turns", line.Turns),
		attribute.Int("input_tokens", line.InputTokens),
		attribute.Int("output_tokens", line.OutputTokens),
		attribute.Int("tool_calls", line.ToolCalls),
		attribute.Int("tool_errors", line.ToolErrors),
		attribute.Int("shell_calls", line.ShellCalls),
		attribute.Int("calls_denied", line.CallsDenied),
		attribute.Int64("duration_ms", end.Sub(t.start).Milliseconds()),
	)
	if line.ExitStatus != "ok" {
		t.span.SetStatus(codes.Error, line.ExitStatus)
	}
	t.span.End(trace.WithTimestamp(end))
}

// finish marks the task ended, ends its open delegations and drops it from
// the session's open set; false when it had already ended.
func (t *Task) finish(end time.Time) bool {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return false
	}
	t.ended = true
	open := t.open
	t.open = nil
	t.mu.Unlock()
	for d := range open {
		d.End(DelegationLine{Outcome: "terminated", Reason: "the delegating task ended first"}, end)
	}
	t.s.mu.Lock()
	delete(t.s.open, t)
	t.s.mu.Unlock()
	return true
}

// cutShort ends a task the session's end found still open.
func (t *Task) cutShort(end time.Time) {
	if !t.finish(end) {
		return
	}
	t.span.SetAttributes(attribute.Bool("cut_short", true))
	t.span.SetStatus(codes.Error, "the session ended before the task did")
	t.span.End(trace.WithTimestamp(end))
}
