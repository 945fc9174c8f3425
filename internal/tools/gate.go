package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// The policy gate (docs/policy.md). Inventory.Call asks it about every call
// of a model's task, of every kind, once the call has passed its own checks
// and before it runs: first the session's policy hooks, in manifest order,
// then the operator when the manifest marks the tool approval: required.
// A call either stops runs nothing: no tool_call or shell line, no process,
// no on-tool-call or on-shell; one call_denied line instead, and the model
// is told E-RUN-092 or E-RUN-093. Inventory.Gate is the same gate for a call
// that is no inventory entry's (a plan's capsule step, asked as
// delegate-task). With no policy hook and no approval key nothing is asked.

// Policy is the session's policy hooks, as the gate asks them (the hooks
// dispatcher, through the launch's adapter).
type Policy interface {
	// CheckCall asks the policy hooks about one call; denied is true when
	// one did not allow it, hook names it and reason is the <why>.
	CheckCall(ctx context.Context, r wit.CallRequest) (denied bool, hook, reason string)
}

// GateConfig is what the gate asks.
type GateConfig struct {
	// Policy is nil when the capsule has no policy hook.
	Policy Policy
	// Approval holds the names (an entry's Name, or delegate-task) whose
	// calls wait for an operator's approval.
	Approval map[string]bool
	// InputTimeout is lifecycle.input_timeout_secs; 0 waits as long as the
	// task lives.
	InputTimeout time.Duration
}

// SetGate installs the gate. Call it before the first call; the inventory
// is read-only afterwards.
func (inv *Inventory) SetGate(g GateConfig) { inv.gate = g }

// NeedsApproval reports whether calls of the named tool wait for an
// operator.
func (inv *Inventory) NeedsApproval(name string) bool { return inv.gate.Approval[name] }

// Checker is an entry whose own input checks (the first of the gate's
// order: the call itself) can run before the gate asks anyone. It returns
// what the gate shows of the call, or the call's refusal, which is the
// call's result as if it had run (a tool_call line, counted in tool_errors).
// An entry that is not a Checker is shown with its input as it is.
type Checker interface {
	CheckCall(ctx context.Context, c *Call) (GateView, *Outcome)
}

// GateView is what the gate shows of a call.
type GateView struct {
	// Input is the call's input as compact JSON; "" takes the call's own.
	Input string
	// Binary and Argv are a shell call's resolved path and exact argv.
	Binary *string
	Argv   []string
}

// GateRequest is one call as the gate is asked about it.
type GateRequest struct {
	// Name is the tools: key the call answers to: an entry's Name, a shell
	// tool's binary, or delegate-task.
	Name string
	// ToolName is the model's name for the tool (delegate-task for a
	// capsule step).
	ToolName string
	// Kind is KindWASM, KindSkill, KindShell, KindRuntime or KindMCP.
	Kind string
	GateView
	// ToolCallID is the call's id; "" is the task call's.
	ToolCallID string
	// PlanID and StepID are set for a plan's steps (their lines go under
	// ParentID, the step's plan_step_start; "" is the turn's inference line).
	PlanID, StepID *string
	ParentID       string
}

// Stopped is a call the gate did not let through.
type Stopped struct {
	// By is trace.DeniedByHook, DeniedByOperator or DeniedByTimeout; ""
	// for a wait the task's cancel ended, which writes no line.
	By string
	// Err is the diagnostic the model is told (E-RUN-092 or E-RUN-093), or
	// the cancel's error.
	Err error
}

// Approval is a question to a task's operator about one call.
type Approval struct {
	ToolName, Kind, ToolCallID string
	PlanID, StepID             *string
	// Input is the call's input as compact JSON.
	Input string
	Argv  []string
	// Timeout is lifecycle.input_timeout_secs (0: none).
	Timeout time.Duration
}

// Answer is the operator's reply to an Approval.
type Answer struct {
	// Approved is a reply of exactly "approve".
	Approved bool
	// Reason is a refusal's reason ("" for none given).
	Reason string
	// NotApprove is the reply when it was neither approve nor deny: the
	// reason then says so.
	NotApprove bool
	// TimedOut is no reply within Timeout.
	TimedOut bool
	// MessageID is the reply's message id.
	MessageID string
	// Err is a wait that ended otherwise (the task was cancelled).
	Err error
}

// gated reports whether a call of e asks the gate anything: false for
// every call of a session with no policy hook and no approval key.
func (inv *Inventory) gated(e Entry) bool {
	return inv.gate.Policy != nil || inv.gate.Approval[e.Name()]
}

// gateCall is the gate's order for an entry's call: its own checks, then
// the gate. It returns the outcome to give back when the call does not run.
func (inv *Inventory) gateCall(ctx context.Context, e Entry, c *Call) (*Outcome, bool) {
	var view GateView
	if ch, ok := e.(Checker); ok {
		v, refused := ch.CheckCall(ctx, c)
		if refused != nil {
			return refused, false // the call itself: its line is written as any call's
		}
		view = v
	}
	if view.Input == "" {
		view.Input = compactJSON(dataOf(c.Input))
	}
	s := inv.Gate(ctx, c.Task, GateRequest{Name: e.Name(), ToolName: Clip(c.Name), Kind: e.Kind(), GateView: view})
	if s == nil {
		return nil, false
	}
	out := &Outcome{Err: s.Err, Denied: s.By, Canceled: s.By == ""}
	if s.By != "" {
		out.Text = s.Err.Error()
	}
	return out, true
}

// Gate asks the policy hooks, then the operator when r.Name requires
// approval, about one call of task t; nil lets it run. A stopped call has
// its call_denied line written here (none for a cancelled wait), and the
// caller runs nothing of it. This is the one gate: Inventory.Call asks it
// for every entry; a call that is no entry's (a plan's capsule step, asked
// as delegate-task) asks it directly.
func (inv *Inventory) Gate(ctx context.Context, t *TaskCall, r GateRequest) *Stopped {
	needs := inv.gate.Approval[r.Name]
	if inv.gate.Policy == nil && !needs || t == nil {
		return nil
	}
	if r.ToolCallID == "" {
		r.ToolCallID = t.ID
	}
	if r.ParentID == "" {
		r.ParentID = t.ParentID
	}
	// A plan step's tool or shell call: the hooks and its lines name the
	// plan and the step, as a capsule step's request does.
	if p := t.Plan; p != nil && r.PlanID == nil {
		planID, stepID := p.PlanID, p.StepID
		r.PlanID, r.StepID = &planID, &stepID
	}
	if r.Input == "" {
		r.Input = "null"
	}
	start := time.Now()
	if p := inv.gate.Policy; p != nil {
		denied, hook, why := p.CheckCall(ctx, wit.CallRequest{TaskID: t.TaskID, Turn: uint32(t.Turn), ToolCallID: r.ToolCallID,
			ToolName: r.ToolName, Kind: r.Kind, Input: r.Input, Binary: r.Binary, Argv: r.Argv, PlanID: r.PlanID, StepID: r.StepID})
		if denied {
			inv.denied(t, r, trace.DeniedByHook, &hook, why, start)
			return &Stopped{By: trace.DeniedByHook, Err: diag.New("E-RUN-092", "%s was not run: %s", r.ToolName, why)}
		}
	}
	if !needs {
		return nil
	}
	return inv.approve(ctx, t, r)
}

// approve asks the task's operator and waits for the answer.
func (inv *Inventory) approve(ctx context.Context, t *TaskCall, r GateRequest) *Stopped {
	timeout := inv.gate.InputTimeout
	var secs *int
	if timeout > 0 {
		n := int(timeout / time.Second)
		secs = &n
	}
	start := time.Now()
	t.Lines.EmitUnder(r.ParentID, trace.ApprovalRequested{TaskID: t.TaskID, Turn: t.Turn, ToolCallID: r.ToolCallID,
		ToolName: r.ToolName, Kind: r.Kind, InputBytes: len(r.Input), TimeoutSecs: secs, PlanID: r.PlanID, StepID: r.StepID})
	var a Answer
	if t.Approve == nil {
		a = Answer{NotApprove: true, Reason: "there is no operator to ask: the call belongs to no door's task"}
	} else {
		a = t.Approve(ctx, Approval{ToolName: r.ToolName, Kind: r.Kind, ToolCallID: r.ToolCallID, PlanID: r.PlanID,
			StepID: r.StepID, Input: r.Input, Argv: r.Argv, Timeout: timeout})
	}
	switch {
	case a.Err != nil:
		return &Stopped{Err: a.Err} // cancelled: no call_denied
	case a.Approved:
		t.Lines.EmitUnder(r.ParentID, trace.CallApproved{TaskID: t.TaskID, ToolCallID: r.ToolCallID, ToolName: r.ToolName,
			WaitedMS: time.Since(start).Milliseconds(), MessageID: a.MessageID, PlanID: r.PlanID, StepID: r.StepID})
		return nil
	case a.TimedOut:
		why := fmt.Sprintf("no operator answered within lifecycle.input_timeout_secs (%ds)", int(timeout/time.Second))
		inv.denied(t, r, trace.DeniedByTimeout, nil, why, start)
		return &Stopped{By: trace.DeniedByTimeout, Err: diag.New("E-RUN-093", "%s was not run: %s", r.ToolName, why)}
	}
	why := "the operator denied it"
	switch {
	case a.NotApprove:
		why = a.Reason
	case strings.TrimSpace(a.Reason) != "":
		why += ": " + cutBytes(a.Reason, 1<<10)
	}
	inv.denied(t, r, trace.DeniedByOperator, nil, why, start)
	return &Stopped{By: trace.DeniedByOperator, Err: diag.New("E-RUN-093", "%s was not run: %s", r.ToolName, why)}
}

// denied writes a stopped call's call_denied line (the recorder mirrors it
// as the capsule.call_denied span).
func (inv *Inventory) denied(t *TaskCall, r GateRequest, by string, hook *string, why string, start time.Time) {
	t.Lines.EmitUnder(r.ParentID, trace.CallDenied{TaskID: t.TaskID, Turn: t.Turn, ToolCallID: r.ToolCallID, ToolName: r.ToolName,
		Kind: r.Kind, Binary: r.Binary, By: by, Hook: hook, Reason: why, DurationMS: time.Since(start).Milliseconds(),
		PlanID: r.PlanID, StepID: r.StepID})
}

// ParseApproval reads an operator's reply (its parts joined as a
// request-input reply's are): exactly "approve", in any case, approves;
// "deny" followed by the end, a blank or ":" denies with the rest as the
// reason; anything else denies and says so.
func ParseApproval(reply string) Answer {
	s := strings.TrimSpace(reply)
	if strings.EqualFold(s, "approve") {
		return Answer{Approved: true}
	}
	if len(s) >= 4 && strings.EqualFold(s[:4], "deny") {
		rest := s[4:]
		if rest == "" || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r' || rest[0] == ':' {
			if rest != "" && rest[0] == ':' {
				rest = rest[1:]
			}
			return Answer{Reason: strings.TrimSpace(rest)}
		}
	}
	return Answer{NotApprove: true, Reason: fmt.Sprintf("the answer was not \"approve\": %s", cutBytes(s, 200))}
}

// compactJSON is a model's input as compact JSON (as it is when it is not
// JSON: the gate shows what the tool would get).
func compactJSON(s string) string {
	if s == "" {
		return "null"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return s
	}
	return b.String()
}

// cutBytes shortens s to at most n bytes on a character boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// QuoteWord writes one argv word so that SplitCommand reads it back as it
// is: bare when it holds nothing a splitter treats specially, else in
// single quotes, or in double quotes when it holds a single quote.
func QuoteWord(w string) string {
	if w != "" && !strings.ContainsAny(w, " \t\n'\"\\") {
		return w
	}
	if !strings.Contains(w, "'") {
		return "'" + w + "'"
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`")
	return `"` + r.Replace(w) + `"`
}

// ApprovalText is the text part of an approval request's status message.
func ApprovalText(a Approval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "approval required: %s (call %s)\n", a.ToolName, a.ToolCallID)
	if a.PlanID != nil && a.StepID != nil {
		fmt.Fprintf(&b, "plan %s, step %s\n", *a.PlanID, *a.StepID)
	}
	in := a.Input
	if len(in) > 4<<10 {
		in = cutBytes(in, 4<<10) + "[…]"
	}
	fmt.Fprintf(&b, "input: %s\n", in)
	if a.Argv != nil {
		words := make([]string, len(a.Argv))
		for i, w := range a.Argv {
			words[i] = QuoteWord(w)
		}
		fmt.Fprintf(&b, "runs: %s\n", strings.Join(words, " "))
	}
	b.WriteString(`reply "approve" to run it, or "deny" and a reason to refuse it`)
	if a.Timeout > 0 {
		fmt.Fprintf(&b, "; no reply within %ds refuses it", int(a.Timeout/time.Second))
	}
	return b.String()
}

// ApprovalData is the data part of an approval request's status message,
// as plain JSON values (maps, lists, strings, numbers, nulls).
func ApprovalData(a Approval) any {
	var secs *int
	if a.Timeout > 0 {
		n := int(a.Timeout / time.Second)
		secs = &n
	}
	input := json.RawMessage(a.Input)
	if !json.Valid(input) {
		input, _ = json.Marshal(a.Input)
	}
	type request struct {
		Tool        string          `json:"tool"`
		Kind        string          `json:"kind"`
		ToolCallID  string          `json:"tool_call_id"`
		PlanID      *string         `json:"plan_id"`
		StepID      *string         `json:"step_id"`
		Input       json.RawMessage `json:"input"`
		Argv        []string        `json:"argv"`
		TimeoutSecs *int            `json:"timeout_secs"`
	}
	b, _ := json.Marshal(map[string]request{"approval_request": {Tool: a.ToolName, Kind: a.Kind, ToolCallID: a.ToolCallID,
		PlanID: a.PlanID, StepID: a.StepID, Input: input, Argv: a.Argv, TimeoutSecs: secs}})
	var v any
	json.Unmarshal(b, &v)
	return v
}

// NoReplyError is a request-input wait that lifecycle.input_timeout_secs
// ended: the waiting tool's call ends with it (E-RUN-064), and the task
// goes on.
type NoReplyError struct{ Secs int }

func (e *NoReplyError) Error() string {
	return fmt.Sprintf("no reply to request-input within lifecycle.input_timeout_secs (%ds)", e.Secs)
}

// boundInput is t with its request-input bounded by d: one rule for an
// approval and a question, a wait that runs out fails that call.
func boundInput(t *TaskCall, d time.Duration) *TaskCall {
	b := *t
	ask := t.RequestInput
	b.RequestInput = func(ctx context.Context, prompt string) (string, error) {
		wctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		s, err := ask(wctx, prompt)
		if err != nil && ctx.Err() == nil && wctx.Err() == context.DeadlineExceeded {
			return "", &NoReplyError{Secs: int(d / time.Second)}
		}
		return s, err
	}
	return &b
}
