package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/murmur-go/murmur/internal/delegate"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/plan"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/trace"
)

// spawnWiring is a session's part in delegation (docs/delegation.md): as a
// child (the approval it was launched under, its spawner handle and
// lifeline) and as a parent (the delegate-task runtime). Every method is a
// no-op on a session that takes no part.
type spawnWiring struct {
	roostURL    string
	spawnAllow  []string
	launched    *delegate.Launched
	spawner     *delegate.Spawner
	lifeline    *os.File
	formationID string // "" for a session in no formation
	// member is a launcher-started member's channel line 1 (nil
	// otherwise); formLifeline its formation lifeline.
	member       *formation.Line1
	formLifeline *os.File
	cred         roostapi.Credential
	registered   bool
	rt           *delegate.Runtime
	windingDown  atomic.Bool
	// tasks maps a running task to its context and traceparent, for the
	// delegate-task call made from it.
	tasks *taskContexts
	// republishHint is said under a spawn_allow refusal when the published
	// copy mur-roost judges differs from the manifest on disk.
	republishHint string
}

// openDelegation reads what delegation needs before any session exists:
// the lifeline and the spawner handle (E-RUN-020), the approval on stdin,
// and MURMUR_ROOST_URL for a session that must register (E-RUN-019).
func openDelegation(p *Plan, opts Options) (*spawnWiring, error) {
	w := &spawnWiring{spawnAllow: p.Grants.Capsule.SpawnAllow, tasks: &taskContexts{m: map[string]taskContext{}}}
	var err error
	if w.formationID, err = delegate.ReadFormation(p.lookup); err != nil {
		return nil, err
	}
	if v, _ := p.lookup(delegate.EnvFormationLifeline); strings.TrimSpace(v) != "" {
		// ReadFormation checked it: an open pipe's read end, 3 or above.
		if fd, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			w.formLifeline = os.NewFile(uintptr(fd), "formation-lifeline")
		}
	}
	w.member = p.member
	if w.lifeline, err = delegate.OpenLifeline(p.lookup); err != nil {
		return nil, err
	}
	if w.spawner, err = delegate.ReadSpawner(p.lookup); err != nil {
		return nil, err
	}
	if opts.SpawnApprovalStdin {
		in := opts.Stdin
		if in == nil {
			in = os.Stdin
		}
		if w.launched, err = delegate.ReadLaunched(in); err != nil {
			return nil, err
		}
		if err := p.raiseToParent(w.launched.ParentTier); err != nil {
			return nil, err
		}
	}
	w.roostURL = delegate.RoostURL(p.lookup)
	if (len(w.spawnAllow) > 0 || w.launched != nil) && w.roostURL == "" {
		return nil, diag.New("E-RUN-019", "this capsule declares capabilities.spawn.allow and MURMUR_ROOST_URL is not set; delegation requires mur-roost").
			WithHint("start mur-roost and set MURMUR_ROOST_URL=http://127.0.0.1:7700")
	}
	w.republishHint = republishCheck(p, opts.Stderr)
	return w, nil
}

// operatorToken is the operator token of a door with
// network.authentication (docs/formations.md, door authentication): the one
// the parent's runtime minted and handed in the approval line for a
// delegated child, so the parent can deliver the task and reach the door
// after; else a new one, made at launch.
func (w *spawnWiring) operatorToken() (string, error) {
	if w.launched != nil && w.launched.DoorToken != "" {
		return w.launched.DoorToken, nil
	}
	return doorapi.NewOperatorToken()
}

// parentCopy is MURMUR.md's workdir-snapshot line of a child that has one.
func (w *spawnWiring) parentCopy() *session.ParentCopy {
	if w.launched == nil || w.launched.Snapshot == nil {
		return nil
	}
	return &session.ParentCopy{Files: w.launched.Snapshot.Files, Bytes: w.launched.Snapshot.Bytes}
}

func (w *spawnWiring) spawnedBy() string {
	if w.spawner != nil {
		return w.spawner.SessionID
	}
	if w.launched != nil {
		return w.launched.SpawnedBy // a child with no handle (a plan step's)
	}
	return ""
}

// sessionStart adds the delegation fields to session_start: spawned_by and
// delegation_id on a child, delegate-task in tools_declared on a parent.
func (w *spawnWiring) sessionStart(s trace.SessionStart, p *Plan) trace.SessionStart {
	if w.spawner != nil {
		by := w.spawner.SessionID
		s.SpawnedBy, s.DelegationID = &by, w.spawner.DelegationID
	} else if w.launched != nil && w.launched.SpawnedBy != "" {
		by := w.launched.SpawnedBy
		s.SpawnedBy, s.DelegationID = &by, w.launched.DelegationID
	}
	if len(w.spawnAllow) > 0 {
		s.ToolsDeclared = append(s.ToolsDeclared, delegate.ToolName)
	}
	if w.formationID != "" {
		s.FormationID = w.formationID
	}
	if m := w.member; m != nil {
		entry, callees := m.Entry, []string{}
		for _, c := range m.Calls {
			callees = append(callees, c.Name)
		}
		s.FormationMember, s.FormationEntry, s.FormationCallees = m.Member, &entry, &callees
	}
	if w.launched != nil {
		s.EffectiveGrants = withParentWorkdir(s.EffectiveGrants, w.launched.Snapshot, p.Containment.Achieved)
	}
	return s
}

// register announces the session at mur-roost when it must: before the
// --json line, so a parent's launcher sees a registered child.
func (w *spawnWiring) register(ctx context.Context, sess *session.Session) error {
	if len(w.spawnAllow) == 0 && w.launched == nil {
		return nil
	}
	var approval roostapi.Approval
	if w.launched != nil {
		approval = w.launched.Approval
	}
	cred, err := delegate.Register(ctx, w.roostURL, roostapi.RegisterRequest{SessionID: sess.ID, Name: sess.Name, Version: sess.Version}, approval)
	if err != nil {
		return err
	}
	w.cred, w.registered = cred, true
	return nil
}

// runtime makes the delegate-task runtime of a session whose spawn.allow
// is non-empty; nil otherwise.
func (w *spawnWiring) runtime(p *Plan, sess *session.Session, rec *trace.Recorder, doorURL string, opts Options) *delegate.Runtime {
	if len(w.spawnAllow) == 0 || !w.registered {
		return nil
	}
	bin := p.murBinary()
	g := p.Grants.Capsule
	w.rt = delegate.New(delegate.Config{RoostURL: w.roostURL, Credential: w.cred,
		SessionID: sess.ID, Name: sess.Name, Version: sess.Version, RecordsDir: sess.RecordsDir, RuntimeDir: sess.RuntimeDir,
		DoorURL: doorURL, SpawnAllow: g.SpawnAllow, WorkdirSnapshot: g.WorkdirSnapshot, EnvAllow: g.EnvAllow,
		Lookup: p.lookup, MurBinary: bin, Deadline: delegate.Deadline(p.Manifest, p.lookup),
		Snapshot: p.workdirSnapshot(sess), ChildEnvAllow: p.childEnvAllow, Tier: p.Containment.Achieved, FormationID: w.formationID, Recorder: rec, Log: opts.Log,
		RefusalHint: w.republishHint})
	return w.rt
}

func (w *spawnWiring) completions() door.CompletionHandler {
	if w.rt == nil {
		return nil
	}
	return w.rt
}

// runner notes each task's context for the delegate-task calls it makes.
func (w *spawnWiring) runner(loop door.Runner) door.Runner {
	if w.rt == nil {
		return loop
	}
	return door.RunnerFunc(func(ctx context.Context, t *door.Task, ev door.Events) door.Outcome {
		w.tasks.set(t.ID, taskContext{contextID: t.ContextID, traceparent: t.TraceParent})
		defer w.tasks.drop(t.ID)
		return loop.RunTask(ctx, t, ev)
	})
}

// watchLifeline winds the session down on EOF as a first SIGTERM does,
// after spawner_ended; EOF once a wind-down has begun writes nothing.
func (w *spawnWiring) watchLifeline(rec *trace.Recorder, bootstrapLog string, agent bool, endRun context.CancelCauseFunc) {
	if w.formLifeline != nil {
		// The formation's end: formation_ended first, then an agent winds
		// down as a first SIGTERM does and exits 0; a script member ends as
		// on SIGTERM.
		delegate.WatchLifeline(w.formLifeline, bootstrapLog, func() {
			if w.windingDown.Load() {
				return
			}
			rec.Emit(trace.FormationEnded{FormationID: w.formationID})
			if agent {
				endRun(errFormationEnded)
			} else {
				endRun(&Signalled{Signal: syscall.SIGTERM})
			}
		})
	}
	if w.lifeline == nil {
		return
	}
	delegate.WatchLifeline(w.lifeline, bootstrapLog, func() {
		if w.windingDown.Load() {
			return
		}
		rec.Emit(trace.SpawnerEnded{})
		endRun(&Signalled{Signal: syscall.SIGTERM})
	})
}

// errFormationEnded is the cause of an agent member's run ended by its
// formation lifeline.
var errFormationEnded = errors.New("the formation ended")

// formationEnded reports whether ctx ended because the formation did.
func formationEnded(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errFormationEnded)
}

// close ends the children still running and deregisters, best effort.
func (w *spawnWiring) close(status string) {
	outcome := roostapi.StatusComplete
	if status != trace.EndOK {
		outcome = roostapi.StatusFailed
	}
	switch {
	case w.rt != nil:
		w.rt.Close(outcome)
	case w.registered:
		delegate.Deregister(w.roostURL, w.cred, outcome, nil)
	}
}

// reportFrom reports a delegated child's completion with resultDir's
// out/result.txt as its result, when that is a regular file.
func (w *spawnWiring) reportFrom(sess *session.Session, resultDir, status string, opts Options) {
	if w.spawner == nil {
		return
	}
	st := delegate.StatusOK
	if status != trace.EndOK {
		st = delegate.StatusError
	}
	rec := delegate.Completion{CapsuleName: sess.Name, CapsuleVersion: sess.Version, SessionID: sess.ID, Status: st,
		Workdir: sess.Workdir, DurationMS: time.Since(sess.Started).Milliseconds()}
	if p := filepath.Join(resultDir, "out", "result.txt"); isRegular(p) {
		rec.ResultPath = p
	}
	delegate.Report(w.spawner, sess.RecordsDir, rec, opts.Stderr, opts.Log)
}

func isRegular(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && st.Mode().IsRegular()
}

type taskContext struct{ contextID, traceparent string }

// taskContexts is the running tasks' contexts, by task id.
type taskContexts struct {
	mu sync.Mutex
	m  map[string]taskContext
}

func (t *taskContexts) set(id string, c taskContext) {
	t.mu.Lock()
	t.m[id] = c
	t.mu.Unlock()
}

func (t *taskContexts) drop(id string) {
	t.mu.Lock()
	delete(t.m, id)
	t.mu.Unlock()
}

func (t *taskContexts) get(id string) taskContext {
	if t == nil {
		return taskContext{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

// A script capsule's part in delegation (docs/delegation.md):
// as a parent it has no door, so its runtime opens a completion listener
// of its own; as a child its task came on standard input and its answer is
// its work folder's out/result.txt.

// scriptRuntime makes a script parent's delegate-task runtime; nil when
// spawn.allow is empty or the session is not registered.
func (w *spawnWiring) scriptRuntime(p *Plan, sess *session.Session, rec *trace.Recorder, opts Options) (*delegate.Runtime, error) {
	if len(w.spawnAllow) == 0 || !w.registered {
		return nil, nil
	}
	bin := p.murBinary()
	g := p.Grants.Capsule
	rt, err := delegate.NewScript(delegate.Config{RoostURL: w.roostURL, Credential: w.cred,
		SessionID: sess.ID, Name: sess.Name, Version: sess.Version, RecordsDir: sess.RecordsDir, RuntimeDir: sess.RuntimeDir,
		SpawnAllow: g.SpawnAllow, WorkdirSnapshot: g.WorkdirSnapshot, EnvAllow: g.EnvAllow,
		Lookup: p.lookup, MurBinary: bin, Deadline: delegate.Deadline(p.Manifest, p.lookup),
		Snapshot: p.workdirSnapshot(sess), ChildEnvAllow: p.childEnvAllow, Tier: p.Containment.Achieved, FormationID: w.formationID, Recorder: rec, Log: opts.Log})
	if err != nil {
		return nil, err
	}
	w.rt = rt
	return rt, nil
}

// scriptTask is a delegated script child's task: the one its parent wrote
// on standard input, which goes into its task.md.
func (w *spawnWiring) scriptTask() (string, bool) {
	if w.launched == nil {
		return "", false
	}
	return w.launched.Task, true
}

// endScript ends what a script parent's run leaves running (the task ended
// first: ending is its session_end exit_status) and deregisters.
func (w *spawnWiring) endScript(ending string) {
	w.windingDown.Store(true)
	if w.rt != nil {
		w.rt.EndScript(ending)
	}
	w.close(ending)
}

// capsuleSteps runs a plan's capsule steps for this session: the seam
// where they meet delegation (docs/plans.md "Capsule steps"). A policy gate
// for capsule steps (gated as delegate-task) belongs at the top of
// RunCapsule, before anything reaches mur-roost.
func (w *spawnWiring) capsuleSteps(p *Plan) plan.CapsuleRunner {
	return &capsuleSteps{w: w, p: p}
}

type capsuleSteps struct {
	w *spawnWiring
	p *Plan
}

func (c *capsuleSteps) RunCapsule(ctx context.Context, a plan.CapsuleAttempt) plan.CapsuleResult {
	if strings.TrimSpace(c.w.roostURL) == "" {
		return plan.CapsuleResult{Reason: plan.NoRoost}
	}
	if c.w.rt == nil {
		return plan.CapsuleResult{Reason: "this capsule holds no spawn credential: it registers with mur-roost only when its capabilities.spawn.allow names a capsule"}
	}
	// The step reads its answer after the child's task completes: an agent
	// child that exits then could not be asked. Checked where `mur run
	// --capsule` resolves it, before a spawn slot is taken; a child the
	// store does not hold is left to mur-roost.
	if m, err := c.p.childManifest(a.Capsule, a.Version, "lifecycle.after_task"); err == nil && m.IsAgent() && m.Lifecycle.AfterTaskMode() != "sleep" {
		return plan.CapsuleResult{Reason: fmt.Sprintf("%s@%s does not declare lifecycle.after_task: sleep; a capsule step reads its answer with GetTask after the task completes, so the sub-capsule has to still be listening", a.Capsule, a.Version)}
	}
	return c.w.rt.RunCapsuleStep(ctx, a)
}
