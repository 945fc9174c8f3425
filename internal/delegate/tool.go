package delegate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
)

// ToolName is the runtime tool's name.
const ToolName = "delegate-task"

// Tool is delegate-task as an inventory entry (tools.KindRuntime).
type Tool struct{ r *Runtime }

// Tool returns the delegate-task entry.
func (r *Runtime) Tool() *Tool { return &Tool{r} }

func (t *Tool) Name() string { return ToolName }
func (t *Tool) Kind() string { return tools.KindRuntime }

// Description names the granted capsules and, for those listed under
// workdir_snapshot, the snapshot sentence.
func (t *Tool) Description() string {
	var b strings.Builder
	b.WriteString("Delegate a task to a sub-capsule, which runs as a process of its own. The call returns when the sub-capsule starts, not when it finishes; once your turn ends, this task waits for every delegation and continues with each outcome.")
	for _, full := range t.r.cfg.WorkdirSnapshot {
		fmt.Fprintf(&b, " %s starts with a copy of this capsule's work folder as it is when the call is made, and nothing it changes reaches this capsule's work folder.", bareOf(full))
	}
	return b.String()
}

// Schema is the input schema: capsule (the enum of bare names), version, task.
func (t *Tool) Schema() json.RawMessage {
	names := make([]string, 0, len(t.r.bare))
	for b := range t.r.bare {
		names = append(names, b)
	}
	sort.Strings(names)
	s := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"capsule": map[string]any{"type": "string", "enum": names, "description": "The sub-capsule's bare name."},
			"version": map[string]any{"type": "string", "description": "That capsule's exact version. latest, stable and edge are reserved words that resolve to no artifact."},
			"task":    map[string]any{"type": "string", "description": "The whole of what the sub-capsule is told. It arrives as the sub-capsule's first user message."},
		},
		"required":             []string{"capsule", "version", "task"},
		"additionalProperties": false,
	}
	b, _ := json.Marshal(s)
	return b
}

func bareOf(full string) string {
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[i+1:]
	}
	return full
}

// Call is one delegate-task call, made by the task taskID in contextID.
// The text is the tool's result; isError marks a refusal or bad input (a
// refusal's text is the daemon's sentence, with no JSON around it). A
// launch that fails is the JSON object with status failed, and no error.
type Call struct {
	TaskID, ContextID, TraceParent string
	Input                          json.RawMessage
	// ParentID is the event_id of the calling turn's inference line ("" for
	// a script parent): the delegation's span opens under its task's, and
	// the child's task is delivered with that span's traceparent, so the
	// child's spans land under it in one trace.
	ParentID string
}

// Result is the delegate-task call's result object (docs/delegation.md).
type Result struct {
	DelegationID string `json:"delegation_id"`
	SessionID    string `json:"session_id"`
	Capsule      string `json:"capsule"`
	Version      string `json:"version"`
	Status       string `json:"status"`
	ChildWorkdir string `json:"child_workdir,omitempty"`
	Output       string `json:"output,omitempty"`
}

// Run makes one delegate-task call.
func (t *Tool) Run(ctx context.Context, c Call) (text string, isError bool) {
	r := t.r
	in, bad := t.check(c.Input)
	if bad != "" {
		return bad, true
	}
	d := &delegation{id: ids.New(ids.Delegation), taskID: c.TaskID, contextID: c.ContextID,
		full: r.bare[*in.Capsule], bare: *in.Capsule, version: *in.Version, decided: make(chan struct{})}
	start := time.Now()
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return "this session is ending and starts no delegation", true
	}
	if tp := r.cfg.Recorder.OpenDelegation(c.ParentID, trace.DelegationStart{DelegationID: d.id, Capsule: d.bare, Version: d.version}); tp != "" {
		c.TraceParent = tp
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	g, err := r.client.Spawn(sctx, r.cfg.Credential, roostapi.SpawnRequest{Name: d.full, Version: d.version})
	cancel()
	if err != nil {
		var re *roostapi.Error
		msg := err.Error()
		if errors.As(err, &re) {
			msg = re.Message
		}
		if r.cfg.RefusalHint != "" && strings.Contains(msg, "spawn_allow") {
			msg += "\n  hint: " + r.cfg.RefusalHint
		}
		r.line(d, start, "refused", &msg)
		return msg, true
	}
	d.tApproved = time.Now()
	r.mu.Lock()
	r.dels[d.id] = d
	r.mu.Unlock()
	if err := r.launch(ctx, d, g, *in.Task, c.TraceParent); err != nil {
		out := fmt.Sprintf("%s@%s could not be started: %s", d.bare, d.version, err)
		r.mu.Lock()
		delete(r.dels, d.id)
		d.ending = "launch"
		r.mu.Unlock()
		close(d.decided)
		r.line(d, start, "failed", &out)
		b, _ := json.Marshal(Result{DelegationID: d.id, SessionID: d.sessionID, Capsule: d.bare, Version: d.version, Status: "failed", Output: out})
		return string(b), false
	}
	r.cfg.Recorder.Emit(trace.DelegationStart{DelegationID: d.id, Capsule: d.bare, Version: d.version,
		ChildSessionID: d.sessionID, ChildWorkdir: d.childDir, WorkdirSnapshot: d.snapshot})
	close(d.decided)
	d.watchUntil = d.tReady.Add(r.cfg.Deadline)
	go r.watch(d)
	if r.onStarted != nil {
		r.onStarted(start, d)
	}
	b, _ := json.Marshal(Result{DelegationID: d.id, SessionID: d.sessionID, Capsule: d.bare, Version: d.version,
		Status: "started", ChildWorkdir: d.childDir})
	return string(b), false
}

// input is delegate-task's input, checked.
type input struct {
	Capsule *string `json:"capsule"`
	Version *string `json:"version"`
	Task    *string `json:"task"`
}

// check is delegate-task's own input checks: the capsule in the enum, an
// exact version, a task. bad is the refusal's sentence.
func (t *Tool) check(raw json.RawMessage) (in input, bad string) {
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, "the input to delegate-task must be {\"capsule\", \"version\", \"task\"}: " + err.Error()
	}
	switch {
	case in.Capsule == nil || in.Version == nil || in.Task == nil:
		return in, "delegate-task needs all three of capsule, version and task"
	case t.r.bare[*in.Capsule] == "":
		return in, fmt.Sprintf("capabilities.spawn.allow: %q is not a capsule this capsule may delegate to; the capsules are %s", *in.Capsule, strings.Join(t.names(), ", "))
	case *in.Version == "latest" || *in.Version == "stable" || *in.Version == "edge":
		return in, fmt.Sprintf("version %q is a reserved word that resolves to no artifact: give %s's exact version", *in.Version, *in.Capsule)
	case strings.TrimSpace(*in.Version) == "":
		return in, "version is empty: give the capsule's exact version"
	case strings.TrimSpace(*in.Task) == "":
		return in, "task is empty: it is the whole of what the sub-capsule is told"
	}
	return in, ""
}

// CheckCall is delegate-task's own checks, before the gate
// (tools.Checker): the gate sees {"capsule", "version", "task"}.
func (t *Tool) CheckCall(_ context.Context, c *tools.Call) (tools.GateView, *tools.Outcome) {
	data := ""
	if c.Input.Data != nil {
		data = *c.Input.Data
	}
	in, bad := t.check([]byte(data))
	if bad != "" {
		return tools.GateView{}, &tools.Outcome{Err: errors.New(bad), Verbatim: true}
	}
	b, _ := json.Marshal(in)
	return tools.GateView{Input: string(b)}, nil
}

func (t *Tool) names() []string {
	var n []string
	for b := range t.r.bare {
		n = append(n, b)
	}
	sort.Strings(n)
	return n
}

// line writes the delegation trace line (which closes its span).
func (r *Runtime) line(d *delegation, start time.Time, outcome string, reason *string) {
	r.cfg.Recorder.Emit(trace.Delegation{DelegationID: d.id, Capsule: d.bare, Version: d.version,
		ChildSessionID: d.sessionID, DurationMS: time.Since(start).Milliseconds(), Outcome: outcome, Reason: reason})
}

// InFlight lists the task's delegations whose outcome has not arrived.
func (t *Tool) InFlight(taskID string) []string { return t.r.InFlight(taskID) }
