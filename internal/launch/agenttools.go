package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/murmur-go/murmur/internal/agent"
	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/hooks"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// MaxToolResultBytes bounds what the model sees of one tool result
// (docs/agent-capsules.md); the whole result is kept in the records dir.
const MaxToolResultBytes = 64 << 10

// agentTools is the model's view of the session's inventory: the loop's
// agent.Tools over internal/tools, a thin adapter for the model's rules —
// its tool names, input that must be a JSON object, a result cut to 64 KiB
// (the whole kept under logs/tools/). The inventory runs the call and
// writes its line under the turn's inference line.
type agentTools struct {
	inv        *tools.Inventory
	rec        *trace.Recorder
	recordsDir string
	specs      []driver.Tool
	byModel    map[string]tools.Entry // the name the model calls → the entry
	hooks      *hooks.Dispatcher      // on-tool-call and on-shell; nil: none
	tasks      *taskContexts          // a task's context, for delegate-task
}

func newAgentTools(inv *tools.Inventory, rec *trace.Recorder, recordsDir string, hk *hooks.Dispatcher, tasks *taskContexts) *agentTools {
	a := &agentTools{inv: inv, rec: rec, recordsDir: recordsDir, byModel: modelNames(inv), hooks: hk, tasks: tasks}
	bare := bareCounts(inv)
	for _, e := range inv.Entries() {
		desc := e.Description()
		if inv.NeedsApproval(e.Name()) {
			desc += " " + ApprovalNote
		}
		a.specs = append(a.specs, driver.Tool{Name: modelName(e, bare), Description: desc, Parameters: e.Schema()})
	}
	return a
}

// modelNames maps the name the model calls each tool by to the tool.
func modelNames(inv *tools.Inventory) map[string]tools.Entry {
	bare := bareCounts(inv)
	m := map[string]tools.Entry{}
	for _, e := range inv.Entries() {
		m[modelName(e, bare)] = e
	}
	return m
}

func bareCounts(inv *tools.Inventory) map[string]int {
	bare := map[string]int{}
	for _, e := range inv.Entries() {
		bare[manifest.Bare(e.Name())]++
	}
	return bare
}

// modelName is the name the model calls a tool by: its bare name when no
// other tool shares it, else its full name with the scope joined by "__"
// (providers accept only [A-Za-z0-9_-] in tool names).
func modelName(e tools.Entry, bare map[string]int) string {
	b := manifest.Bare(e.Name())
	if bare[b] == 1 {
		return b
	}
	return strings.ReplaceAll(e.Name(), "/", "__")
}

func (a *agentTools) Specs() []driver.Tool { return a.specs }

// Call runs one tool call (agent.Tools) through the inventory, which
// writes its line and fires its hooks; what is left here is the model's
// side: its names, the JSON-object rule and the cut.
func (a *agentTools) Call(ctx context.Context, c agent.Call) agent.Result {
	in := string(c.Input)
	tc := &tools.TaskCall{TaskID: c.TaskID, Turn: c.Turn, ID: c.ID, ParentID: c.ParentID, Lines: a.rec}
	if a.hooks != nil {
		tc.Hooks = callHooks{a.hooks, c.Events}
	}
	tctx := a.tasks.get(c.TaskID)
	tc.ContextID, tc.TraceParent = tctx.contextID, tctx.traceparent
	if ev := c.Events; ev != nil {
		tc.InFlight = ev.Delegations
		tc.MemberCalls = ev.MemberCalls
		tc.Phase = func(p string) { ev.Phase(door.Phase(p)) }
		tc.Status = ev.Status
		tc.Chunks = func(_ context.Context, chunk string, thinking bool) error {
			if !thinking {
				ev.AppendText(chunk)
			}
			return nil
		}
		tc.RequestInput = func(ctx context.Context, prompt string) (string, error) {
			reply, err := ev.RequestInput(ctx, prompt)
			if err != nil {
				return "", err
			}
			var parts []string
			for _, p := range reply.Parts {
				if p.Data != nil {
					parts = append(parts, string(p.Data))
				} else {
					parts = append(parts, p.Text)
				}
			}
			return strings.Join(parts, "\n\n"), nil
		}
		tc.Approve = func(ctx context.Context, q tools.Approval) tools.Answer {
			return approve(ctx, ev, q)
		}
	}
	call := tools.Call{Name: c.Name, Input: wit.ToolInput{Data: &in}, Recorder: a.rec, Task: tc}
	e, ok := a.byModel[c.Name]
	if !ok {
		if found, err := a.inv.Lookup(c.Name); err == nil {
			e, ok = found, true
		}
	}
	object := isObject(c.Input)
	switch {
	case !ok:
		call.Refused = fmt.Errorf("there is no tool named %q; the tools are %s", tools.Clip(c.Name), a.names())
	case !object:
		call.Entry, call.Refused = e, fmt.Errorf("the input to %s must be a JSON object", e.Name())
	default:
		call.Entry = e
	}
	o := a.inv.Call(ctx, call)
	if o.Denied != "" || o.Canceled {
		return agent.Result{Text: o.Text, IsError: true, Denied: o.Denied != "", NotRun: o.Canceled, Source: "tool:" + e.Name()}
	}
	nested := agent.Counts{ToolCalls: o.Nested.ToolCalls, ToolErrors: o.Nested.ToolErrors, ShellCalls: o.Nested.ShellCalls, CallsDenied: o.Nested.CallsDenied}
	if o.Shell != nil && o.Err == nil {
		return agent.Result{Text: a.cut(c.ID, o.Text), Shell: true, Source: "shell:" + e.Name()}
	}
	source := "tool:" + tools.Clip(c.Name)
	switch {
	case ok && object && e.Kind() == tools.KindShell:
		source = "shell:" + e.Name()
	case ok:
		source = "tool:" + e.Name()
	}
	return agent.Result{Text: a.cut(c.ID, o.Text), IsError: o.Err != nil, Source: source, Nested: nested}
}

// ApprovalNote ends the description of a tool whose calls wait for an
// operator's approval.
const ApprovalNote = "Each call waits for an operator's approval; a refusal comes back as an error."

// approve asks the task's operator through the door (INPUT_REQUIRED with
// the request's text and data parts) and reads the reply; a wait past
// lifecycle.input_timeout_secs is a timeout, one the task's cancel ended is
// an error.
func approve(ctx context.Context, ev door.Events, q tools.Approval) tools.Answer {
	asker, ok := ev.(interface {
		RequestInputData(ctx context.Context, prompt string, data any) (door.Reply, error)
	})
	if !ok {
		return tools.Answer{Reason: "this task's door cannot ask an operator"}
	}
	wctx := ctx
	if q.Timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, q.Timeout)
		defer cancel()
	}
	reply, err := asker.RequestInputData(wctx, tools.ApprovalText(q), tools.ApprovalData(q))
	if err != nil {
		if ctx.Err() == nil && wctx.Err() == context.DeadlineExceeded {
			return tools.Answer{TimedOut: true}
		}
		return tools.Answer{Err: err}
	}
	a := tools.ParseApproval(replyText(reply))
	a.MessageID = reply.MessageID
	return a
}

// replyText joins a reply's parts as a request-input reply's are: text
// parts as they are, data parts as their JSON, a blank line between.
func replyText(r door.Reply) string {
	var parts []string
	for _, p := range r.Parts {
		if p.Data != nil {
			parts = append(parts, string(p.Data))
		} else {
			parts = append(parts, p.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// callHooks fires a call's hooks and streams their artifact outputs to
// the task.
type callHooks struct {
	d  *hooks.Dispatcher
	ev door.Events
}

func (h callHooks) OnToolCall(ctx context.Context, c *tools.TaskCall, l trace.AgentToolCall) {
	h.artifacts(h.d.OnToolCall(ctx, wit.ToolEvent{Turn: uint32(c.Turn), ToolName: l.ToolName,
		InputBytes: uint64(l.InputBytes), OutputBytes: uint64(l.OutputBytes), DurationMS: uint64(l.DurationMS),
		Status: l.Status}))
}

func (h callHooks) OnShell(ctx context.Context, c *tools.TaskCall, r tools.ShellResult) {
	l := r.Line
	h.artifacts(h.d.OnShell(ctx, wit.ShellEvent{Turn: uint32(c.Turn), Binary: l.Binary, Command: l.Command,
		ExitCode: int32(l.ExitCode), Stdout: r.Stdout, Stderr: r.Stderr, StdoutBytes: uint64(l.StdoutBytes),
		StderrBytes: uint64(l.StderrBytes), DurationMS: uint64(l.DurationMS)}))
}

func (h callHooks) artifacts(outs []hooks.Output) {
	for _, o := range outs {
		if o.Case == wit.OutputArtifact && h.ev != nil {
			h.ev.ToolResult("hook:"+o.Hook, o.Hook, o.Text, nil)
		}
	}
}

// cut bounds a result to MaxToolResultBytes on a character boundary; the
// whole is kept at logs/tools/<tool_call_id>.out and named in what the
// model sees.
func (a *agentTools) cut(callID, text string) string {
	if len(text) <= MaxToolResultBytes {
		return text
	}
	n := MaxToolResultBytes
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	name := callID
	if !safeName(name) {
		name = ids.New(ids.Event)
	}
	path := filepath.Join(a.recordsDir, "logs", "tools", name+".out")
	note := fmt.Sprintf("\n[cut at %d of %d bytes; the whole result is in %s]", n, len(text), path)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil || os.WriteFile(path, []byte(text), 0o600) != nil {
		note = fmt.Sprintf("\n[cut at %d of %d bytes; the whole result could not be kept]", n, len(text))
	}
	return text[:n] + note
}

// safeName reports whether a driver-given id can name a file.
func safeName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func (a *agentTools) names() string {
	if len(a.specs) == 0 {
		return "(none)"
	}
	names := make([]string, 0, len(a.specs))
	for _, s := range a.specs {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

func isObject(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil
}
