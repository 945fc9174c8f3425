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
	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/launch/launchapi"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/session"
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
	// line a parent's runtime wrote (docs/delegation.md).
	SpawnApprovalStdin bool
	Stdin              io.Reader
	// OnCompile, when set, is called with an artifact's name@version (or
	// the component's path) just before it is compiled — only on a compile
	// cache miss, which takes seconds for a Go component — and before the
	// session starts: every component of the plan is compiled before
	// session_start, so no compile time lands in a tool_call's duration.
	// A CLI prints "compiling <name>" from it on a terminal.
	OnCompile func(name string)
	// Spans starts the session's span export when the manifest sets
	// observability.otel_endpoint (internal/telemetry's Open); nil exports
	// none.
	Spans func(trace.SpanExport) (trace.SpanSink, error)
}

// Ready describes a session once it is ready: the --json ready line.
type Ready = launchapi.Ready

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
	// Answer is where the session's answer is (docs/running-capsules.md): a script's
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
	p    *Plan
	opts Options
	// dl is the session's part in delegation, read before it exists.
	dl *spawnWiring
	// task is the run's task text ("" for none).
	task string
	// url is an agent's door ("" for a script): MURMUR.md names it.
	url string
	// doorToken is the door's operator token ("" for a public door).
	doorToken string
	// eng and pre are the run's engine and its preloaded tools.
	eng *wasmhost.Engine
	pre tools.Preloaded

	mu   sync.Mutex
	sess *session.Session
	tw   *trace.Writer
	rec  *trace.Recorder
	// cancel ends the run's context with a cause (a trace that cannot be
	// written, a lifeline that closed).
	cancel context.CancelCauseFunc
	// agent is set for an agent session: its session_end carries the
	// task totals.
	agent bool
	// egress is the session's logs/egress.log (nil before the session
	// exists, or when it could not be made: lines then stay on Log).
	egress *egressLog
	done   bool // the ordinary path has its result; the fallback stands down
}

// runKind is what one kind of capsule (script, agent; next formation
// members and plan steps) adds to the one run path. Run calls, in order:
// open before any session file exists, start once the session and its
// trace do, serve once it is registered, and close after session_end.
type runKind interface {
	// name is session_start's kind.
	name() string
	// open does what must succeed before the session exists (read the
	// task, compile, listen): an error leaves nothing behind.
	open(ctx context.Context, r *run) error
	// start writes session_start (with what it needs first, such as the
	// hooks it names); an error removes the session it was given.
	start(r *run, sess *session.Session, rec *trace.Recorder) error
	// serve runs the registered session until it ends, calling r.ready
	// once it can be observed. An error is a session that could not begin
	// serving (tools that cannot be built): Run ends it failed.
	serve(ctx context.Context, r *run) (ending, error)
	// close releases what open and serve made.
	close()
}

// ending is how serve ended a session.
type ending struct {
	Result
	// flush waits for spans to reach the collector at session_end.
	flush bool
	// traceFailed is set when the trace could not be written: E-IO-056.
	traceFailed *TraceFailed
	// resultDir holds the out/result.txt a delegated child reports.
	resultDir string
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
	// (grant.MaxDescriptors), so a component's open-at loop cannot hold
	// the host's files without end.
	if _, err := grant.BoundDescriptors(grant.MaxDescriptors); err != nil {
		opts.Log.Warn("descriptors left unbounded", "error", err)
	}
	// A trace line that cannot be written ends the session (failed): a
	// capsule must not go on unrecorded (one tool_call per invoke).
	ctx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	r := &run{p: p, opts: opts, cancel: cancelRun}
	var k runKind = &scriptRun{}
	limit := HardExitAfter
	if p.Manifest.IsAgent() {
		k, limit = &agentRun{}, WindDownLimit
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
	defer r.release(k)
	return r.lifecycle(ctx, k)
}

// lifecycle is the one run path: delegation, the kind's open, the
// session with its trace and session_start, the running record,
// registration, the kind's serve, then session_end and the completion
// report. A failure once the session exists is ended in one place.
func (r *run) lifecycle(ctx context.Context, k runKind) (Result, error) {
	var err error
	if r.dl, err = openDelegation(r.p, r.opts); err != nil {
		return Result{}, err
	}
	if err := k.open(ctx, r); err != nil {
		return Result{}, err
	}
	if s, ok := signalled(ctx); ok {
		return Result{Signal: s, Ending: trace.EndFailed, Reason: s.Reason()}, nil
	}
	if err := r.open(k); err != nil {
		return Result{}, err
	}
	// An agent's MCP servers start right after session_start, before the
	// running record, registration and the ready line (docs/mcp.md): a
	// server that cannot start fails the launch before anything observes
	// the session.
	if a, ok := k.(*agentRun); ok {
		servers, err := startMCP(ctx, r)
		if err != nil {
			return r.fail(err)
		}
		a.mcp = servers
	}
	// The record is written once the door is bound and before the session
	// registers: it is the evidence mur-roost's census counts a
	// registration on.
	if r.agent && r.p.Manifest.Door.Authenticated() {
		if r.doorToken, err = r.dl.operatorToken(); err != nil {
			return r.fail(fmt.Errorf("cannot make the door's operator token: %w", err))
		}
		r.sess.DoorToken = r.doorToken
	}
	if m := r.dl.member; m != nil {
		r.sess.FormationMember = m.Member
		r.sess.FormationLauncher = &running.Launcher{PID: m.Launcher.PID, ProcessStart: m.Launcher.ProcessStart}
	}
	if w := r.sess.WriteRunningRecord(); w != nil {
		fmt.Fprintln(r.opts.Stderr, w.String())
	}
	if err := r.dl.register(ctx, r.sess); err != nil {
		return r.fail(err)
	}
	e, err := k.serve(ctx, r)
	if err != nil {
		return r.fail(err)
	}
	sess, out := r.sess, e.Result
	r.mu.Lock()
	r.done = true
	r.endLocked(out.Ending, out.Reason, e.flush)
	r.mu.Unlock()
	r.dl.reportFrom(sess, e.resultDir, out.Ending, r.opts)
	if e.traceFailed != nil {
		out.Err = diag.New("E-IO-056", "%s@%s was ended: %s", sess.Name, sess.Version, e.traceFailed.Error()).
			WithHint("free space where %s is (the records dir) and run it again; what was written is kept", sess.RecordsDir)
	}
	return out, nil
}

// fail ends a session that could not begin serving: children and
// registration ended, session_end failed with err's text.
func (r *run) fail(err error) (Result, error) {
	r.dl.close(trace.EndFailed)
	r.end(trace.EndFailed, err.Error(), true)
	return Result{}, err
}

// release closes what the run made, the kind's first.
func (r *run) release(k runKind) {
	k.close()
	if r.pre != nil {
		r.pre.Close()
	}
	if r.eng != nil {
		r.eng.Close()
	}
}

// ready reports the session ready to be observed (the --json line); url is
// an agent's door address.
func (r *run) ready(url *string) {
	if r.opts.Ready == nil {
		return
	}
	sess := r.sess
	r.opts.Ready(Ready{URL: url, PID: os.Getpid(), SessionID: sess.ID, Name: sess.Name, Version: sess.Version,
		Workdir: sess.Workdir, RecordsDir: sess.RecordsDir, FormationID: r.dl.formationID})
}

// engine makes the run's engine and preloads every tool with it, before
// the session exists: a tool_call's duration is its call's, never a
// compile's.
func (r *run) engine() error {
	eng, err := r.p.newEngine(r.opts)
	if err != nil {
		return err
	}
	r.eng = eng
	r.pre = tools.Preload(eng, r.p.Manifest, r.p.Tools)
	return nil
}

// watchLifeline winds the session down when its spawner's lifeline closes,
// by cancelling with end.
func (r *run) watchLifeline(end context.CancelCauseFunc) {
	r.dl.watchLifeline(r.rec, filepath.Join(r.sess.RecordsDir, "logs", "bootstrap.log"), r.agent, end)
}

// traceFailure is the cause of a run ended because its trace could not be
// written; nil otherwise.
func traceFailure(ctx context.Context) *TraceFailed {
	var tf *TraceFailed
	if errors.As(context.Cause(ctx), &tf) {
		return tf
	}
	return nil
}

// newEngine is the run's engine: the compile cache and its key in the
// run's home, compile progress to opts.OnCompile.
func (p *Plan) newEngine(opts Options) (*wasmhost.Engine, error) {
	return wasmhost.NewEngine(wasmhost.Config{CacheDir: home.Compiled(p.Home), KeyFile: home.CacheKey(p.Home),
		OnCompile: opts.OnCompile})
}

// open creates the session (an agent's MURMUR.md names its door), its
// trace and recorder, and has the kind write session_start.
func (r *run) open(k runKind) error {
	p, dl := r.p, r.dl
	m := p.Manifest
	workdir, member := r.opts.Workdir, ""
	var form *session.Formation
	if pm := p.member; pm != nil {
		member = pm.Member
		workdir = filepath.Join(home.Formations(p.Home), pm.FormationID, member)
		form = &session.Formation{ID: pm.FormationID, Member: member, Entry: pm.Entry}
		for _, c := range pm.Calls {
			form.Callees = append(form.Callees, c.Name)
		}
	}
	sess, err := session.New(session.Config{
		Home: p.Home, ManifestDir: p.ManifestDir, Workdir: workdir, FormationMember: member, Formation: form,
		Name: m.Name, Version: m.Version, Task: r.task, CapsuleURL: r.url,
		ManifestYAML: p.ManifestYAML, Grants: p.GrantsJSON, SpawnedBy: dl.spawnedBy(), FormationID: dl.formationID,
		ParentCopy: dl.parentCopy(), RuntimeBinaries: p.runtimeBinaries(),
	})
	if err != nil {
		return err
	}
	sess.Callees = p.callees // nil unless a formation member
	tw, rec, err := r.openTrace(p, sess, k.name())
	if err != nil {
		sess.Close()
		return err
	}
	if err := k.start(r, sess, rec); err != nil {
		tw.Close()
		sess.Close()
		os.Remove(filepath.Join(sess.RecordsDir, trace.FileName))
		return err
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
	var spans trace.SpanSink
	if r.opts.Spans != nil {
		// Spans decides whether to export: the manifest's endpoint, or the
		// runtime's environment naming a collector (docs/telemetry.md).
		sink, err := r.opts.Spans(trace.SpanExport{Endpoint: m.Observability.OtelEndpoint, SessionID: sess.ID, CapsuleName: sess.Name,
			CapsuleVersion: sess.Version, Kind: kind, LogPath: filepath.Join(sess.RecordsDir, "logs", "otel.log"),
			Started: sess.Started, FormationID: r.dl.formationID})
		if err != nil {
			fmt.Fprintln(r.opts.Stderr, diag.Warn("W-IO-053", "spans will not be exported: %v", err).String())
		} else if sink != nil {
			spans = sink
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
// that file, and anything else is the task's text (docs/cli.md). Text with
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
