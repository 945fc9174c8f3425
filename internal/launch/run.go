package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/hooks"
	"github.com/murmur-go/murmur/internal/hostapi"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/sandbox"
	"github.com/murmur-go/murmur/internal/script"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/telemetry"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

// HardExitAfter bounds how long a run may take to end once its context is
// cancelled by a signal. The ordinary path ends within an epoch tick (the
// engine stops the guest and returns a CancelledError); only a call the
// engine cannot interrupt is cut short by the fallback, which records the
// session's end and exits the process.
const HardExitAfter = time.Second

// Options are a run's inputs besides the plan.
type Options struct {
	// Task is --task: a file when one exists at that path, else the text.
	Task string
	// Workdir is --workdir; "" picks the session default.
	Workdir string
	// Stderr receives the warnings of the run (one line each).
	Stderr io.Writer
	// Ready, when set, is called once the session is ready to be observed:
	// session_start written and the running record in place (the --json
	// line).
	Ready func(Ready)
	// Log receives what is worth a log line but not a trace line; nil is
	// slog.Default().
	Log *slog.Logger
	// Exit ends the process on the fallback path; nil is os.Exit.
	Exit func(code int)
	// SpawnApprovalStdin is --spawn-approval-stdin: Stdin holds the one
	// line a parent's runtime wrote (contracts §18).
	SpawnApprovalStdin bool
	Stdin              io.Reader
	// OnCompile, when set, is called with an artifact's name@version (or
	// the component's path) just before it is compiled — only on a compile
	// cache miss, which takes seconds for a Go component — and before the
	// session starts: every component of the plan is compiled before
	// session_start, so no compile time lands in a tool_call's duration.
	// A CLI prints "compiling <name>" from it on a terminal.
	OnCompile func(name string)
}

// Ready describes a session once it is ready (contracts §10's --json line).
type Ready struct {
	URL        *string
	PID        int
	SessionID  string
	Name       string
	Version    string
	Workdir    string
	RecordsDir string
	// FormationID is the formation the session belongs to ("" for none).
	FormationID string
}

// Result is how a run ended.
type Result struct {
	SessionID, Name, Version, RecordsDir string
	// Ending is the session_end exit_status; Reason says why ("" for ok).
	Ending, Reason string
	// Signal is set when a signal ended the run.
	Signal *Signalled
	// Err is the ending's diagnostic: nil for ok and for a signalled run,
	// whose exit status is Signal.ExitCode().
	Err error
	// Refused counts the session's network requests refused for want of a
	// capabilities.network.allow entry (egress proxy and wasi:http), each
	// logged in EgressLog rather than on stderr.
	Refused   int64
	EgressLog string
	// Answer is where the session's answer is (contracts §5): a script's
	// out/result.txt in its work folder, an agent's in its records dir. The
	// file may not exist (a capsule that wrote none).
	Answer string
}

// AnswerFile is the answer's file under a work folder (script) or a records
// dir (agent).
const AnswerFile = "out/result.txt"

// run is one session's state, shared by the ordinary ending and the
// fallback.
type run struct {
	opts Options
	mu   sync.Mutex
	sess *session.Session
	tw   *trace.Writer
	rec  *trace.Recorder
	tel  *telemetry.Session // nil without observability.otel_endpoint
	// cancel ends the run's context with a cause (a trace that cannot be
	// written).
	cancel context.CancelCauseFunc
	// hooks are an agent's lifecycle hooks (nil: none).
	hooks *hooks.Dispatcher
	// agent is set for an agent session: its session_end carries the
	// task totals.
	agent bool
	// egress is the session's logs/egress.log (nil before the session
	// exists, or when it could not be made: lines then stay on Log).
	egress *egressLog
	done   bool // the ordinary path has its result; the fallback stands down
}

// Run runs a prepared plan to its end. Errors before the session exists
// (an engine or component that cannot load, an unreadable task file) are
// returned as such and leave no session behind. Once the session exists,
// every ending — the capsule's own, or a signal cancelling ctx — goes
// through one path: session_end, trace closed, session closed. ctx should
// come from NotifyContext.
func Run(ctx context.Context, p *Plan, opts Options) (Result, error) {
	p.pinRuntime()
	if err := p.Prepare(); err != nil {
		return Result{}, err
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Exit == nil {
		opts.Exit = os.Exit
	}
	// One run is one process: its descriptors are bounded by the kernel
	// (sandbox.MaxDescriptors), so a component's open-at loop cannot hold
	// the host's files without end.
	if _, err := sandbox.BoundDescriptors(sandbox.MaxDescriptors); err != nil {
		opts.Log.Warn("descriptors left unbounded", "error", err)
	}
	// A trace line that cannot be written ends the session (failed): a
	// capsule must not go on unrecorded (one tool_call per invoke).
	ctx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	r := &run{opts: opts, cancel: cancelRun}
	limit := HardExitAfter
	if p.Manifest.IsAgent() {
		limit = WindDownLimit
	}
	stop := context.AfterFunc(ctx, func() {
		again := make(<-chan struct{})
		if s, ok := signalled(ctx); ok {
			again = s.again
		}
		t := time.NewTimer(limit)
		defer t.Stop()
		select {
		case <-t.C:
		case <-again: // a second signal: exit at once
		}
		r.hardExit(ctx)
	})
	defer stop()
	if p.Manifest.IsAgent() {
		return runAgent(ctx, p, opts, r)
	}

	// Compile (or load from the cache) before any session file exists: a
	// component that cannot run is refused without leaving a session behind.
	eng, err := p.newEngine(opts)
	if err != nil {
		return Result{}, err
	}
	defer eng.Close()
	what := p.ComponentName
	if p.ManifestDir != "" {
		what = filepath.Join(p.ManifestDir, p.ComponentName)
	}
	co := wasmhost.CompileOptions{Name: what, Digest: p.ComponentDigest}
	if p.installed != nil {
		co.Name = p.installed.Ref()
	}
	comp, err := script.CompileDigest(eng, what, co, p.LoadComponent)
	if err != nil {
		return Result{}, err
	}
	defer comp.Close()
	// Every tool too, before the session exists: a tool_call's duration is
	// its call's, never a compile's.
	pre := tools.Preload(eng, p.Manifest, p.Tools)
	defer pre.Close()
	dl, err := openDelegation(p, opts)
	if err != nil {
		return Result{}, err
	}
	if err := p.needNetNS(); err != nil {
		return Result{}, err
	}
	task, fromParent := dl.scriptTask()
	if !fromParent {
		if task, err = readTask(opts.Task, os.Stdin, opts.Stderr); err != nil {
			return Result{}, err
		}
	}
	if s, ok := signalled(ctx); ok {
		return Result{Signal: s, Ending: trace.EndFailed, Reason: s.Reason()}, nil
	}

	if err := r.open(p, task, dl); err != nil {
		return Result{}, err
	}
	opts.Log = r.opts.Log // now routing network refusals to logs/egress.log
	sess := r.sess
	if err := dl.register(ctx, sess); err != nil {
		r.end(trace.EndFailed, err.Error(), true)
		return Result{}, err
	}
	if opts.Ready != nil {
		opts.Ready(Ready{PID: os.Getpid(), SessionID: sess.ID, Name: sess.Name, Version: sess.Version,
			Workdir: sess.Workdir, RecordsDir: sess.RecordsDir, FormationID: dl.formationID})
	}

	inv, err := tools.Build(&tools.Env{Engine: eng, Session: sess, Lookup: p.lookup, Logger: opts.Log, Preloaded: pre},
		p.Manifest, p.Grants, p.Tools)
	if err != nil {
		dl.close(trace.EndFailed)
		r.end(trace.EndFailed, err.Error(), true)
		return Result{}, err
	}
	defer inv.Close()
	rt, err := dl.scriptRuntime(p, sess, r.rec, r.tel, opts)
	if err == nil && rt != nil {
		err = inv.Add(rt.Tool())
	}
	if err != nil {
		dl.close(trace.EndFailed)
		r.end(trace.EndFailed, err.Error(), true)
		return Result{}, err
	}
	dl.watchLifeline(r.rec, filepath.Join(sess.RecordsDir, "logs", "bootstrap.log"), r.cancel)
	host, err := hostapi.New(hostapi.Config{Manifest: p.Manifest, Tools: inv, Grants: &p.Grants, Stores: p.Stores,
		Session: sess, Lookup: p.lookup})
	var imports script.Imports
	if err != nil {
		fmt.Fprintln(opts.Stderr, diag.Warn("W-IO-054", "the murmur:* host interfaces are unavailable to this run: %v", err).String())
	} else {
		defer host.Close()
		imports = hostImports{host}
	}
	res := script.Run(ctx, script.Config{
		Engine: eng, Component: comp, ComponentName: p.ComponentName,
		Session: sess, Recorder: r.rec, Limits: p.Manifest.Capabilities.EffLimits(),
		EnvAllow: p.Manifest.Capabilities.Env.Allow, Lookup: p.lookup,
		NetworkAllow: p.Grants.Capsule.NetworkAllow,
		Imports:      imports,
	})
	out := Result{SessionID: sess.ID, Name: sess.Name, Version: sess.Version, RecordsDir: sess.RecordsDir,
		Ending: res.Ending, Reason: res.Reason, Answer: filepath.Join(sess.Workdir, filepath.FromSlash(AnswerFile))}
	if s, ok := signalled(ctx); ok {
		out.Signal, out.Ending, out.Reason = s, trace.EndFailed, s.Reason()
	}
	var tf *TraceFailed
	if errors.As(context.Cause(ctx), &tf) && out.Signal == nil {
		out.Ending, out.Reason = trace.EndFailed, tf.Error()
	}
	out.Refused, out.EgressLog = r.egress.count(nil)
	dl.endScript(out.Ending)
	r.end(out.Ending, out.Reason, out.Signal == nil)
	dl.reportScript(sess, out.Ending, opts)
	switch {
	case tf != nil && out.Signal == nil:
		out.Err = diag.New("E-IO-056", "%s@%s was ended: %s", sess.Name, sess.Version, tf.Error()).
			WithHint("free space where %s is (the records dir) and run it again; what was written is kept", sess.RecordsDir)
	case out.Signal == nil && out.Ending != trace.EndOK:
		out.Err = endingError(sess, out)
	}
	return out, nil
}

// newEngine is the run's engine: the compile cache and its key in the
// run's home, compile progress to opts.OnCompile.
func (p *Plan) newEngine(opts Options) (*wasmhost.Engine, error) {
	return wasmhost.NewEngine(wasmhost.Config{CacheDir: home.Compiled(p.Home), KeyFile: home.CacheKey(p.Home),
		OnCompile: opts.OnCompile})
}

// open creates a script capsule's session, its trace and recorder, writes
// session_start and the running record.
func (r *run) open(p *Plan, task string, dl *spawnWiring) error {
	m := p.Manifest
	sess, err := session.New(session.Config{
		Home: p.Home, ManifestDir: p.ManifestDir, Workdir: r.opts.Workdir,
		Name: m.Name, Version: m.Version, Task: task,
		ManifestYAML: p.ManifestYAML, Grants: p.GrantsJSON, SpawnedBy: dl.spawnedBy(), FormationID: dl.formationID,
		ParentCopy: dl.parentCopy(), RuntimeBinaries: p.runtimeBinaries(),
	})
	if err != nil {
		return err
	}
	tw, rec, err := r.openTrace(p, sess, "script")
	if err != nil {
		sess.Close()
		return err
	}
	rec.Emit(dl.sessionStart(trace.SessionStart{CapsuleName: sess.Name, CapsuleVersion: sess.Version, Kind: "script",
		ToolsDeclared: p.ToolNames(), EffectiveGrants: p.GrantsJSON}, p))
	if w := sess.WriteRunningRecord(); w != nil {
		fmt.Fprintln(r.opts.Stderr, w.String())
	}
	r.mu.Lock()
	r.sess, r.tw, r.rec = sess, tw, rec
	r.mu.Unlock()
	return nil
}

// openTrace applies trace.retain, creates the session's trace and its
// recorder, with spans when observability.otel_endpoint or the OTLP
// environment variables name a collector.
func (r *run) openTrace(p *Plan, sess *session.Session, kind string) (*trace.Writer, *trace.Recorder, error) {
	m := p.Manifest
	if el, lg, err := openEgressLog(sess.RecordsDir, r.opts.Log); err == nil {
		r.egress, r.opts.Log = el, lg
	}
	if ret := retainOf(m); ret.MaxSessions > 0 || ret.MaxAge > 0 {
		removed, ws := session.ApplyRetain(sess.ProjectRecordsDir, sess.ID, ret, sess.RunningDir, time.Now())
		diag.PrintWarnings(r.opts.Stderr, ws)
		if p.ManifestDir != "" {
			diag.PrintWarnings(r.opts.Stderr, removeDefaultWorkdirs(sess.ProjectDir, removed))
		}
	}
	var warnMu sync.Mutex
	tw, err := trace.Create(filepath.Join(sess.RecordsDir, trace.FileName), sess.ID, trace.Options{
		Warn: func(w diag.Warning) {
			warnMu.Lock()
			fmt.Fprintln(r.opts.Stderr, w.String())
			warnMu.Unlock()
			if w.Code == trace.WarnWriteFailed && r.cancel != nil {
				r.cancel(&TraceFailed{Warning: w})
			}
		},
	})
	if err != nil {
		return nil, nil, err
	}
	var spans trace.Spans
	if ep := m.Observability.OtelEndpoint; telemetry.Wanted(ep) {
		tel, err := telemetry.Start(ep, telemetry.Identity{SessionID: sess.ID, CapsuleName: sess.Name,
			CapsuleVersion: sess.Version, Kind: kind}, filepath.Join(sess.RecordsDir, "logs", "otel.log"),
			telemetry.Options{}, sess.Started)
		if err != nil {
			fmt.Fprintln(r.opts.Stderr, diag.Warn("W-IO-053", "spans will not be exported: %v", err).String())
		} else {
			spans = tel
			r.mu.Lock()
			r.tel = tel
			r.mu.Unlock()
		}
	}
	return tw, trace.NewRecorder(tw, spans, sess.Started, r.opts.Log), nil
}

// end writes session_end (once: the recorder is sealed by it), closes the
// trace and the session, and stands the fallback down.
func (r *run) end(status, reason string, flush bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	r.endLocked(status, reason, flush)
}

func (r *run) endLocked(status, reason string, flush bool) {
	if r.rec == nil {
		return
	}
	if r.agent {
		r.rec.EndAgent(status, reason, flush)
	} else {
		r.rec.End(status, reason, flush)
	}
	r.tw.Close()
	r.sess.Close()
	r.egress.Close()
}

// hardExit is the fallback once a signal has cancelled the run and the
// ordinary path has not ended it within HardExitAfter: it records the end
// and exits, without waiting for the component.
func (r *run) hardExit(ctx context.Context) {
	s, ok := signalled(ctx)
	if !ok {
		return // cancelled by its owner, not a signal: the ordinary path ends it
	}
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		return
	}
	r.endLocked(trace.EndFailed, s.Reason(), false)
	if r.sess != nil {
		fmt.Fprintf(r.opts.Stderr, "%s: %s (%s)\n", r.sess.ID, trace.EndFailed, s.Reason())
	}
	r.mu.Unlock()
	r.opts.Exit(s.ExitCode())
}

// TraceFailed is the cause of a run ended because its trace could not be
// written: the session ends failed rather than go on unrecorded.
type TraceFailed struct{ Warning diag.Warning }

func (t *TraceFailed) Error() string {
	return "a trace line could not be written (" + t.Warning.Message + "), so the session was ended rather than go on unrecorded"
}

// hostImports grants internal/hostapi's murmur:* interfaces to a run,
// recording through the run's recorder (trace lines and OTel spans).
type hostImports struct{ s *hostapi.Session }

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

// removeDefaultWorkdirs removes the default work folders
// (<project>/workdir/<session>) of the sessions whose records trace.retain
// just removed, so that a project does not fill with workdir/ses_* folders:
// one figure bounds a project's sessions, records and work folders alike. A
// --workdir elsewhere is the user's and is never touched; a symlink in that
// place is not followed. W-RUN-050 for one that cannot be removed.
func removeDefaultWorkdirs(projectDir string, ids []string) []diag.Warning {
	var ws []diag.Warning
	for _, id := range ids {
		wd := filepath.Join(projectDir, "workdir", id)
		st, err := os.Lstat(wd)
		if err != nil || !st.IsDir() {
			continue
		}
		if err := os.RemoveAll(wd); err != nil {
			ws = append(ws, diag.Warn("W-RUN-050", "trace.retain removed the records of %s but not its work folder %s: %v", id, wd, err))
		}
	}
	return ws
}

func retainOf(m *manifest.Manifest) session.Retain {
	var r session.Retain
	r.MaxSessions = m.Trace.Retain.MaxSessions.Or(0)
	if d, ok := m.Trace.Retain.MaxAgeDuration(); ok {
		r.MaxAge = d
	}
	return r
}

// readTask reads --task: "-" is standard input, a path to a regular file is
// that file, and anything else is the task's text (contracts §10). Text with
// no whitespace that looks like a path to nothing is most likely a mistyped
// file name: it is still the text, with a W-RUN-001 warning on stderr, so
// that no task changes meaning over a guess.
func readTask(v string, stdin io.Reader, stderr io.Writer) (string, error) {
	if v == "" {
		return "", nil
	}
	if v == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", diag.Wrap(err, "E-RUN-007", "cannot read the task from standard input (--task -)")
		}
		return string(b), nil
	}
	st, err := os.Stat(v)
	if err == nil && st.Mode().IsRegular() {
		b, err := os.ReadFile(v)
		if err != nil {
			return "", diag.Wrap(err, "E-RUN-007", "cannot read the task file %s", v)
		}
		return string(b), nil
	}
	if errors.Is(err, fs.ErrNotExist) && !strings.ContainsFunc(v, unicode.IsSpace) && !strings.Contains(v, "://") {
		ext := filepath.Ext(v)
		pathy := strings.HasPrefix(v, "~") || strings.ContainsAny(v, `/\`) ||
			(len(ext) >= 2 && len(ext) <= 6 && len(ext) < len(v) &&
				strings.IndexFunc(ext[1:], func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) < 0 &&
				strings.IndexFunc(ext[1:], unicode.IsLetter) >= 0)
		if pathy {
			fmt.Fprintln(stderr, diag.Warn("W-RUN-001", "--task %q is no file (nothing exists at that path), so it is used as the task's text; check the path, or write the text with a space in it", v).String())
		}
	}
	return v, nil
}
