package delegate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/plan"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
	"github.com/murmur-go/murmur/internal/trace"
)

// PollEvery is how often a plan capsule step asks its child for its task.
var PollEvery = 500 * time.Millisecond

// stepState is what a plan step decided about its delegation: the outcome
// the launcher records once the child has exited.
type stepState struct {
	done    chan struct{} // closed when the step has returned
	outcome string
	// taskID is the delegating task; returned (under Runtime.mu) is set
	// once the step has returned: until then the delegation is in the
	// task's InFlight list (task_canceled.delegation_ids).
	taskID   string
	returned bool
}

// RunCapsuleStep runs one attempt of a plan's capsule step
// (plan.CapsuleRunner): POST /spawn with the session's credential, the
// child launched as delegate-task launches one (but with no completion
// handle), its task delivered, the answer read with GetTask once the task
// ends, bounded by the delegation deadline; the child is ended after the
// step returns, without waiting for it. A cancelled ctx returns within
// about a second: the wait watches it, not only the poll.
func (r *Runtime) RunCapsuleStep(ctx context.Context, a plan.CapsuleAttempt) plan.CapsuleResult {
	d := &delegation{id: ids.New(ids.Delegation), taskID: "", contextID: a.ContextID,
		full: a.Capsule, bare: a.Bare, version: a.Version, decided: make(chan struct{}),
		step: &stepState{done: make(chan struct{}), taskID: a.TaskID}}
	pc := trace.PlanCall{PlanID: a.PlanID, StepID: a.StepID, Attempt: a.Attempt}
	res := plan.CapsuleResult{DelegationID: d.id, Retryable: true}
	start := time.Now()
	line := func(outcome, reason string) {
		var rp *string
		if reason != "" {
			rp = &reason
		}
		r.cfg.Recorder.EmitUnder(a.ParentID, trace.Delegation{DelegationID: d.id, Capsule: d.bare, Version: d.version,
			ChildSessionID: d.sessionID, DurationMS: time.Since(start).Milliseconds(), Outcome: outcome, Reason: rp, PlanCall: pc})
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		res.Reason, res.DelegationID = "this session is ending and starts no delegation", ""
		return res
	}
	tp := r.cfg.Recorder.OpenDelegation(a.ParentID, trace.DelegationStart{DelegationID: d.id, Capsule: d.bare, Version: d.version, PlanCall: pc})
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	g, err := r.client.Spawn(sctx, r.cfg.Credential, roostapi.SpawnRequest{Name: d.full, Version: d.version})
	cancel()
	if err != nil {
		msg := err.Error()
		var re *roostapi.Error
		if errors.As(err, &re) {
			msg = re.Message
		}
		line("refused", msg)
		res.Reason = msg
		return res
	}
	d.tApproved = time.Now()
	r.mu.Lock()
	r.dels[d.id] = d
	r.mu.Unlock()
	if err := r.launch(ctx, d, g, a.Task, tp); err != nil {
		out := fmt.Sprintf("%s@%s could not be started: %s", d.bare, d.version, err)
		r.mu.Lock()
		delete(r.dels, d.id)
		d.ending = "launch"
		r.mu.Unlock()
		close(d.decided)
		close(d.step.done)
		line("failed", out)
		res.Output, res.Reason = &out, out
		return res
	}
	r.cfg.Recorder.EmitUnder(a.ParentID, trace.DelegationStart{DelegationID: d.id, Capsule: d.bare, Version: d.version,
		ChildSessionID: d.sessionID, ChildWorkdir: d.childDir, WorkdirSnapshot: d.snapshot, PlanCall: pc})
	close(d.decided)
	if a.InFlight != nil {
		a.InFlight(r.InFlight(a.TaskID))
	}

	outcome, reason, answer := r.awaitStep(ctx, d)
	d.step.outcome = outcome
	if answer != nil {
		kept := r.cutAnswer(d.id, *answer)
		res.Output = &kept
	}
	res.OK, res.Reason = outcome == StatusOK, reason
	line(outcome, reason)
	r.mu.Lock()
	d.step.returned = true
	r.mu.Unlock()
	if a.InFlight != nil && ctx.Err() == nil {
		a.InFlight(r.InFlight(a.TaskID))
	}
	close(d.step.done)
	// The step has returned: end the child as any delegation is ended
	// (SIGTERM to its group, the grace, SIGKILL), without waiting.
	r.mu.Lock()
	if d.ending == "" {
		d.ending = "plan step returned"
	}
	r.mu.Unlock()
	go endChildren([]*delegation{d})
	return res
}

// awaitStep waits for the child's task to end: GetTask every PollEvery,
// bounded by the delegation deadline from the moment the child held its
// task, watching the task's cancel and the child's exit between polls.
func (r *Runtime) awaitStep(ctx context.Context, d *delegation) (outcome, reason string, answer *string) {
	deadline := time.NewTimer(r.cfg.Deadline)
	defer deadline.Stop()
	if d.script {
		select {
		case <-d.exitedCh:
			// A script child's exit is its outcome: 0 ok, 1 error.
			text := ""
			if b, err := os.ReadFile(filepath.Join(d.recordsDir, "out", "result.txt")); err == nil {
				text = string(b)
			}
			switch code := d.cmd.ProcessState.ExitCode(); code {
			case 0:
				return StatusOK, "", &text
			case 1:
				return StatusError, "the sub-capsule's task ended failed: " + clip1K(strings.TrimSpace(text)), &text
			}
			return StatusCrashed, "the sub-capsule exited before its answer was read (" + d.exitStatus + ")", nil
		case <-ctx.Done():
			return StatusTerminated, ReasonCancelled, nil
		case <-deadline.C:
			return StatusTerminated, r.stepDeadlineReason(), nil
		}
	}
	door := d.door()
	tick := time.NewTicker(PollEvery)
	defer tick.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		raw, err := door.GetTask(pctx, d.childTask)
		cancel()
		if err == nil {
			if o, why, ans, done := taskEnded(raw); done {
				return o, why, ans
			}
		} else {
			var rpcErr *doorapi.Error
			if errors.As(err, &rpcErr) {
				return StatusError, "the sub-capsule's door answered GetTask with an error: " + rpcErr.Error(), nil
			}
		}
		select {
		case <-ctx.Done():
			return StatusTerminated, ReasonCancelled, nil
		case <-deadline.C:
			return StatusTerminated, r.stepDeadlineReason(), nil
		case <-d.exitedCh:
			return StatusCrashed, "the sub-capsule exited before its answer was read (" + d.exitStatus + tailDetail(d) + ")", nil
		case <-tick.C:
		}
	}
}

func (r *Runtime) stepDeadlineReason() string {
	return fmt.Sprintf("no answer reached this plan step within %ds (lifecycle.delegation_deadline_secs)", int(r.cfg.Deadline/time.Second))
}

// taskEnded reads a GetTask answer: done once the task is COMPLETED,
// FAILED, CANCELED or REJECTED, with the answer (the response artifact's
// text parts, else the status message's).
func taskEnded(raw json.RawMessage) (outcome, reason string, answer *string, done bool) {
	type part struct {
		Text *string `json:"text"`
	}
	var t struct {
		Status struct {
			State   string `json:"state"`
			Message *struct {
				Parts []part `json:"parts"`
			} `json:"message"`
		} `json:"status"`
		Artifacts []struct {
			ArtifactID string `json:"artifactId"`
			Name       string `json:"name"`
			Parts      []part `json:"parts"`
		} `json:"artifacts"`
	}
	if json.Unmarshal(raw, &t) != nil {
		return "", "", nil, false
	}
	join := func(ps []part) string {
		var b strings.Builder
		for _, p := range ps {
			if p.Text != nil {
				b.WriteString(*p.Text)
			}
		}
		return b.String()
	}
	status := ""
	if t.Status.Message != nil {
		status = join(t.Status.Message.Parts)
	}
	text, found := status, false
	for _, a := range t.Artifacts {
		if a.ArtifactID == "response" || a.Name == "response" {
			text, found = join(a.Parts), true
		}
	}
	_ = found
	state := strings.TrimPrefix(t.Status.State, "TASK_STATE_")
	switch strings.ToUpper(state) {
	case "COMPLETED":
		return StatusOK, "", &text, true
	case "FAILED", "CANCELED", "CANCELLED", "REJECTED":
		word := strings.ToLower(state)
		if word == "cancelled" {
			word = "canceled"
		}
		return StatusError, fmt.Sprintf("the sub-capsule's task ended %s: %s", word, clip1K(status)), &text, true
	}
	return "", "", nil, false
}

func clip1K(s string) string {
	if len(s) <= 1<<10 {
		return s
	}
	n := 1 << 10
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// cutAnswer bounds a step's answer to MaxOutcomeBytes, marked " […]" and
// followed by the cut line; the whole is kept at delegations/<id>.txt in
// the runtime dir.
func (r *Runtime) cutAnswer(id, text string) string {
	if len(text) <= MaxOutcomeBytes {
		return text
	}
	kept := MaxOutcomeBytes
	for kept > 0 && !utf8.RuneStart(text[kept]) {
		kept--
	}
	where := fmt.Sprintf("the whole answer is delegations/%s.txt in the runtime directory", id)
	dir := filepath.Join(r.cfg.RuntimeDir, "delegations")
	if err := os.MkdirAll(dir, 0o700); err != nil || os.WriteFile(filepath.Join(dir, id+".txt"), []byte(text), 0o400) != nil {
		where = "the whole answer could not be kept in the runtime directory"
	}
	return fmt.Sprintf("%s […]\n[cut at %d of %d bytes; %s]", text[:kept], kept, len(text), where)
}

// stepChildExited writes a plan step's child's completion.json once it has
// exited: reported by the launcher, with the outcome the step assigned.
func (r *Runtime) stepChildExited(d *delegation) {
	<-d.step.done
	r.mu.Lock()
	delete(r.dels, d.id)
	r.mu.Unlock()
	status := d.step.outcome
	if status == "" {
		status = StatusCrashed
	}
	rec := Record{Completion: Completion{DelegationID: d.id, CapsuleName: d.full, CapsuleVersion: d.version, SessionID: d.sessionID,
		Workdir: d.childDir, DurationMS: time.Since(d.started).Milliseconds(), Status: status}, ReportedBy: "launcher", Delivered: true}
	if status == StatusCrashed || status == StatusTerminated {
		rec.Detail = d.exitStatus + tailDetail(d)
	}
	if d.recordsDir != "" {
		if err := WriteRecord(d.recordsDir, rec); err != nil {
			r.cfg.Log.Warn("the launcher's completion record could not be written", "delegation_id", d.id, "error", err)
		}
	}
}
