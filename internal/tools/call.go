package tools

import (
	"context"
	"errors"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// Call is one tool call, by a script through murmur:tool-registry or by
// the model of an agent's task. Every call of every kind goes through
// Inventory.Call.
type Call struct {
	// Name is the name the caller gave (full or bare; clipped in lines).
	Name string
	// Entry is the tool when the caller resolved Name by rules of its own
	// (the model's tool names); nil looks Name up in the inventory.
	Entry Entry
	// Refused is the caller's own refusal, made before any tool runs (a
	// session that is over, input that is not a JSON object): the call's
	// line is written all the same, with it as the error.
	Refused error
	// Input is the tool's input record; a model's call carries its JSON
	// object in Data.
	Input wit.ToolInput
	// Recorder receives a script's tool_call line and any call_deadline
	// line; nil records none.
	Recorder Recorder
	// Task is set for a model's call, nil for a script's.
	Task *TaskCall
	// Argv is a plan shell step's words (Argv[0] the binary, the entry's
	// own): run as they are, never through a shell; Input is then unused.
	Argv []string
	// Line is the command line Argv was split from (the shell line's and
	// the log's command).
	Line string
}

// Recorder is where a script's call is recorded (*trace.Recorder is one).
type Recorder interface {
	ToolCall(tool string, start time.Time, inBytes, outBytes int, errText string)
	DeadlineRecorder
}

// TaskCall is where a model's call belongs and what it may use of its task.
type TaskCall struct {
	TaskID, ContextID, TraceParent string
	Turn                           int
	// ID is the driver's tool_call id.
	ID string
	// ParentID is the event_id of the turn's inference line: the call's
	// line goes under it.
	ParentID string
	// Lines writes the call's tool_call or shell line.
	Lines interface {
		EmitUnder(parent string, ev any) string
	}
	// Hooks fires on-tool-call and on-shell (nil: none).
	Hooks CallHooks
	// Chunks receives a component tool's murmur:text/chunks; nil logs them.
	Chunks func(ctx context.Context, text string, thinking bool) error
	// RequestInput asks the task's sender (INPUT_REQUIRED); nil refuses.
	RequestInput func(ctx context.Context, prompt string) (string, error)
	// InFlight is told the task's delegations still running after a call
	// that started one (nil: nobody asks).
	InFlight func(delegationIDs []string)
	// MemberCalls is told the task's call-member calls outstanding after a
	// call that started one (nil: nobody asks).
	MemberCalls func(callIDs []string)
	// Approve asks the task's operator about a call whose tool requires
	// approval (INPUT_REQUIRED) and waits for the answer; nil refuses.
	Approve func(ctx context.Context, a Approval) Answer
	// Plan marks a plan step's attempt: its line carries plan_id, step_id
	// and attempt (nil for a model's own call).
	Plan *trace.PlanCall
	// Phase tells the task's stream what it is doing (nil: nobody asks).
	Phase func(phase string)
	// Status posts a WORKING status message on the task's stream (nil: none).
	Status func(text string)
}

// CallHooks are the lifecycle hooks a model's call fires once its line is
// written.
type CallHooks interface {
	OnToolCall(ctx context.Context, c *TaskCall, line trace.AgentToolCall)
	OnShell(ctx context.Context, c *TaskCall, r ShellResult)
}

// Outcome is what one tool did.
type Outcome struct {
	// Result is the tool's result record: what a script gets.
	Result wit.ToolResult
	// Text is what the model sees of a call that succeeded.
	Text string
	// Err is a call that failed; its text is the error both callers see.
	Err error
	// Verbatim gives the model Err's text as it is, not after "error: "
	// (delegate-task's refusals are the daemon's sentence, verbatim).
	Verbatim bool
	// Ending is a component call's ending ("" for none).
	Ending string
	// Shell is a shell command that ran: its shell line is the call's line.
	Shell *ShellResult
	// Denied is who stopped a call the gate did not let through
	// (trace.DeniedBy*): it ran nothing, its line is call_denied and Text is
	// the diagnostic the model is told.
	Denied string
	// Canceled is a call whose wait for the operator the task's cancel
	// ended: it ran nothing and wrote no line.
	Canceled bool
	// Report, when set on a failed call, is the whole text the model sees
	// in place of Err's (a plan's report); the line's error stays Err's.
	Report string
	// Nested counts the calls this one made on the task's behalf (a plan's
	// tool and shell steps), for the task's totals.
	Nested Counts
	// MCP names an MCP call's server and tool (nil for other kinds).
	MCP *MCPCall
	// StateStore is the state store the call's component saw ("" for none).
	StateStore string
}

// Counts are calls as a task's totals count them.
type Counts struct {
	ToolCalls, ToolErrors, ShellCalls int
	// CallsDenied counts the calls the gate stopped (their call_denied
	// lines); they count in nothing else.
	CallsDenied int
}

// stateRecorder is a Recorder that also records which state store a
// script's call saw (*trace.Recorder is one).
type stateRecorder interface {
	ToolCallState(tool, store string, start time.Time, inBytes, outBytes int, errText string)
}

// notForScripts is an entry's refusal of a script's call: the script named
// a tool murmur:tool-registry cannot invoke, so its line names what the
// script asked for, as for a name that is not declared.
type notForScripts struct{ error }

func refuseScript(e Entry, name string) Outcome {
	return Outcome{Err: notForScripts{diag.New("E-RUN-062", "tool %q is the %s %s, which murmur:tool-registry cannot invoke: it runs tool components", Clip(name), e.Kind(), e.Name()).
		WithHint("declare a tool artifact (runtime: tool) instead")}}
}

// Call is the one way any tool is called: it finds the entry, asks the
// policy gate about a model's call (gate.go: the call's own checks, the
// policy hooks, the operator), runs the entry's own Call, writes the call's
// one line (tool_call, or shell for a command that ran) and fires
// on-tool-call or on-shell. No call reaches a tool another way.
func (inv *Inventory) Call(ctx context.Context, c Call) Outcome {
	start := time.Now()
	e, err := c.Entry, c.Refused
	if e == nil && err == nil {
		e, err = inv.Lookup(c.Name)
	}
	if c.Task != nil && c.Task.RequestInput != nil && inv.gate.InputTimeout > 0 {
		c.Task = boundInput(c.Task, inv.gate.InputTimeout)
	}
	var out Outcome
	switch {
	case err != nil:
		out.Err = err
	case c.Task != nil && inv.gated(e) && (c.Task.Plan == nil || c.Task.Plan.Attempt <= 1):
		// The gate: the call's own checks, the policy hooks, the operator.
		// A plan step is gated once, before its first attempt: a retry
		// (which only follows an attempt that passed) is not asked again.
		o, stopped := inv.gateCall(ctx, e, &c)
		switch {
		case stopped:
			return *o // its call_denied line is written; nothing ran
		case o != nil:
			out = *o
		default:
			out = e.Call(ctx, &c)
		}
	default:
		out = e.Call(ctx, &c)
	}
	label, kind := Clip(c.Name), ""
	var nf notForScripts
	if errors.As(out.Err, &nf) {
		out.Err = nf.error
	} else if e != nil {
		label, kind = e.Name(), e.Kind()
	}
	if c.Task == nil {
		if sr, ok := c.Recorder.(stateRecorder); ok && out.StateStore != "" {
			sr.ToolCallState(label, out.StateStore, start, inputBytes(c.Input), outputBytes(out), errText(out.Err))
		} else if c.Recorder != nil {
			c.Recorder.ToolCall(label, start, inputBytes(c.Input), outputBytes(out), errText(out.Err))
		}
		return out
	}
	inv.taskLine(ctx, c.Task, label, kind, start, len(dataOf(c.Input)), &out)
	return out
}

// taskLine writes a model's call's line (the recorder mirrors it as a
// span) and fires its hook. out.Text becomes the whole text the model is given.
func (inv *Inventory) taskLine(ctx context.Context, t *TaskCall, label, kind string, start time.Time, inBytes int, out *Outcome) {
	if sh := out.Shell; sh != nil && out.Err == nil {
		if t.Plan != nil {
			sh.Line.PlanCall = *t.Plan
		}
		t.Lines.EmitUnder(t.ParentID, sh.Line)
		if t.Hooks != nil {
			t.Hooks.OnShell(ctx, t, *sh)
		}
		out.Text = sh.Text
		return
	}
	line := trace.AgentToolCall{TaskID: t.TaskID, Turn: t.Turn, ToolCallID: t.ID, Kind: kind, Ending: out.Ending}
	line.ToolName, line.InputBytes = label, inBytes
	line.StateStore = out.StateStore
	if t.Plan != nil {
		line.PlanCall = *t.Plan
	}
	if out.MCP != nil {
		line.Server, line.MCPTool = out.MCP.Server, out.MCP.Tool
		line.MCPTransport, line.MCPProtocol = out.MCP.Transport, out.MCP.Protocol
	}
	line.Status = "ok"
	if out.Err != nil {
		msg := out.Err.Error()
		line.Status, line.Error = "error", &msg
		out.Text = "error: " + msg
		if out.Verbatim {
			out.Text = msg
		}
		if out.Report != "" {
			out.Text = out.Report
		}
	}
	line.OutputBytes = len(out.Text)
	line.DurationMS = time.Since(start).Milliseconds()
	t.Lines.EmitUnder(t.ParentID, line)
	if t.Hooks != nil {
		t.Hooks.OnToolCall(ctx, t, line)
	}
}

// inputBytes and outputBytes measure a script's call by its payload: the
// data strings (what a tool consumes and produces), not the record fields.
func inputBytes(in wit.ToolInput) int { return len(dataOf(in)) }

func outputBytes(o Outcome) int {
	if o.Err != nil || o.Result.Data == nil {
		return 0
	}
	return len(*o.Result.Data)
}

func dataOf(in wit.ToolInput) string {
	if in.Data == nil {
		return ""
	}
	return *in.Data
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
