package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/murmur-go/murmur/internal/agent"
	"github.com/murmur-go/murmur/internal/delegate"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/hooks"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/telemetry"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// MaxToolResultBytes bounds what the model sees of one tool result
// (contracts §15); the whole result is kept in the records dir.
const MaxToolResultBytes = 64 << 10

// agentTools is the model's view of the session's inventory: the loop's
// agent.Tools over internal/tools, with the per-call rules every kind
// shares — the input must be a JSON object, the result is cut to 64 KiB
// (the whole kept under logs/tools/), and one trace line is written under
// the turn's inference line.
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
	a := &agentTools{inv: inv, rec: rec, recordsDir: recordsDir, byModel: map[string]tools.Entry{}, hooks: hk, tasks: tasks}
	bare := map[string]int{}
	for _, e := range inv.Entries() {
		bare[manifest.Bare(e.Name())]++
	}
	for _, e := range inv.Entries() {
		a.byModel[modelName(e, bare)] = e
		a.specs = append(a.specs, driver.Tool{Name: modelName(e, bare), Description: e.Description(), Parameters: e.Schema()})
	}
	return a
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

// Call runs one tool call (agent.Tools).
func (a *agentTools) Call(ctx context.Context, c agent.Call) agent.Result {
	start := time.Now()
	line := trace.AgentToolCall{TaskID: c.TaskID, Turn: c.Turn, ToolCallID: c.ID}
	line.ToolName, line.InputBytes = tools.Clip(c.Name), len(c.Input)
	e, ok := a.byModel[c.Name]
	if !ok {
		if found, err := a.inv.Lookup(c.Name); err == nil {
			e, ok = found, true
		}
	}
	if sh, ok := e.(*tools.Shell); ok && isObject(c.Input) {
		return a.shell(ctx, sh, c, start)
	}
	var text, errText string
	switch {
	case !ok:
		errText = fmt.Sprintf("there is no tool named %q; the tools are %s", tools.Clip(c.Name), a.names())
	case !isObject(c.Input):
		line.ToolName, line.Kind = e.Name(), e.Kind()
		errText = fmt.Sprintf("the input to %s must be a JSON object", e.Name())
	default:
		line.ToolName, line.Kind = e.Name(), e.Kind()
		text, errText, line.Ending = a.run(ctx, e, c)
	}
	res := agent.Result{Source: "tool:" + line.ToolName}
	full := text
	if errText != "" {
		res.IsError = true
		full = "error: " + errText
		if _, ok := e.(*delegate.Tool); ok {
			full = errText // a refusal is the daemon's sentence, verbatim (contracts §18)
		}
		line.Status, line.Error = "error", &errText
	} else {
		line.Status = "ok"
	}
	line.OutputBytes = len(full)
	res.Text = a.cut(c.ID, full)
	line.DurationMS = time.Since(start).Milliseconds()
	a.rec.EmitUnder(c.ParentID, line)
	c.Span.ToolCall(telemetry.ToolCallLine{ToolName: line.ToolName, Turn: c.Turn, ToolCallID: c.ID, Kind: line.Kind,
		InputBytes: line.InputBytes, OutputBytes: line.OutputBytes, Status: line.Status, Error: errText,
		Ending: line.Ending}, start, time.Now())
	a.toolHook(ctx, c, line)
	return res
}

// toolHook calls on-tool-call with the call's tool_call line.
func (a *agentTools) toolHook(ctx context.Context, c agent.Call, line trace.AgentToolCall) {
	if a.hooks == nil {
		return
	}
	outs := a.hooks.OnToolCall(ctx, wit.ToolEvent{Turn: uint32(c.Turn), ToolName: line.ToolName,
		InputBytes: uint64(line.InputBytes), OutputBytes: uint64(line.OutputBytes), DurationMS: uint64(line.DurationMS),
		Status: line.Status})
	hookArtifacts(c, outs)
}

// hookArtifacts streams a hook's artifact outputs to the task.
func hookArtifacts(c agent.Call, outs []hooks.Output) {
	for _, o := range outs {
		if o.Case == wit.OutputArtifact && c.Events != nil {
			c.Events.ToolResult("hook:"+o.Hook, o.Hook, o.Text, nil)
		}
	}
}

// shell runs a shell tool call: a command that ran writes a shell line and
// counts in shell_calls; one that could not run (bad input, a binary off
// PATH) is an error result with a tool_call line, counted in tool_errors.
func (a *agentTools) shell(ctx context.Context, sh *tools.Shell, c agent.Call, start time.Time) agent.Result {
	r, err := sh.Run(ctx, tools.ShellCall{TaskID: c.TaskID, Turn: c.Turn, ToolCallID: c.ID, Input: c.Input})
	if err != nil {
		errText := err.Error()
		line := trace.AgentToolCall{TaskID: c.TaskID, Turn: c.Turn, ToolCallID: c.ID, Kind: tools.KindShell}
		line.ToolName, line.InputBytes, line.Status, line.Error = sh.Name(), len(c.Input), "error", &errText
		line.OutputBytes = len("error: " + errText)
		line.DurationMS = time.Since(start).Milliseconds()
		a.rec.EmitUnder(c.ParentID, line)
		c.Span.ToolCall(telemetry.ToolCallLine{ToolName: sh.Name(), Turn: c.Turn, ToolCallID: c.ID, Kind: tools.KindShell,
			InputBytes: len(c.Input), Status: "error", Error: errText}, start, time.Now())
		a.toolHook(ctx, c, line)
		return agent.Result{Text: "error: " + errText, IsError: true, Source: "shell:" + sh.Name()}
	}
	a.rec.EmitUnder(c.ParentID, r.Line)
	l := r.Line
	c.Span.Shell(telemetry.ShellLine{Turn: c.Turn, ToolCallID: c.ID, Binary: l.Binary, Command: l.Command,
		ExitCode: l.ExitCode, StdoutBytes: int(l.StdoutBytes), StderrBytes: int(l.StderrBytes), Truncated: l.Truncated,
		LogPath: l.LogPath}, start, time.Now())
	if a.hooks != nil {
		hookArtifacts(c, a.hooks.OnShell(ctx, wit.ShellEvent{Turn: uint32(c.Turn), Binary: l.Binary, Command: l.Command,
			ExitCode: int32(l.ExitCode), Stdout: r.Stdout, Stderr: r.Stderr, StdoutBytes: uint64(l.StdoutBytes),
			StderrBytes: uint64(l.StderrBytes), DurationMS: uint64(l.DurationMS)}))
	}
	return agent.Result{Text: a.cut(c.ID, r.Text), Shell: true, Source: "shell:" + sh.Name()}
}

// run calls one entry by its kind and returns the text the model sees, the
// error text ("" when it succeeded) and a component call's ending.
func (a *agentTools) run(ctx context.Context, e tools.Entry, c agent.Call) (text, errText, ending string) {
	switch t := e.(type) {
	case *tools.Skill:
		return t.Text(), "", ""
	case *delegate.Tool:
		tc := a.tasks.get(c.TaskID)
		text, isErr := t.Run(ctx, delegate.Call{TaskID: c.TaskID, ContextID: tc.contextID, TraceParent: tc.traceparent, Input: c.Input,
			Span: c.Span})
		if c.Events != nil {
			c.Events.Delegations(t.InFlight(c.TaskID))
		}
		if isErr {
			return "", text, ""
		}
		return text, "", ""
	case *tools.WASM:
		in := string(c.Input)
		inv := tools.Invocation{Input: wit.ToolInput{Data: &in}, Recorder: a.rec}
		if ev := c.Events; ev != nil {
			inv.Chunks = func(_ context.Context, chunk string, thinking bool) error {
				if !thinking {
					ev.AppendText(chunk)
				}
				return nil
			}
			inv.RequestInput = func(ctx context.Context, prompt string) (string, error) {
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
		}
		r, err := t.Run(ctx, inv)
		if err != nil {
			return "", err.Error(), tools.EndingOf(err)
		}
		out := resultText(r)
		if r.Status != wit.StatusPassed {
			return "", fmt.Sprintf("%s answered %s: %s", t.Name(), r.Status, out), trace.EndOK
		}
		return out, "", trace.EndOK
	}
	return "", fmt.Sprintf("%s is a %s tool this build cannot call", e.Name(), e.Kind()), ""
}

// resultText is what a tool result says: its data, else its summary.
func resultText(r wit.ToolResult) string {
	switch {
	case r.Data != nil:
		return *r.Data
	case r.Summary != nil:
		return *r.Summary
	case r.DataPath != nil:
		return "the result is in " + *r.DataPath
	}
	return "(no output)"
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
