package door

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/murmur-go/murmur/internal/door/doorapi"
)

// Origin says who sent a task, from the request header x-murmur-task-origin
// (doorapi.HeaderOrigin). It is passed to the task unchanged.
type Origin = doorapi.Origin

// The origins a request may carry; a request without the header is OriginUser.
const (
	OriginUser       = doorapi.OriginUser
	OriginDelegation = doorapi.OriginDelegation
	OriginCompletion = doorapi.OriginCompletion
	OriginPeer       = doorapi.OriginPeer
)

// Source says how a task reached the session: the --task file or a door message.
type Source string

// Sources of a task (the task_start line's source field).
const (
	SourceTaskMD Source = "task_md"
	SourceA2A    Source = "a2a"
)

// Phase is what a live task is doing; it is the task_canceled line's phase
// when the task is cancelled.
type Phase string

// Phases a task passes through. A task is PhaseQueued until it starts; the
// runner reports the others through Events.Phase.
const (
	PhaseQueued    Phase = "queued"
	PhaseInference Phase = "inference"
	PhaseTool      Phase = "tool"
	PhaseInput     Phase = "input"
	PhaseWaiting   Phase = "waiting"
)

// Part is one part of a message the door accepted: exactly one of Text or
// Data (the data part's JSON value) is set. File parts never reach a runner:
// the door answers them -32005.
type Part struct {
	Text string
	Data json.RawMessage
}

// Task is what a Runner is given: the task's identity, who sent it and how,
// and its first message.
type Task struct {
	ID          string // tsk_ + 32 hex
	ContextID   string // ctx_ + 32 hex, or the context the message named
	MessageID   string
	Origin      Origin
	Source      Source
	Parts       []Part
	TraceParent string // the request's traceparent header, "" when none
	// MessageBytes is the size of the message's parts as the door received
	// them (text bytes plus data JSON bytes): task_start.message_bytes.
	MessageBytes int
	// Caller is the formation member whose token submitted the task ("" for
	// a task not sent under a formation token).
	Caller string
}

// Text returns the task's text parts joined by blank lines, data parts
// skipped. The loop renders data parts itself.
func (t *Task) Text() string {
	var texts []string
	for _, p := range t.Parts {
		if p.Data == nil {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n\n")
}

// Reply is the answer to Events.RequestInput: the parts of the message that
// named the INPUT_REQUIRED task.
type Reply struct {
	MessageID string
	Parts     []Part
}

// Events is how a running task talks to the door. Every method is safe to
// call from any goroutine; after the task has ended (cancelled, say) calls
// are ignored and RequestInput returns an error.
type Events interface {
	// AppendText streams a chunk of the answer into the `response` artifact.
	AppendText(chunk string)
	// ToolResult adds an artifact update for one tool call's result: an
	// artifact named after the tool whose one part is text, or data when
	// data is non-nil.
	ToolResult(toolCallID, tool, text string, data json.RawMessage)
	// Status posts a TASK_STATE_WORKING status update whose message is text
	// (the waiting messages of the delegation path, for one).
	Status(text string)
	// RequestInput puts the task in TASK_STATE_INPUT_REQUIRED with prompt as
	// the status message and waits for a SendMessage naming the task, or for
	// ctx to end.
	RequestInput(ctx context.Context, prompt string) (Reply, error)
	// Phase records what the task is doing now, for a cancel's phase.
	Phase(p Phase)
	// Delegations records the delegations in flight, for a cancel's residue.
	Delegations(ids []string)
	// MemberCalls records the call-member calls outstanding, for a cancel's
	// residue.
	MemberCalls(ids []string)
}

// Runner runs one task to its end; the inference loop implements it. ctx is
// cancelled when the task is (CancelTask, wind-down), and RunTask should then
// return Canceled() promptly: the door has already answered the cancel.
type Runner interface {
	RunTask(ctx context.Context, t *Task, ev Events) Outcome
}

// RunnerFunc adapts a function to Runner.
type RunnerFunc func(ctx context.Context, t *Task, ev Events) Outcome

// RunTask calls f.
func (f RunnerFunc) RunTask(ctx context.Context, t *Task, ev Events) Outcome { return f(ctx, t, ev) }

// Outcome is how a task ended: with an answer, failed with a reason, or
// cancelled. Make one with Answer, Failed or Canceled.
type Outcome struct {
	kind outcomeKind
	text string
}

type outcomeKind int

const (
	outcomeAnswer outcomeKind = iota
	outcomeFailed
	outcomeCanceled
)

// Answer is a task that completed: text is the final assistant text, the
// task's `response` artifact and final status message.
func Answer(text string) Outcome { return Outcome{kind: outcomeAnswer, text: text} }

// Failed is a task that failed; reason (max_turns_reached,
// spend_ceiling_reached, the driver's error…) is its final status message.
func Failed(reason string) Outcome { return Outcome{kind: outcomeFailed, text: reason} }

// Text is the outcome's answer or failure reason ("" for a cancel).
func (o Outcome) Text() string { return o.text }

// Canceled is a task that stopped because its ctx was cancelled.
func Canceled() Outcome { return Outcome{kind: outcomeCanceled} }

// Recorder receives the door's trace lines; the session wires it to the
// trace. Calls come from request goroutines and must be safe concurrently.
type Recorder interface {
	// TaskReceived is a2a_task_received, for every accepted message.
	TaskReceived(taskID, contextID, messageID string, origin Origin)
	// TaskRejected is task_rejected; reason is the status message.
	TaskRejected(taskID, reason string)
	// TaskCanceled is task_canceled: the phase the task was in and what was
	// in flight when it was cancelled.
	TaskCanceled(taskID string, phase Phase, residue Residue)
}

// Residue is what a cancelled task left in flight: its delegations and its
// outstanding call-member calls.
type Residue struct {
	Delegations []string
	MemberCalls []string
}

// CallerRecorder is a Recorder that also records which formation member
// sent a task admitted on a formation token (a2a_task_received.caller_member).
type CallerRecorder interface {
	TaskReceivedFrom(taskID, contextID, messageID string, origin Origin, caller string)
}

// Completion is a request classified completion by x-murmur-task-origin.
type Completion struct {
	Session      string          // x-murmur-completion-session
	DelegationID string          // x-murmur-delegation-id
	Method       string          // the JSON-RPC method
	Params       json.RawMessage // the JSON-RPC params, unread
}

// CompletionHandler answers completions (the completion path of
// docs/delegation.md); the delegation runtime implements it. The result is marshalled as
// the JSON-RPC result; an error that is an *RPCError is sent as is, any other
// as -32603.
type CompletionHandler interface {
	HandleCompletion(ctx context.Context, c *Completion) (any, error)
}
