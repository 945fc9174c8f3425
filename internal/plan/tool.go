package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/murmur-go/murmur/internal/atomicfile"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
)

// Description is the tool's description for the model.
const Description = `Run a plan: steps that call this capsule's tools, run commands and delegate to sub-capsules, ordered by depends_on and gated by if, without spending turns. The whole plan is checked before any step runs, and the answer reports every step. Steps whose dependencies have all ended run at the same time, at most 4 at once. A string in a step's input may hold $<step>.output or $<step>.status of a step it depends on; an if compares such references and quoted literals with == != < >, joined by && and ||.`

// Tool is submit-plan as an inventory entry (tools.KindRuntime).
type Tool struct {
	cfg ToolConfig

	mu  sync.Mutex
	inv *tools.Inventory
	cat *Catalog
	n   int // submit-plan calls so far, refused ones included
}

// ToolConfig is what a session's submit-plan runs with.
type ToolConfig struct {
	// RuntimeDir is the session's runtime dir: plans/plan-<n>.json goes there.
	RuntimeDir string
	// Lines is the session's recorder.
	Lines interface {
		EmitUnder(parent string, ev any) string
	}
	// Cut bounds a tool step's output as a direct call's is cut.
	Cut func(callID, text string) string
	// Capsules runs capsule steps (nil: each fails with NoRoost).
	Capsules CapsuleRunner
}

// NewTool makes the session's submit-plan; Bind gives it the inventory it
// is part of before the first call.
func NewTool(cfg ToolConfig) *Tool { return &Tool{cfg: cfg} }

// Bind gives the tool the inventory its steps call through and the
// session's tools as steps may name them.
func (t *Tool) Bind(inv *tools.Inventory, cat *Catalog) {
	t.mu.Lock()
	t.inv, t.cat = inv, cat
	t.mu.Unlock()
}

func (t *Tool) catalog() *Catalog {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cat
}

func (t *Tool) Name() string        { return ToolName }
func (t *Tool) Kind() string        { return tools.KindRuntime }
func (t *Tool) Description() string { return Description }

// Schema is the plan object's schema, with the enums of the session's
// callable tools and spawn.allow's bare names.
func (t *Tool) Schema() json.RawMessage {
	cat := t.catalog()
	var toolNames, capsules []string
	if cat != nil {
		toolNames = cat.Callable()
		for _, a := range cat.spawnAllow {
			capsules = append(capsules, manifest.Bare(a))
		}
		sort.Strings(capsules)
	}
	enum := func(names []string) map[string]any {
		if len(names) == 0 {
			return map[string]any{"type": "string"}
		}
		return map[string]any{"type": "string", "enum": names}
	}
	step := map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"id"},
		"properties": map[string]any{
			"id":         map[string]any{"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
			"tool":       enum(toolNames),
			"shell":      map[string]any{"type": "string"},
			"capsule":    enum(capsules),
			"input":      map[string]any{},
			"depends_on": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"if":         map[string]any{"type": "string"},
			"on_error":   map[string]any{"type": "string", "enum": []string{"fail", "skip", "continue"}},
			"retries":    map[string]any{"type": "integer", "minimum": 0, "maximum": 5},
		},
	}
	s := map[string]any{
		"type": "object", "additionalProperties": false, "required": []string{"id", "steps"},
		"properties": map[string]any{
			"id":    map[string]any{"type": "string", "minLength": 1, "maxLength": 128},
			"steps": map[string]any{"type": "array", "maxItems": 100, "items": step},
		},
	}
	b, _ := json.Marshal(s)
	return b
}

// Validate checks a plan's input bytes against the session's tools: what
// a gate that must see only valid plans calls first.
func (t *Tool) Validate(raw []byte) (*Plan, Errors) {
	cat := t.catalog()
	if cat == nil {
		cat = &Catalog{byName: map[string]tools.Entry{}}
	}
	return Parse(raw, cat)
}

// CheckCall validates the plan before the gate asks anyone (tools.Checker):
// policy hooks see, and an operator approves, only a plan that passed
// validation. A refused plan's call is answered here, as Call answers it
// (its record, its plan_end), and runs nothing.
func (t *Tool) CheckCall(ctx context.Context, c *tools.Call) (tools.GateView, *tools.Outcome) {
	raw := []byte{}
	if c.Input.Data != nil {
		raw = []byte(*c.Input.Data)
	}
	if c.Task != nil {
		if _, errs := t.Validate(raw); len(errs) == 0 {
			return tools.GateView{}, nil
		}
	}
	o := t.Call(ctx, c)
	return tools.GateView{}, &o
}

// record is plans/plan-<n>.json.
type record struct {
	Plan   json.RawMessage `json:"plan"`
	Report *Report         `json:"report"`
}

// Call runs one submit-plan call: validation, the plan, its report. A
// script's call never reaches it (the grant gives scripts nothing).
func (t *Tool) Call(ctx context.Context, c *tools.Call) tools.Outcome {
	if c.Task == nil {
		return tools.Outcome{Err: fmt.Errorf("tool %q is a runtime tool of agent capsules", ToolName)}
	}
	start := time.Now()
	t.mu.Lock()
	t.n++
	n := t.n
	t.mu.Unlock()
	file := fmt.Sprintf("plans/plan-%d.json", n)
	raw := []byte{}
	if c.Input.Data != nil {
		raw = []byte(*c.Input.Data)
	}
	asReceived := json.RawMessage(raw)
	if !json.Valid(raw) {
		b, _ := json.Marshal(string(raw))
		asReceived = b
	}
	p, errs := t.Validate(raw)
	if len(errs) > 0 {
		id := planIDOf(raw)
		rep := Report{PlanID: id, File: file, Errors: errs.Shown(), Steps: []StepReport{}}
		t.write(file, asReceived, &rep)
		reason := fmt.Sprintf("%d validation errors", len(errs))
		if len(errs) == 1 {
			reason = "1 validation error"
		}
		t.cfg.Lines.EmitUnder(c.Task.ParentID, trace.PlanEnd{PlanID: id, File: file, Outcome: "refused",
			DurationMS: time.Since(start).Milliseconds(), Reason: &reason, Errors: errs.Shown()})
		return tools.Outcome{Err: fmt.Errorf("E-RUN-090 the plan was refused before any step ran: %s", reason),
			Report: reportText(rep)}
	}
	t.write(file, asReceived, nil)
	ps := trace.PlanStart{TaskID: c.Task.TaskID, Turn: c.Task.Turn, ToolCallID: c.Task.ID, PlanID: p.ID, File: file,
		InputBytes: len(raw), StepCount: len(p.Steps), Steps: []trace.PlanStartStep{}}
	for _, s := range p.Steps {
		ps.Steps = append(ps.Steps, trace.PlanStartStep{StepID: s.ID, Kind: s.Kind, DependsOn: nonNil(s.DependsOn),
			HasCondition: s.Cond != nil, OnError: s.OnError, Retries: s.Retries})
	}
	planLine := t.cfg.Lines.EmitUnder(c.Task.ParentID, ps)
	if c.Task.Phase != nil {
		c.Task.Phase("plan")
		defer c.Task.Phase("tool")
	}
	t.mu.Lock()
	inv := t.inv
	t.mu.Unlock()
	steps, failed, canceled, counts := Run(ctx, p, Env{Inv: inv, Task: c.Task, Lines: t.cfg.Lines, Cut: t.cfg.Cut,
		Capsules: t.cfg.Capsules}, planLine)
	rep := Report{PlanID: p.ID, File: file, Completed: failed == "" && !canceled, Errors: []string{}, Steps: steps}
	if failed != "" {
		rep.FailedStep = &failed
	}
	t.write(file, asReceived, &rep)
	end := trace.PlanEnd{PlanID: p.ID, File: file, Outcome: "completed", FailedStep: rep.FailedStep, StepsTotal: len(steps),
		DurationMS: time.Since(start).Milliseconds(), Errors: []string{}}
	for _, s := range steps {
		switch s.Status {
		case StatusSuccess:
			end.StepsSucceeded++
		case StatusFailed:
			end.StepsFailed++
		default:
			end.StepsSkipped++
		}
	}
	switch {
	case canceled:
		end.Outcome = "canceled"
		r := reasonCanceled
		end.Reason = &r
	case failed != "":
		end.Outcome = "failed"
	}
	t.cfg.Lines.EmitUnder(planLine, end)
	out := tools.Outcome{Text: reportText(shown(rep)), Nested: counts}
	switch {
	case canceled:
		out.Err = fmt.Errorf("E-RUN-091 plan %s did not complete: the task was cancelled", p.ID)
	case failed != "":
		out.Err = fmt.Errorf("E-RUN-091 plan %s did not complete: step %s failed and stopped it", p.ID, failed)
	}
	if out.Err != nil {
		out.Report = out.Text
	}
	return out
}

// write writes plans/plan-<n>.json atomically.
func (t *Tool) write(file string, plan json.RawMessage, rep *Report) {
	path := filepath.Join(t.cfg.RuntimeDir, file)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	b, err := marshal(record{Plan: plan, Report: rep})
	if err != nil {
		return
	}
	atomicfile.Write(path, b, 0o600)
}

// planIDOf is a refused plan's id when it has a usable one.
func planIDOf(raw []byte) string {
	var top struct {
		ID any `json:"id"`
	}
	json.Unmarshal(raw, &top)
	if s, ok := top.ID.(string); ok && len(s) <= 128 {
		return s
	}
	return ""
}

// Cuts in the result the model sees.
const (
	maxShownOutput = 8 << 10
	maxShownError  = 2 << 10
)

// shown is the report as the model sees it: each output cut at 8 KiB with
// a note naming the file that holds it whole, each error at 2 KiB.
func shown(r Report) Report {
	out := r
	out.Steps = make([]StepReport, len(r.Steps))
	for i, s := range r.Steps {
		if s.Output != nil {
			if kept, whole := cut(*s.Output, maxShownOutput); !whole {
				v := fmt.Sprintf("%s[cut at %d of %d bytes; %s in the runtime directory holds it whole]", kept, len(kept), len(*s.Output), r.File)
				s.Output = &v
			}
		}
		if s.Error != nil {
			if kept, whole := cut(*s.Error, maxShownError); !whole {
				s.Error = &kept
			}
		}
		out.Steps[i] = s
	}
	return out
}

func reportText(r Report) string {
	b, _ := marshal(r)
	return string(b)
}

// marshal is compact JSON that leaves <, > and & as they are (conditions
// and outputs read as written).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
