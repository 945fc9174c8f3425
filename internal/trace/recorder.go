package trace

import (
	"log/slog"
	"sync"
	"time"
)

// SpanSink mirrors a session's lines as OpenTelemetry spans: spans come
// from the trace, so no caller writes an event twice. internal/telemetry
// implements it and is the one place that says which line becomes which
// span. The recorder hands it every line it writes, in the order written;
// it never waits on it beyond the call itself (a span exporter batches).
type SpanSink interface {
	// Line is one line just written.
	Line(l Emitted)
	// OpenDelegation opens the span of a delegation about to start, under
	// the span of the line parent ("" for the session's), and returns its
	// W3C traceparent ("" for none): the child's task is sent with it, so
	// the child's spans join the parent's trace. The delegation line
	// closes it.
	OpenDelegation(parent string, d DelegationStart, at time.Time) string
	// OpenToolCall opens the span of a tool call about to be sent (an MCP
	// call's), where the call's line under the line parent would put it,
	// and returns its W3C traceparent ("" for none): the call carries it,
	// so the server's spans join under the call. The tool_call line with
	// the same parent and tool_call_id closes it.
	OpenToolCall(parent, toolCallID string, at time.Time) string
	// OpenMemberCall opens the capsule.member_call span of a call-member
	// call about to be offered, under the task of the line parent, and
	// returns its traceparent ("" for none): the member's task span joins
	// under it. The member_call line with the same call_id closes it.
	OpenMemberCall(parent, callID, member string, at time.Time) string
	// End closes the session span.
	End(exitStatus, reason string, end time.Time)
}

// EnvCollector is Murmur's own variable naming an OpenTelemetry collector's
// base URL for the runtime (a container's, a pod's): read by mur's span
// export (internal/telemetry), handed on to a delegated child's mur, never
// to a capsule's code. The manifest's observability.otel_endpoint wins
// over it.
const EnvCollector = "MURMUR_OTEL_ENDPOINT"

// SpanExport is what a session's span export starts with.
type SpanExport struct {
	// Endpoint is observability.otel_endpoint.
	Endpoint                                     string
	SessionID, CapsuleName, CapsuleVersion, Kind string
	// FormationID is the session's formation ("" for none): the session
	// span's murmur.formation_id.
	FormationID string
	// LogPath is the session's logs/otel.log.
	LogPath string
	Started time.Time
}

// Emitted is one line as the recorder wrote it.
type Emitted struct {
	EventID string
	// ParentID is the parent line's event_id; "" is session_start.
	ParentID string
	Event    any
	At       time.Time
}

// Recorder is the one sink of a session's events: every kind of capsule and
// every host interface records through it, so the session_end totals always
// equal the lines written. It is sealed by End: once session_end is written,
// any later event is refused (counted, and logged once), so a tool call that
// returns after the session ended can never follow session_end in the trace.
//
// Counting and emitting happen under one lock, in that order, so the totals
// in session_end cover exactly the lines before it. It is safe for
// concurrent use.
type Recorder struct {
	tw      *Writer
	spans   SpanSink // nil when observability.otel_endpoint is unset
	started time.Time
	log     *slog.Logger

	mu         sync.Mutex
	toolCalls  int
	toolErrors int
	agent      agentTotals
	ended      bool
	refused    int
}

// agentTotals are the sums of the task_end lines written so far.
type agentTotals struct {
	tasks, turns, inTok, outTok, toolCalls, toolErrors, shellCalls int
	callsDenied                                                    int
	lastNotOK                                                      string
}

func (a *agentTotals) add(e TaskEnd) {
	a.tasks++
	a.turns += e.Turns
	a.inTok += e.InputTokens
	a.outTok += e.OutputTokens
	a.toolCalls += e.ToolCalls
	a.toolErrors += e.ToolErrors
	a.shellCalls += e.ShellCalls
	a.callsDenied += e.CallsDenied
	if e.ExitStatus != EndOK && e.ExitStatus != EndNoAnswer {
		a.lastNotOK = e.ExitStatus
	}
}

// NewRecorder records into tw, and into spans when it is not nil, for a
// session that started at started. log receives the one line about refused
// late events; nil is slog.Default().
func NewRecorder(tw *Writer, spans SpanSink, started time.Time, log *slog.Logger) *Recorder {
	if log == nil {
		log = slog.Default()
	}
	return &Recorder{tw: tw, spans: spans, started: started, log: log}
}

// Trace is the session's trace writer.
func (r *Recorder) Trace() *Writer { return r.tw }

// emitLocked writes ev unless the session has ended; r.mu is held. It
// returns the line's event_id, or "" for a refused event.
func (r *Recorder) emitLocked(parent string, ev any) string {
	if r.ended {
		r.refused++
		if r.refused == 1 {
			t, _ := typeOf(ev)
			r.log.Warn("an event arrived after session_end and was not recorded", "event_type", t, "session_id", r.tw.SessionID())
		}
		return ""
	}
	switch e := ev.(type) {
	case TaskEnd:
		r.agent.add(e)
	case *TaskEnd:
		r.agent.add(*e)
	case HookCall:
		// A hook's run-inference tokens count in the session's totals, not
		// in a task's.
		r.agent.inTok += e.InputTokens
		r.agent.outTok += e.OutputTokens
	}
	id := r.tw.EmitUnder(parent, ev)
	if r.spans != nil {
		r.spans.Line(Emitted{EventID: id, ParentID: parent, Event: ev, At: time.Now()})
	}
	return id
}

// Emit records one event under session_start (or, for session_start, as the
// root) and returns its event_id; "" when the session has already ended.
func (r *Recorder) Emit(ev any) string { return r.EmitUnder("", ev) }

// EmitUnder records one event whose parent is the line parent ("" means
// session_start). session_end cannot be written this way: End writes it.
func (r *Recorder) EmitUnder(parent string, ev any) string {
	switch ev.(type) {
	case SessionEnd, *SessionEnd, AgentSessionEnd, *AgentSessionEnd:
		panic("trace: session_end is written by Recorder.End or EndAgent")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.emitLocked(parent, ev)
}

// ToolCall records one tool call that began at start and has just returned.
// errText is "" for a call that succeeded.
func (r *Recorder) ToolCall(tool string, start time.Time, inBytes, outBytes int, errText string) {
	r.ToolCallState(tool, "", start, inBytes, outBytes, errText)
}

// ToolCallState is ToolCall for a call whose component saw the state store
// store ("" for none: the line then has no state_store).
func (r *Recorder) ToolCallState(tool, store string, start time.Time, inBytes, outBytes int, errText string) {
	end := time.Now()
	status := "ok"
	var errp *string
	if errText != "" {
		status = "error"
		errp = &errText
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.emitLocked("", ToolCall{ToolName: tool, InputBytes: inBytes, OutputBytes: outBytes,
		DurationMS: end.Sub(start).Milliseconds(), Status: status, Error: errp, StateStore: store}) == "" {
		return
	}
	r.toolCalls++
	if errText != "" {
		r.toolErrors++
	}
}

// OpenDelegation opens a delegation's span under the line parent's ("" for
// the session's) and returns its traceparent; "" without spans or once the
// session has ended.
func (r *Recorder) OpenDelegation(parent string, d DelegationStart) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.spans == nil || r.ended {
		return ""
	}
	return r.spans.OpenDelegation(parent, d, time.Now())
}

// OpenToolCall opens the span of a model's tool call about to be sent,
// whose line will go under the line parent with toolCallID, and returns its
// traceparent; "" without spans or once the session has ended.
func (r *Recorder) OpenToolCall(parent, toolCallID string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.spans == nil || r.ended {
		return ""
	}
	return r.spans.OpenToolCall(parent, toolCallID, time.Now())
}

// OpenMemberCall opens a call-member call's span under the task of the
// line parent and returns its traceparent; "" without spans or once the
// session has ended.
func (r *Recorder) OpenMemberCall(parent, callID, member string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.spans == nil || r.ended {
		return ""
	}
	return r.spans.OpenMemberCall(parent, callID, member, time.Now())
}

// ArtifactPulled records one pull through murmur:artifact-manager.
func (r *Recorder) ArtifactPulled(ev ArtifactPulled) { r.Emit(ev) }

// A2ASend records one murmur:message/send.
func (r *Recorder) A2ASend(ev A2ASend) { r.Emit(ev) }

// CallDeadline records a component call stopped while waiting on the runtime.
func (r *Recorder) CallDeadline(component, call string, deadline time.Duration) {
	r.Emit(CallDeadline{Component: component, Call: call, DeadlineMS: deadline.Milliseconds()})
}

// Totals returns the tool calls and tool errors recorded so far.
func (r *Recorder) Totals() (calls, errors int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.toolCalls, r.toolErrors
}

// Refused is how many events arrived after session_end.
func (r *Recorder) Refused() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused
}

// Ended reports whether session_end has been written.
func (r *Recorder) Ended() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ended
}

// End writes session_end once, seals the recorder, and ends the session
// span. It reports whether this call was the one that ended the session.
// flush waits (bounded by the exporter's shutdown timeout) for spans to
// reach the collector; a hard exit passes false.
func (r *Recorder) End(status, reason string, flush bool) bool {
	return r.end(status, reason, flush, func(base SessionEnd) any {
		base.ToolCalls, base.ToolErrors = r.toolCalls, r.toolErrors
		return base
	})
}

// end writes the session_end line line builds (under the lock) once, seals
// the recorder, then ends the session span.
func (r *Recorder) end(status, reason string, flush bool, line func(SessionEnd) any) bool {
	end := time.Now()
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return false
	}
	var rp *string
	if reason != "" {
		rp = &reason
	}
	r.tw.Emit(line(SessionEnd{ExitStatus: status, Reason: rp, DurationMS: end.Sub(r.started).Milliseconds()}))
	r.ended = true
	r.mu.Unlock()
	if flush && r.spans != nil {
		r.spans.End(status, reason, end)
	}
	return true
}

// LastTaskNotOK is the exit_status of the last task that did not end ok, ""
// when every task so far ended ok: an agent session's exit_status.
func (r *Recorder) LastTaskNotOK() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.agent.lastNotOK
}

// EndAgent is End for an agent session: its session_end carries the sums
// of the task_end lines written before it.
func (r *Recorder) EndAgent(status, reason string, flush bool) bool {
	return r.end(status, reason, flush, func(base SessionEnd) any {
		a := r.agent
		base.ToolCalls, base.ToolErrors = a.toolCalls, a.toolErrors
		return AgentSessionEnd{SessionEnd: base, Tasks: a.tasks, TotalTurns: a.turns,
			InputTokens: a.inTok, OutputTokens: a.outTok, ShellCalls: a.shellCalls, CallsDenied: a.callsDenied}
	})
}

// AgentTotals are an agent session's totals so far: the sums of its
// task_end lines, with hooks' tokens.
type AgentTotals struct {
	Tasks, Turns, InputTokens, OutputTokens, ToolCalls, ToolErrors, ShellCalls int
}

// AgentTotals returns the totals session_end would carry now.
func (r *Recorder) AgentTotals() AgentTotals {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.agent
	return AgentTotals{Tasks: a.tasks, Turns: a.turns, InputTokens: a.inTok, OutputTokens: a.outTok,
		ToolCalls: a.toolCalls, ToolErrors: a.toolErrors, ShellCalls: a.shellCalls}
}

// HookCall records one hook_call line (the hooks dispatcher's recorder).
func (r *Recorder) HookCall(c HookCall) { r.Emit(c) }
