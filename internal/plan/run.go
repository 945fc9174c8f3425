package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// Step statuses.
const (
	StatusSuccess = "success"
	StatusFailed  = "failed"
	StatusSkipped = "skipped"
)

// Sentences of steps the plan did not run to their end.
const (
	reasonCanceled = "the task was cancelled"
	notRunCanceled = "not run: the task was cancelled"
)

// RetryPause is how long after a failed attempt the next one starts.
var RetryPause = time.Second

// CapsuleRunner runs a capsule step's attempt: a delegation of its own
// (a new dlg_ id, POST /spawn, a new child). It returns once the answer is
// read or the attempt has failed, and within about a second of ctx being
// cancelled; the child is ended after it returns.
type CapsuleRunner interface {
	RunCapsule(ctx context.Context, a CapsuleAttempt) CapsuleResult
}

// CapsuleAttempt is one attempt of a capsule step.
type CapsuleAttempt struct {
	PlanID, StepID string
	Attempt        int
	// Capsule is the full name, Bare the bare name.
	Capsule, Bare, Version, Task string
	// Task's identity: the delegating task.
	TaskID, ContextID string
	// ParentID is the step's plan_step_start line: the delegation's lines
	// and span go under it.
	ParentID string
	// InFlight tells the task's stream which delegations are in flight (a
	// cancel names them); nil: nobody asks.
	InFlight func(delegationIDs []string)
}

// CapsuleResult is what an attempt gave.
type CapsuleResult struct {
	// DelegationID is the attempt's dlg_ id ("" when none was minted).
	DelegationID string
	// OK is a delegation that ended ok.
	OK bool
	// Output is the answer, or the sentence of a delegation that never
	// started; nil when nothing ran.
	Output *string
	// Reason is a failed attempt's error.
	Reason string
	// Retryable is false for a failure before anything ran that a retry
	// cannot change (none is, today, beyond the cancel).
	Retryable bool
}

// Env is one submit-plan call's world: the inventory its tool and shell
// steps call through, the call's own task, and the capsule seam.
type Env struct {
	Inv  *tools.Inventory
	Task *tools.TaskCall
	// Lines writes the plan lines (the session's recorder).
	Lines interface {
		EmitUnder(parent string, ev any) string
	}
	// Cut bounds a tool step's output as a direct call's result is cut
	// (64 KiB, the whole kept in a log); nil keeps it whole.
	Cut func(callID, text string) string
	// Capsules runs capsule steps; nil fails each with NoRoost.
	Capsules CapsuleRunner
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// NoRoost is a capsule step's failure when MURMUR_ROOST_URL was unset or
// blank at launch.
const NoRoost = "MURMUR_ROOST_URL is not set; capsule steps require mur-roost"

// StepReport is one step in the report.
type StepReport struct {
	StepID   string  `json:"step_id"`
	Kind     string  `json:"kind"`
	Status   string  `json:"status"`
	Attempts int     `json:"attempts"`
	Output   *string `json:"output"`
	Error    *string `json:"error"`
}

// Report is the plan's answer (and plans/plan-<n>.json's report).
type Report struct {
	PlanID     string       `json:"plan_id"`
	File       string       `json:"file"`
	Completed  bool         `json:"completed"`
	FailedStep *string      `json:"failed_step"`
	Errors     []string     `json:"errors"`
	Steps      []StepReport `json:"steps"`
}

// stepState is a step while the plan runs.
type stepState struct {
	*Step
	status     string // "" until settled
	attempts   int
	output     *string
	err        *string
	callIDs    []string
	dispatched time.Time
	duration   time.Duration
	startLine  string
	considered bool
}

// Outcome is how a plan ended.
type Outcome struct {
	Report   Report
	Canceled bool
	Counts   tools.Counts
	// Delegations are the capsule steps' delegations in flight when the
	// task was cancelled.
	Steps []*stepState
}

// runner is one plan running.
type runner struct {
	env      Env
	plan     *Plan
	planLine string
	steps    []*stepState
	byID     map[string]*stepState
	now      func() time.Time

	ctx      context.Context
	mu       sync.Mutex
	counts   tools.Counts
	stopped  chan struct{} // closed when a fail step stops the plan
	stopOnce sync.Once
	failed   string
}

// Run runs a validated plan to its end: every step settled. planLine is
// the plan_start line the plan's lines go under.
func Run(ctx context.Context, p *Plan, env Env, planLine string) (steps []StepReport, failedStep string, canceled bool, counts tools.Counts) {
	r := &runner{env: env, plan: p, planLine: planLine, byID: map[string]*stepState{}, stopped: make(chan struct{}), now: env.Now, ctx: ctx}
	if r.now == nil {
		r.now = time.Now
	}
	for _, s := range p.Steps {
		st := &stepState{Step: s}
		r.steps = append(r.steps, st)
		r.byID[s.ID] = st
	}
	done := make(chan *stepState)
	running, settled := 0, 0
	var queue []*stepState
	for settled < len(r.steps) {
		// Consider every step whose dependencies have all settled; a false
		// if settles it at once, which may free others.
		for changed := true; changed; {
			changed = false
			for _, st := range r.steps {
				if st.considered || !r.depsSettled(st) {
					continue
				}
				st.considered = true
				changed = true
				if !st.Cond.Eval(r.value) {
					r.settle(st, StatusSkipped, nil)
					settled++
					continue
				}
				queue = append(queue, st)
			}
		}
		halted := ctx.Err() != nil || r.isStopped()
		for !halted && running < MaxRunning && len(queue) > 0 {
			st := queue[0]
			queue = queue[1:]
			running++
			st.dispatched = r.now()
			st.startLine = env.Lines.EmitUnder(planLine, trace.PlanStepStart{PlanID: p.ID, StepID: st.ID, Kind: st.Kind, DependsOn: nonNil(st.DependsOn)})
			go func() { r.dispatch(ctx, st); done <- st }()
		}
		if running == 0 {
			// Halted, or nothing left to start: what never started is skipped.
			why := notRunCanceled
			if ctx.Err() == nil && r.isStopped() {
				why = fmt.Sprintf("not run: step %s failed and stopped the plan", r.failed)
			}
			for _, st := range r.steps {
				if st.status == "" {
					r.settle(st, StatusSkipped, &why)
					settled++
				}
			}
			break
		}
		select {
		case st := <-done:
			running--
			r.settleRan(st)
			settled++
		case <-ctx.Done():
			// Running steps see the same context and end; wait for them.
			for running > 0 {
				st := <-done
				running--
				r.settleRan(st)
				settled++
			}
		}
	}
	canceled = ctx.Err() != nil
	for _, st := range r.steps {
		steps = append(steps, StepReport{StepID: st.ID, Kind: st.Kind, Status: st.status, Attempts: st.attempts, Output: st.output, Error: st.err})
	}
	r.mu.Lock()
	counts = r.counts
	r.mu.Unlock()
	return steps, r.failed, canceled, counts
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (r *runner) isStopped() bool {
	select {
	case <-r.stopped:
		return true
	default:
		return false
	}
}

func (r *runner) depsSettled(st *stepState) bool {
	for _, d := range st.DependsOn {
		if r.byID[d].status == "" {
			return false
		}
	}
	return true
}

// value answers a reference in a condition: an output a step does not
// have is "".
func (r *runner) value(ref Ref) string {
	st := r.byID[ref.Step]
	if ref.Field == "status" {
		return st.status
	}
	if st.output == nil {
		return ""
	}
	return *st.output
}

// settleRan settles a step that was dispatched, by its on_error.
func (r *runner) settleRan(st *stepState) {
	st.duration = r.now().Sub(st.dispatched)
	if st.status == StatusSuccess {
		r.settle(st, StatusSuccess, st.err)
		return
	}
	switch st.OnError {
	case OnErrorSkip:
		r.settle(st, StatusSkipped, st.err)
	case OnErrorContinue:
		r.settle(st, StatusFailed, st.err)
	default:
		if r.ctx.Err() != nil {
			// The cancel stopped it: the plan is canceled, not failed.
			r.settle(st, StatusFailed, st.err)
			return
		}
		r.stopOnce.Do(func() {
			r.failed = st.ID
			close(r.stopped)
		})
		r.settle(st, StatusFailed, st.err)
	}
}

// settle makes a step's status final and writes its plan_step line.
func (r *runner) settle(st *stepState, status string, errText *string) {
	st.status, st.err = status, errText
	var outBytes *int
	if st.output != nil {
		n := len(*st.output)
		outBytes = &n
	}
	r.env.Lines.EmitUnder(r.planLine, trace.PlanStep{PlanID: r.plan.ID, StepID: st.ID, Kind: st.Kind, Status: status,
		Attempts: st.attempts, DurationMS: st.duration.Milliseconds(), OutputBytes: outBytes, Error: errText, CallIDs: nonNil(st.callIDs)})
	if t := r.env.Task; t != nil && t.Status != nil {
		k := 0
		for _, s := range r.steps {
			if s.status != "" {
				k++
			}
		}
		t.Status(fmt.Sprintf("plan %s: %d of %d steps settled", r.plan.ID, k, len(r.steps)))
	}
}

// attempt is what one attempt gave.
type attempt struct {
	ok        bool
	output    *string
	err       string
	retryable bool
}

// dispatch runs a dispatched step: references substituted, then its
// attempts. It leaves status success, or "" with err set for a failure
// the caller settles by on_error.
func (r *runner) dispatch(ctx context.Context, st *stepState) {
	input := st.Input
	if st.Kind != KindShell {
		in, missing, err := substitute(st.Input, st.Kind, func(ref Ref) (string, bool) {
			d := r.byID[ref.Step]
			if ref.Field == "status" {
				return d.status, true
			}
			if d.output == nil {
				return "", false
			}
			return *d.output, true
		})
		switch {
		case missing != nil:
			d := r.byID[missing.Step]
			e := fmt.Sprintf("step %s: $%s.output has no value: step %s ended %s without output", st.ID, missing.Step, missing.Step, d.status)
			st.err = &e
			return
		case err != nil:
			e := fmt.Sprintf("step %s: its input cannot be read: %v", st.ID, err)
			st.err = &e
			return
		}
		input = in
	}
	for n := 1; n <= st.Retries+1; n++ {
		st.attempts = n
		a := r.attempt(ctx, st, input, n)
		st.output = a.output
		if a.ok {
			st.status, st.err = StatusSuccess, nil
			return
		}
		e := a.err
		st.err = &e
		if ctx.Err() != nil {
			e := reasonCanceled
			st.err = &e
			return
		}
		if !a.retryable || r.isStopped() || n > st.Retries {
			return
		}
		t := time.NewTimer(RetryPause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			e := reasonCanceled
			st.err = &e
			return
		case <-r.stopped:
			t.Stop()
			return
		}
	}
}

// attempt runs one attempt of a step.
func (r *runner) attempt(ctx context.Context, st *stepState, input json.RawMessage, n int) attempt {
	if st.Kind == KindCapsule {
		return r.capsuleAttempt(ctx, st, input, n)
	}
	t := r.env.Task
	id := fmt.Sprintf("%s.%s.%d", t.ID, st.ID, n)
	st.callIDs = append(st.callIDs, id)
	tc := *t
	tc.ID, tc.ParentID = id, st.startLine
	tc.Plan = &trace.PlanCall{PlanID: r.plan.ID, StepID: st.ID, Attempt: n}
	call := tools.Call{Name: st.Tool, Entry: st.Entry, Task: &tc}
	if st.Kind == KindShell {
		e, err := r.env.Inv.Lookup(st.Argv[0])
		if err != nil {
			return attempt{err: err.Error()}
		}
		call.Name, call.Entry, call.Argv, call.Line = st.Argv[0], e, st.Argv, st.Shell
	} else {
		in := string(input)
		call.Input = wit.ToolInput{Data: &in}
	}
	o := r.env.Inv.Call(ctx, call)
	r.mu.Lock()
	defer r.mu.Unlock()
	// A call the gate stopped ran nothing: it counts only in calls_denied
	// (none for a wait the task's cancel ended), and is not retried.
	if o.Denied != "" || o.Canceled {
		if o.Denied != "" {
			r.counts.CallsDenied++
		}
		msg := o.Err.Error()
		if st.Kind == KindShell {
			return attempt{err: msg}
		}
		return attempt{err: msg, output: &msg}
	}
	if st.Kind == KindShell {
		sh := o.Shell
		if o.Err != nil || sh == nil {
			r.counts.ShellCalls++
			msg := "the command did not run"
			if o.Err != nil {
				msg = o.Err.Error()
			}
			return attempt{err: msg}
		}
		r.counts.ShellCalls++
		out := sh.Stdout
		a := attempt{output: &out, retryable: true}
		switch {
		case sh.Ending != "" && !strings.Contains(sh.Ending, "task ended"):
			a.err = "the command" + sh.Ending
		case sh.Line.ExitCode == 0 && sh.Ending == "":
			a.ok = true
		default:
			a.err = fmt.Sprintf("exit code %d", sh.Line.ExitCode)
			if sh.Stderr != "" {
				a.err += ": " + tail(sh.Stderr, 2<<10)
			}
		}
		return a
	}
	r.counts.ToolCalls++
	if o.Err != nil {
		r.counts.ToolErrors++
		msg := o.Err.Error()
		// A call refused before the tool ran (the gate) is not retried.
		return attempt{err: msg, output: &msg, retryable: !refusedBeforeRun(msg)}
	}
	text := o.Text
	if r.env.Cut != nil {
		text = r.env.Cut(id, text)
	}
	return attempt{ok: true, output: &text}
}

// refusedBeforeRun reports a call the policy gate or the operator did not
// let run (E-RUN-092, E-RUN-093): a retry would be refused the same way.
func refusedBeforeRun(msg string) bool {
	return strings.Contains(msg, "[E-RUN-092]") || strings.Contains(msg, "[E-RUN-093]")
}

func (r *runner) capsuleAttempt(ctx context.Context, st *stepState, input json.RawMessage, n int) attempt {
	var in struct{ Task string }
	json.Unmarshal(input, &in)
	if r.env.Capsules == nil {
		return attempt{err: NoRoost}
	}
	// A capsule step passes the gate a delegate-task call passes, so a plan
	// reaches no sub-capsule a direct call could not (docs/policy.md); once
	// per step, before its first attempt, as every step.
	if t := r.env.Task; r.env.Inv != nil && t != nil && n == 1 {
		gin, _ := json.Marshal(struct {
			Capsule string `json:"capsule"`
			Version string `json:"version"`
			Task    string `json:"task"`
		}{st.Bare, st.Version, in.Task})
		planID, stepID := r.plan.ID, st.ID
		if s := r.env.Inv.Gate(ctx, t, tools.GateRequest{Name: "delegate-task", ToolName: "delegate-task", Kind: tools.KindRuntime,
			GateView: tools.GateView{Input: string(gin)}, ToolCallID: fmt.Sprintf("%s.%s.%d", t.ID, st.ID, n),
			PlanID: &planID, StepID: &stepID, ParentID: st.startLine}); s != nil {
			if s.By != "" {
				r.mu.Lock()
				r.counts.CallsDenied++
				r.mu.Unlock()
			}
			msg := s.Err.Error()
			return attempt{err: msg, output: &msg}
		}
	}
	res := r.env.Capsules.RunCapsule(ctx, CapsuleAttempt{PlanID: r.plan.ID, StepID: st.ID, Attempt: n,
		Capsule: st.Capsule, Bare: st.Bare, Version: st.Version, Task: in.Task,
		TaskID: r.env.Task.TaskID, ContextID: r.env.Task.ContextID, ParentID: st.startLine, InFlight: r.env.Task.InFlight})
	if res.DelegationID != "" {
		st.callIDs = append(st.callIDs, res.DelegationID)
	}
	return attempt{ok: res.OK, output: res.Output, err: res.Reason, retryable: res.Retryable}
}

// tail is the last n bytes of s, from a character boundary.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// cut bounds s to n bytes on a character boundary; whole is false when it
// was cut.
func cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, true
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], false
}
