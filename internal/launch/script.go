package launch

import (
	"context"
	"os"
	"path/filepath"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/hostapi"
	"github.com/murmur-go/murmur/internal/script"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

// scriptRun is a script capsule's part of a run: its component, compiled
// before the session exists, run once with the murmur:* host interfaces
// over the session's tool inventory.
type scriptRun struct {
	comp *wasmhost.Component
	inv  *tools.Inventory
	host *hostapi.Imports
}

func (k *scriptRun) name() string { return "script" }

// open reads the task (a delegated child's came from its parent) and
// compiles (or loads from the cache) the component and every tool: one
// that cannot run is refused without leaving a session behind.
func (k *scriptRun) open(_ context.Context, r *run) error {
	p := r.p
	if err := p.needNetNS(); err != nil {
		return err
	}
	task, fromParent := r.dl.scriptTask()
	if !fromParent {
		var err error
		if task, err = readTask(r.opts.Task, os.Stdin, r.opts.Stderr); err != nil {
			return err
		}
	}
	r.task = task
	eng, err := p.newEngine(r.opts)
	if err != nil {
		return err
	}
	r.eng = eng
	what := p.ComponentName
	if p.ManifestDir != "" {
		what = filepath.Join(p.ManifestDir, p.ComponentName)
	}
	co := wasmhost.CompileOptions{Name: what, Digest: p.ComponentDigest}
	if p.installed != nil {
		co.Name = p.installed.Ref()
	}
	if k.comp, err = script.CompileDigest(eng, what, co, p.LoadComponent); err != nil {
		return err
	}
	r.pre = tools.Preload(eng, p.Manifest, p.Tools)
	return nil
}

func (k *scriptRun) start(r *run, sess *session.Session, rec *trace.Recorder) error {
	p := r.p
	rec.Emit(r.dl.sessionStart(trace.SessionStart{CapsuleName: sess.Name, CapsuleVersion: sess.Version, Kind: "script",
		ToolsDeclared: p.ToolNames(), EffectiveGrants: p.GrantsJSON}, p))
	return nil
}

// serve reports the session ready, builds its inventory (with
// delegate-task for a parent) and runs the component to its end.
func (k *scriptRun) serve(ctx context.Context, r *run) (ending, error) {
	p, sess, dl := r.p, r.sess, r.dl
	r.ready(nil)
	var err error
	k.inv, err = tools.Build(p.toolsEnv(&tools.Env{Engine: r.eng, Session: sess, Lookup: p.lookup, Logger: r.opts.Log, Preloaded: r.pre}),
		p.Manifest, p.Grants, p.Tools)
	if err != nil {
		return ending{}, err
	}
	rt, err := dl.scriptRuntime(p, sess, r.rec, r.opts)
	if err == nil && rt != nil {
		err = k.inv.Add(rt.Tool())
	}
	if err != nil {
		return ending{}, err
	}
	r.watchLifeline(r.cancel)
	if k.host, err = hostapi.New(hostapi.Config{Manifest: p.Manifest, Tools: k.inv, Grants: &p.Grants, Stores: p.Stores,
		Session: sess, Lookup: p.lookup}); err != nil {
		return ending{}, diag.Wrap(err, "E-IO-057", "the murmur:* host interfaces cannot be set up for this run")
	}
	imports := hostImports{k.host}
	res := script.Run(ctx, script.Config{
		Engine: r.eng, Component: k.comp, ComponentName: p.ComponentName,
		Session: sess, Recorder: r.rec, Limits: p.Manifest.Capabilities.EffLimits(),
		EnvAllow: p.Manifest.Capabilities.Env.Allow, Lookup: p.lookup,
		NetworkAllow: p.Grants.Capsule.NetworkAllow,
		Imports:      imports,
	})
	e := ending{Result: Result{SessionID: sess.ID, Name: sess.Name, Version: sess.Version, RecordsDir: sess.RecordsDir,
		Ending: res.Ending, Reason: res.Reason, Answer: filepath.Join(sess.Workdir, filepath.FromSlash(AnswerFile))},
		resultDir: sess.Workdir}
	if s, ok := signalled(ctx); ok {
		e.Signal, e.Ending, e.Reason = s, trace.EndFailed, s.Reason()
	}
	if tf := traceFailure(ctx); tf != nil && e.Signal == nil {
		e.Ending, e.Reason, e.traceFailed = trace.EndFailed, tf.Error(), tf
	}
	e.flush = e.Signal == nil
	e.Refused, e.EgressLog = r.egress.count(nil)
	if e.Signal == nil && e.Ending != trace.EndOK && e.traceFailed == nil {
		e.Err = endingError(sess, e.Result)
	}
	dl.endScript(e.Ending)
	return e, nil
}

// close runs after session_end: an invoke still running then is
// refused its line.
func (k *scriptRun) close() {
	if k.host != nil {
		k.host.Close() // waits for invokes still running
	}
	if k.inv != nil {
		k.inv.Close()
	}
	if k.comp != nil {
		k.comp.Close()
	}
}

// hostImports grants internal/hostapi's murmur:* interfaces to a run,
// recording through the run's recorder (trace lines and OTel spans).
type hostImports struct{ s *hostapi.Imports }

func (h hostImports) Define(host *wasmhost.Host, rec *trace.Recorder) error {
	h.s.Register(host, rec)
	return nil
}

// endingError is the diagnostic for a run that did not end ok.
func endingError(sess *session.Session, res Result) error {
	codes := map[string]string{
		trace.EndTrapped:          "E-RUN-010",
		trace.EndDeadlineExceeded: "E-RUN-011",
		trace.EndResourceLimit:    "E-RUN-012",
		trace.EndFailed:           "E-RUN-013",
	}
	reason := res.Reason
	if reason == "" {
		reason = "no reason given"
	}
	return diag.New(codes[res.Ending], "%s@%s ended %s: %s", sess.Name, sess.Version, res.Ending, reason).
		WithHint("its stderr is in %s; run 'mur trace show %s' (and 'mur explain %s')", filepath.Join(sess.RecordsDir, "logs", script.StderrLog), sess.ID, codes[res.Ending])
}
