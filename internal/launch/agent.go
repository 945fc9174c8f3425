package launch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/murmur-go/murmur/internal/agent"
	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/contain/egress"
	"github.com/murmur-go/murmur/internal/delegate"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/builtin"
	wasmdrv "github.com/murmur-go/murmur/internal/driver/wasm"
	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/hooks"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/telemetry"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

// WindDownLimit bounds an agent session's wind-down (contracts §11): past
// it, or on a second signal, the session records its end and exits at once.
const WindDownLimit = 20 * time.Second

// DriverPlan is an agent capsule's driver as the launch resolved it.
type DriverPlan struct {
	// Entry is the artifacts[] entry inference.driver.artifact names.
	Entry manifest.Artifact
	// Stored is the driver artifact a store holds at exactly that name and
	// version (it wins over a built-in); nil selects the built-in.
	Stored *store.Resolved
}

// prepareAgent resolves the driver and reads the configured system prompt.
func (p *Plan) prepareAgent() error {
	in := p.Manifest.Inference
	if in.Transport.Or("http") != "http" {
		return diag.New("E-RUN-047", "%s asks for inference.transport %s; this mur runs the http transport only (a driver artifact per turn)", p.Manifest.Name, in.Transport.V).
			WithHint("remove inference.transport, or set it to http, and name a driver in inference.driver.artifact")
	}
	if in.DriverArtifact == "" {
		return diag.New("E-RUN-047", "%s is an agent capsule with no driver: inference.driver.artifact is not set", p.Manifest.Name).
			WithHint("declare a driver under artifacts: (for example murmur/driver-anthropic, runtime: driver) and name it in inference.driver.artifact")
	}
	entry, ok := p.Manifest.ArtifactByName(in.DriverArtifact)
	if !ok || entry.RuntimeKind() != manifest.RuntimeDriver {
		// Parse refuses this already; a plan built by other means must too.
		return diag.New("E-MAN-016", "inference.driver.artifact: %q is not an artifact declared with runtime: driver", in.DriverArtifact)
	}
	d := &DriverPlan{Entry: *entry}
	r, err := p.Stores.Resolve(entry.Name, entry.Version, manifest.Options{SkipSecrets: true})
	switch {
	case err == nil:
		if r.Runtime != manifest.RuntimeDriver {
			return diag.New("E-RUN-047", "the driver %s@%s in the %s store is a %s, not a driver", entry.Name, entry.Version, r.Store.Kind, r.Runtime).
				WithHint("install the driver artifact of that name, or name another driver in inference.driver.artifact")
		}
		d.Stored = r
	case store.IsNotFound(err):
		if !builtin.Has(entry.Name) {
			return diag.New("E-RUN-047", "the driver %s@%s is not installed and is not built into mur (built in: %v)", entry.Name, entry.Version, builtin.Names()).
				WithHint("publish and install the driver's .mur.zip, or use a built-in driver")
		}
	default:
		return err
	}
	p.Driver = d
	switch {
	case in.SystemPrompt != "":
		p.SystemPrompt = in.SystemPrompt
	case in.SystemPromptFile != "":
		b, err := p.readPackedFile(in.SystemPromptFile)
		if err != nil {
			return diag.Wrap(err, "E-RUN-048", "inference.system_prompt_file %s cannot be read", in.SystemPromptFile).
				WithHint("the path is relative to murmur.yaml; 'mur build' packs the file")
		}
		p.SystemPrompt = string(b)
	}
	return nil
}

// readPackedFile reads a file the manifest names relative to itself: from
// the manifest's directory, or from the installed archive of a --capsule run.
func (p *Plan) readPackedFile(rel string) ([]byte, error) {
	if p.capsule {
		return p.installed.Archive.ReadFile(filepath.ToSlash(filepath.Clean(rel)))
	}
	if filepath.IsAbs(rel) {
		return os.ReadFile(rel)
	}
	return os.ReadFile(filepath.Join(p.ManifestDir, rel))
}

// newDriver makes the plan's driver: a stored driver component through the
// WASM adapter (sess may be nil to check it before the session exists), or
// the built-in of that name.
func (p *Plan) newDriver(eng *wasmhost.Engine, sess *session.Session, rec *trace.Recorder) (driver.Driver, error) {
	d := p.Driver
	cfg := driver.Config{Name: d.Entry.Name, Version: d.Entry.Version, Settings: d.Entry.Config, Dir: p.ManifestDir}
	if cfg.Dir == "" {
		cfg.Dir = "."
	}
	if g := d.Entry.Gateway; g != nil {
		cfg.Endpoint, cfg.APIKey = g.Endpoint, g.APIKey
		cfg.KeyVariable = keyVariable(g.APIKeyRef)
	}
	if cfg.Settings == nil {
		cfg.Settings = map[string]any{}
	}
	if r := d.Stored; r != nil {
		file, ok := r.Archive.PayloadName()
		if !ok || filepath.Ext(file) != ".wasm" {
			return nil, diag.New(wasmdrv.CodeUnloadable, "the driver %s holds no root .wasm component", r.Ref()).
				WithHint("rebuild it with 'mur build' from a directory holding the driver's component")
		}
		data, err := r.Archive.ReadFile(file)
		if err != nil {
			return nil, err // E-REG-002: the artifact changed since it was resolved
		}
		wc := wasmdrv.Config{Engine: eng, Name: r.Name, Version: r.Version, Component: data, ArtifactSHA256: r.SHA256,
			Limits: grant.Limits(tools.GrantOf(p.Grants, d.Entry).Grants.Limits), Session: sess,
			Model: p.Manifest.Inference.Model, Endpoint: cfg.Endpoint, APIKey: cfg.APIKey, Settings: cfg.Settings}
		if rec != nil {
			wc.Recorder = rec
		}
		return wasmdrv.New(wc)
	}
	if p.capsule {
		// An installed capsule's relative config paths name files packed in
		// its archive (requires_files), not files beside the work folder.
		cleanup, err := p.unpackSetting(&cfg, builtin.SettingTranscript)
		if err != nil {
			return nil, err
		}
		defer cleanup()
	}
	if builtin.Provider(cfg.Name) {
		return startProvider(cfg)
	}
	drv, ok, err := builtin.New(cfg)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, diag.New("E-RUN-047", "the driver %s@%s is not built into mur", d.Entry.Name, d.Entry.Version)
	}
	return drv, nil
}

// unpackSetting copies the packed file a --capsule run's relative path
// setting names to a private temporary file and points a copy of the
// settings at it; the built-in reads it whole when it is made, so cleanup
// removes it right after. A path the archive does not hold is left as it
// is, for the driver's own message.
func (p *Plan) unpackSetting(cfg *driver.Config, key string) (func(), error) {
	rel, _ := cfg.Settings[key].(string)
	if rel == "" || filepath.IsAbs(rel) {
		return func() {}, nil
	}
	data, err := p.readPackedFile(rel)
	if err != nil {
		return func() {}, nil
	}
	f, err := os.CreateTemp("", "murmur-packed-*"+filepath.Ext(rel))
	if err != nil {
		return nil, fmt.Errorf("launch: unpacking %s from the installed capsule: %w", rel, err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("launch: unpacking %s from the installed capsule: %w", rel, werr)
	}
	settings := make(map[string]any, len(cfg.Settings))
	for k, v := range cfg.Settings {
		settings[k] = v
	}
	settings[key] = f.Name()
	cfg.Settings = settings
	return func() { os.Remove(f.Name()) }, nil
}

// commandWrap is the containment every shell command of the session runs
// under: the plan of the achieved tier over this session's folders, applied
// by the re-exec helper (contain.Command). nil when the capsule has no
// native commands.
func (p *Plan) commandWrap(sess *session.Session, px *egress.Proxy) (func(*exec.Cmd) error, error) {
	c := p.Containment
	if !c.Native {
		return nil, nil
	}
	g := p.Grants.Capsule
	work := sess.Workdir
	if g.FilesystemScope != nil {
		if clean, err := manifest.CleanScope(*g.FilesystemScope); err == nil && clean != "." {
			work = filepath.Join(sess.Workdir, filepath.FromSlash(clean))
			if err := os.MkdirAll(work, 0o700); err != nil {
				return nil, diag.Wrap(err, "E-RUN-065", "the filesystem scope %s cannot be made", work)
			}
		}
	}
	homeDir := sessionHome(sess)
	if err := os.MkdirAll(homeDir, 0o700); err != nil {
		return nil, diag.Wrap(err, "E-RUN-077", "the session's HOME %s cannot be made", homeDir)
	}
	var bins []string
	path, _ := p.lookup("PATH")
	for _, b := range g.ShellAllow {
		for _, dir := range filepath.SplitList(path) {
			if fp := filepath.Join(dir, b); isExecutable(fp) {
				if !inSystemDir(fp) { // the system dirs are in every tier's view already
					bins = append(bins, fp)
				}
				break
			}
		}
	}
	in := contain.Input{Class: c.Achieved, WorkFolder: work, Within: sess.Workdir, Home: homeDir,
		RuntimeDir: sess.RuntimeDir, RecordsDir: sess.RecordsDir, Tools: bins,
		WorkdirExec: g.WorkdirExec, UnixSockets: g.UnixSockets, Resources: c.Resources}
	if px != nil {
		in.Egress = px
	}
	plan, err := contain.NewPlan(in)
	if err != nil {
		return nil, diag.Wrap(err, "E-CAP-003", "the %s containment plan cannot be made for %s", c.Achieved, p.Manifest.Name)
	}
	return contain.Wrap(plan), nil
}

// sessionHome is the HOME a session's commands get: <records dir>/home.
func sessionHome(sess *session.Session) string { return filepath.Join(sess.RecordsDir, "home") }

func inSystemDir(p string) bool {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	for _, d := range contain.SystemDirs {
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// keyVariable is NAME of a "${NAME}" reference ("" for a literal key).
func keyVariable(ref string) string {
	if len(ref) > 3 && ref[:2] == "${" && ref[len(ref)-1] == '}' {
		return ref[2 : len(ref)-1]
	}
	return ""
}

// runAgent runs an agent capsule's session (contracts §11): staging, the
// door's listener, MURMUR.md, session_start, serving, the running record
// and the --json line — in that order, so no request is answered before
// session_start exists — then tasks until the lifecycle, a signal or
// murmur.StopSession ends the session.
func runAgent(ctx context.Context, p *Plan, opts Options, r *run) (Result, error) {
	m := p.Manifest
	task, err := readTask(opts.Task, os.Stdin, opts.Stderr)
	if err != nil {
		return Result{}, err
	}
	acceptance := m.Lifecycle.Acceptance()
	if acceptance == "none" && task == "" {
		return Result{}, diag.New("E-RUN-041", "%s accepts no task at its door (lifecycle.task_acceptance: none), so it needs --task", m.Name).
			WithHint("run it with --task FILE|TEXT, or set lifecycle.task_acceptance to single or queue")
	}
	dl, err := openDelegation(p, opts)
	if err != nil {
		return Result{}, err
	}
	// Commands run in a network namespace with only loopback; the egress
	// proxy, listening inside it, forwards what network.allow covers. A
	// host that refuses the namespace refuses the launch (E-CAP-005)
	// before session_start, for spawn.allow as for shell.allow.
	var px *egress.Proxy
	var proxyEnv []string
	if p.Containment.Native {
		if px, err = egress.Start(p.Grants.Capsule.NetworkAllow); err != nil {
			return Result{}, err
		}
		defer px.Close()
		proxyEnv = egress.Env()
	} else if err := p.needNetNS(); err != nil {
		return Result{}, err
	}
	ctx, endRun := context.WithCancelCause(ctx)
	defer endRun(nil)
	eng, err := p.newEngine(opts)
	if err != nil {
		return Result{}, err
	}
	defer eng.Close()
	// The tools are compiled before the session exists, so no tool_call's
	// duration holds a compile.
	pre := tools.Preload(eng, m, p.Tools)
	defer pre.Close()
	// A driver that cannot load is refused before any session file exists;
	// a stored one is made again below with the session's identity (the
	// compile cache makes that cheap).
	drv, err := p.newDriver(eng, nil, nil)
	if err != nil {
		return Result{}, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Result{}, diag.Wrap(err, "E-RUN-049", "the door cannot listen on 127.0.0.1").
			WithHint("check that loopback networking is up")
	}
	defer ln.Close()
	addr := ln.Addr().String()
	url := "http://" + addr
	if s, ok := signalled(ctx); ok {
		return Result{Signal: s, Ending: trace.EndFailed, Reason: s.Reason()}, nil
	}

	info := drv.Info()
	// A hook's run-inference goes through the capsule's loop (its driver,
	// its token ceiling); the loop exists once the session does.
	var loopRef *agent.Session
	var loopMu sync.Mutex
	infer := func(ctx context.Context, hook string, req wit.InferenceRequest) (wit.InferenceResponse, error) {
		loopMu.Lock()
		l := loopRef
		loopMu.Unlock()
		if l == nil {
			return wit.InferenceResponse{}, fmt.Errorf("run-inference is not available before the session starts")
		}
		return l.HookInference(ctx, hook, req)
	}
	if err := r.openAgent(p, task, url, info, eng, infer, dl); err != nil {
		return Result{}, err
	}
	opts.Log = r.opts.Log // now routing network refusals to logs/egress.log
	if px != nil && r.egress != nil {
		px.SetLogger(r.egress.logger)
	}
	sess, rec := r.sess, r.rec
	// The record is written once the door is bound (contracts §6) and
	// before the session registers: it is the evidence mur-roost's census
	// counts a registration on.
	if w := sess.WriteRunningRecord(); w != nil {
		fmt.Fprintln(opts.Stderr, w.String())
	}
	if err := dl.register(ctx, sess); err != nil {
		r.endAgent(trace.EndFailed, err.Error())
		return Result{}, err
	}
	if p.Driver.Stored != nil {
		if c, ok := drv.(interface{ Close() }); ok {
			c.Close()
		}
		if drv, err = p.newDriver(eng, sess, rec); err != nil {
			r.endAgent(trace.EndFailed, err.Error())
			return Result{}, err
		}
	}
	if c, ok := drv.(interface{ Close() }); ok {
		defer c.Close()
	}
	wrap, err := p.commandWrap(sess, px)
	if err != nil {
		r.endAgent(trace.EndFailed, err.Error())
		return Result{}, err
	}
	inv, err := tools.Build(&tools.Env{Engine: eng, Session: sess, Lookup: p.lookup, Logger: opts.Log, Wrap: wrap,
		ProxyEnv: proxyEnv, Preloaded: pre}, m, p.Grants, p.Tools)
	if err != nil {
		r.endAgent(trace.EndFailed, err.Error())
		return Result{}, err
	}
	defer inv.Close()
	rt := dl.runtime(p, sess, rec, url, opts)
	if rt != nil {
		if err := inv.Add(rt.Tool()); err != nil {
			r.endAgent(trace.EndFailed, err.Error())
			return Result{}, err
		}
	}
	var lines []session.ToolLine
	for _, e := range inv.Entries() {
		lines = append(lines, session.ToolLine{Name: e.Name(), Kind: e.Kind(), Description: e.Description()})
	}
	if err := sess.SetTools(lines, p.GrantsJSON); err != nil {
		fmt.Fprintln(opts.Stderr, diag.Warn("W-IO-055", "MURMUR.md could not list the tools: %v", err).String())
	}
	in := m.Inference
	loop := agent.New(agent.Config{
		Driver: drv, Model: in.Model,
		MaxTurns: in.MaxTurns.Or(manifest.DefaultMaxTurns), MaxTokens: in.MaxTokens.Or(manifest.DefaultMaxTokens),
		MaxSessionTokens: in.MaxSessionTokens.Or(0),
		CallDeadline:     time.Duration(m.Capabilities.EffLimits().DeadlineSeconds) * time.Second,
		System: agent.SystemPrompt(agent.Identity{Name: sess.Name, Version: sess.Version, SessionID: sess.ID,
			Workdir: sess.Workdir}, p.SystemPrompt),
		Tools: newAgentTools(inv, rec, sess.RecordsDir, r.hooks, dl.tasks), Recorder: rec, Telemetry: r.telemetry(),
		Hooks:      r.hooks,
		ResultPath: filepath.Join(sess.RecordsDir, "out", "result.txt"),
		Waiter:     dl.waiter(),
	})
	loopMu.Lock()
	loopRef = loop
	loopMu.Unlock()
	defer r.hooks.Close()
	r.hooks.OnStage(ctx, wit.StageEvent{ShellAllow: p.Grants.Capsule.ShellAllow})
	r.hooks.OnSessionStart(ctx, wit.SessionContext{CapsuleName: sess.Name, CapsuleVersion: sess.Version,
		SessionID: sess.ID, Model: in.Model, Capabilities: p.Grants.Lines()})
	dr, err := door.New(door.Config{Name: sess.Name, Version: sess.Version, SessionID: sess.ID, URL: url,
		TaskAcceptance: acceptance, QueueDepth: m.Lifecycle.QueueDepth.Or(manifest.DefaultQueueDepth),
		AfterTask: m.Lifecycle.AfterTaskMode(), Runner: dl.runner(loop), Recorder: doorRecorder{rec}, Logger: opts.Log,
		Completions: dl.completions()})
	if err != nil {
		r.endAgent(trace.EndFailed, err.Error())
		return Result{}, err
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = dr.Serve(ln) }()
	if opts.Ready != nil {
		opts.Ready(Ready{URL: &addr, PID: os.Getpid(), SessionID: sess.ID, Name: sess.Name, Version: sess.Version,
			Workdir: sess.Workdir, RecordsDir: sess.RecordsDir, FormationID: dl.formationID})
	}
	if task != "" {
		if _, err := dr.SubmitTask(ctx, task); err != nil {
			opts.Log.Warn("the --task task was not accepted", "error", err)
		}
	}

	out := Result{SessionID: sess.ID, Name: sess.Name, Version: sess.Version, RecordsDir: sess.RecordsDir,
		Answer: filepath.Join(sess.RecordsDir, filepath.FromSlash(AnswerFile))}
	dl.watchLifeline(rec, filepath.Join(sess.RecordsDir, "logs", "bootstrap.log"), endRun)
	// capabilities.resources.workdir_max_bytes, applied while the session
	// runs: a work folder past it (with the commands' HOME, which they can
	// write as freely) winds the session down, resource_limit.
	overflow := make(chan *grant.WorkdirLimitError, 1)
	wctx, stopWatch := context.WithCancel(ctx)
	go grant.WatchWorkdirAndHome(wctx, sess.Workdir, sessionHome(sess), m.Capabilities.EffLimits().WorkdirMaxBytes, func(e *grant.WorkdirLimitError) {
		select {
		case overflow <- e:
		default:
		}
	})
	var full *grant.WorkdirLimitError
	select {
	case <-dr.Done():
	case <-ctx.Done():
	case full = <-overflow:
	}
	stopWatch()
	dl.windingDown.Store(true)
	// The status is read after the runners have returned (below): a task the
	// wind-down cancelled writes its task_end first.
	status := ""
	reason := ""
	sig, signalledNow := signalled(ctx)
	stopped := dr.EndReason() == door.EndStopSession
	var tf *TraceFailed
	traceFailed := errors.As(context.Cause(ctx), &tf) && !signalledNow
	if full != nil || traceFailed {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), WindDownLimit)
		dr.WindDown(wctx)
		_ = dr.Wait(wctx)
		cancel()
		if full != nil {
			status, reason = trace.EndResourceLimit, full.Error()
		} else {
			status, reason = trace.EndFailed, tf.Error()
		}
	} else if signalledNow || stopped {
		// Wind-down: live and queued tasks end canceled; bounded by
		// WindDownLimit (the fallback exits past it).
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), WindDownLimit)
		stop := dr.WindDown(wctx)
		_ = dr.Wait(wctx)
		cancel()
		if len(stop.Canceled) > 0 {
			status = trace.EndCanceled
		}
		reason = "stopped"
		if signalledNow {
			reason = sig.Reason()
			out.Signal = sig
		} else if status != "" {
			// mur stop canceled a live or queued task: the session did not
			// end ok, and exits as SIGTERM does.
			out.Signal = &Signalled{Signal: syscall.SIGTERM}
		}
		// Otherwise mur stop ended an idle session cleanly: it ends ok and
		// exits 0, not 143 (which scripts read as a kill).
	} else {
		_ = dr.Wait(context.Background())
	}
	if status == "" {
		status = rec.LastTaskNotOK()
	}
	if status == "" {
		status = trace.EndOK
	}
	if stopped && !signalledNow && out.Signal == nil && status != trace.EndOK {
		// A stop whose task ended canceled on its own path (not in
		// WindDown's list) is still a stop that canceled work: 143.
		out.Signal = &Signalled{Signal: syscall.SIGTERM}
	}
	dl.close(status)
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_ = dr.Shutdown(sctx)
	cancel()
	dr.Close()
	<-served
	out.Ending, out.Reason = status, reason
	tot := rec.AgentTotals()
	if px != nil {
		out.Refused, out.EgressLog = r.egress.count(px)
	} else {
		out.Refused, out.EgressLog = r.egress.count(nil)
	}
	r.hooks.OnSessionEnd(context.WithoutCancel(ctx), wit.SessionEndEvent{TotalTurns: uint32(tot.Turns),
		TotalInputTokens: uint64(tot.InputTokens), TotalOutputTokens: uint64(tot.OutputTokens),
		TotalToolCalls: uint32(tot.ToolCalls), TotalShellCalls: uint32(tot.ShellCalls),
		DurationMS: uint64(time.Since(sess.Started).Milliseconds()), ExitStatus: status})
	r.endAgent(status, reason)
	dl.report(sess, status, opts)
	if traceFailed {
		out.Err = diag.New("E-IO-056", "%s@%s was ended: %s", sess.Name, sess.Version, tf.Error()).
			WithHint("free space where %s is (the records dir) and run it again; what was written is kept", sess.RecordsDir)
	} else if out.Signal == nil && status != trace.EndOK {
		why := ""
		if f := loop.LastFailure(); f != "" && status != trace.EndResourceLimit {
			why = ": " + f
		} else if reason != "" {
			why = ": " + reason
		}
		out.Err = diag.New("E-RUN-040", "the session ended %s%s", status, why).
			WithHint("run 'mur trace show %s' to see each task", sess.ID)
	}
	return out, nil
}

// openAgent creates an agent session (its MURMUR.md names the door's URL),
// its trace and recorder, and writes session_start.
func (r *run) openAgent(p *Plan, task, url string, info driver.Info, eng *wasmhost.Engine, infer hooks.InferenceFunc, dl *spawnWiring) error {
	m := p.Manifest
	sess, err := session.New(session.Config{
		Home: p.Home, ManifestDir: p.ManifestDir, Workdir: r.opts.Workdir,
		Name: m.Name, Version: m.Version, Task: task, CapsuleURL: url,
		ManifestYAML: p.ManifestYAML, Grants: p.GrantsJSON, SpawnedBy: dl.spawnedBy(), FormationID: dl.formationID,
		ParentCopy: dl.parentCopy(), RuntimeBinaries: p.runtimeBinaries(),
	})
	if err != nil {
		return err
	}
	tw, rec, err := r.openTrace(p, sess, "agent")
	if err != nil {
		sess.Close()
		return err
	}
	// Hooks are compiled before session_start, which names them; one that
	// is not a hook-world component refuses the session (nothing is
	// written yet but the trace file).
	hk, err := loadHooks(p, eng, sess, rec, infer, r.opts.Log)
	if err != nil {
		tw.Close()
		sess.Close()
		os.Remove(filepath.Join(sess.RecordsDir, trace.FileName))
		return err
	}
	in := m.Inference
	var ceiling *int
	if in.MaxSessionTokens.Set {
		v := in.MaxSessionTokens.V
		ceiling = &v
	}
	rec.Emit(trace.AgentSessionStart{
		SessionStart: dl.sessionStart(trace.SessionStart{CapsuleName: sess.Name, CapsuleVersion: sess.Version, Kind: "agent",
			ToolsDeclared: p.ToolNames(), EffectiveGrants: p.GrantsJSON}, p),
		Model:    in.Model,
		Driver:   trace.DriverInfo{Name: info.Name, Version: info.Version, Implementation: info.Implementation, SHA256: info.SHA256},
		MaxTurns: in.MaxTurns.Or(manifest.DefaultMaxTurns), MaxSessionTokens: ceiling,
		TaskAcceptance: m.Lifecycle.Acceptance(), AfterTask: m.Lifecycle.AfterTaskMode(),
		URL: url, SystemPromptSHA256: agent.PromptSHA256(p.SystemPrompt), Hooks: append([]string{}, hk.Names()...),
	})
	r.mu.Lock()
	r.sess, r.tw, r.rec, r.agent, r.hooks = sess, tw, rec, true, hk
	r.mu.Unlock()
	return nil
}

// loadHooks compiles the capsule's runtime: hook artifacts, in manifest
// order, each with its own narrowed grant.
func loadHooks(p *Plan, eng *wasmhost.Engine, sess *session.Session, rec *trace.Recorder, infer hooks.InferenceFunc, log *slog.Logger) (*hooks.Dispatcher, error) {
	byRef := map[string]*store.Resolved{}
	for _, r := range p.Tools {
		byRef[r.Name+"@"+r.Version] = r
	}
	var list []hooks.Hook
	for _, a := range p.Manifest.Artifacts {
		if a.RuntimeKind() != manifest.RuntimeHook {
			continue
		}
		r := byRef[a.Name+"@"+a.Version]
		if r == nil {
			continue // resolveTools refused a missing one already
		}
		g := tools.GrantOf(p.Grants, a).Grants
		env := grant.Env(sess, g.EnvAllow, p.lookup)
		if id := sess.FormationID(); id != "" {
			env[delegate.EnvFormationID] = id // handed to every hook
		}
		h := hooks.Hook{Resolved: r, Limits: g.Limits, Env: env,
			HTTPBounds: wit.HTTPBounds{MaxBodyBytes: wit.HTTPMaxBodyBytes(p.lookup), MaxInFlight: wit.HTTPMaxInFlight}}
		// Contracts §16: a hook sees no filesystem and no network beyond
		// what its own entry's capabilities grant; an entry without
		// capabilities inherits none of the capsule's.
		if c := a.Capabilities; c != nil {
			h.NetworkAllow = g.NetworkAllow
			if c.Filesystem.Scope.Set || c.Filesystem.WorkdirExec.Set {
				dir, err := tools.ScopeDir(sess.Workdir, g.FilesystemScope)
				if err != nil {
					return nil, diag.Wrap(err, "E-RUN-065", "hook %s: its filesystem scope cannot be opened", a.Name).
						WithHint("capabilities.filesystem.scope must name a folder inside the work folder (not a symlink leading out of it)")
				}
				h.Preopens = grant.Preopens(dir, sess.RuntimeDir)
			}
		}
		list = append(list, h)
	}
	if len(list) == 0 {
		return nil, nil
	}
	return hooks.Load(context.Background(), hooks.Config{Engine: eng, Hooks: list, Recorder: hookRecorder{rec},
		RecordsDir: sess.RecordsDir, Inference: infer, Logger: log})
}

// hookRecorder writes the dispatcher's lines through the session recorder.
type hookRecorder struct{ rec *trace.Recorder }

func (h hookRecorder) HookCall(c hooks.Call) {
	h.rec.HookCall(trace.HookCall{Hook: c.Hook, Event: c.Event, DurationMS: c.DurationMS, Status: c.Status,
		Error: c.Error, Output: c.Output, InputTokens: c.InputTokens, OutputTokens: c.OutputTokens})
}

func (h hookRecorder) CallDeadline(component, call string, d time.Duration) {
	h.rec.CallDeadline(component, call, d)
}

func (r *run) telemetry() *telemetry.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tel
}

// endAgent writes an agent's session_end and closes the session.
func (r *run) endAgent(status, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	r.endLocked(status, reason, true)
}

// doorRecorder writes the door's trace lines through the session recorder.
type doorRecorder struct{ rec *trace.Recorder }

func (d doorRecorder) TaskReceived(taskID, contextID, messageID string, origin door.Origin) {
	d.rec.Emit(trace.A2ATaskReceived{TaskID: taskID, ContextID: contextID, MessageID: messageID, Origin: string(origin)})
}

func (d doorRecorder) TaskRejected(taskID, reason string) {
	d.rec.Emit(trace.TaskRejected{TaskID: taskID, Reason: reason})
}

func (d doorRecorder) TaskCanceled(taskID string, phase door.Phase, delegationIDs []string) {
	if delegationIDs == nil {
		delegationIDs = []string{}
	}
	d.rec.Emit(trace.TaskCanceled{TaskID: taskID, Phase: string(phase), DelegationIDs: delegationIDs})
}

// spawnWiring is a session's part in delegation (contracts §18): as a
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
	cred        roostapi.Credential
	registered  bool
	rt          *delegate.Runtime
	windingDown atomic.Bool
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
	return ""
}

// sessionStart adds the delegation fields to session_start: spawned_by and
// delegation_id on a child, delegate-task in tools_declared on a parent.
func (w *spawnWiring) sessionStart(s trace.SessionStart, p *Plan) trace.SessionStart {
	if w.spawner != nil {
		by := w.spawner.SessionID
		s.SpawnedBy, s.DelegationID = &by, w.spawner.DelegationID
	}
	if len(w.spawnAllow) > 0 {
		s.ToolsDeclared = append(s.ToolsDeclared, delegate.ToolName)
	}
	if w.launched != nil {
		s.EffectiveGrants = withParentWorkdir(s.EffectiveGrants, w.launched.Snapshot, p.Containment.Achieved)
	}
	return s
}

// needNetNS refuses, with E-CAP-005, a capsule that declares spawn.allow
// or shell.allow on a host that refuses it a network namespace (the spec's
// "needs a network namespace of its own"). The child mur a delegation
// starts is outside the namespace (contracts §19: it reaches mur-roost), so
// the requirement is the refusal: there is no fallback to the host's
// network for whatever the capsule runs.
func (p *Plan) needNetNS() error {
	g := p.Grants.Capsule
	if len(g.SpawnAllow) == 0 && len(g.ShellAllow) == 0 {
		return nil
	}
	return egress.NeedNetNS()
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

func (w *spawnWiring) waiter() agent.Waiter {
	if w.rt == nil {
		return nil
	}
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
func (w *spawnWiring) watchLifeline(rec *trace.Recorder, bootstrapLog string, endRun context.CancelCauseFunc) {
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

// report is a delegated agent child's completion, once its session has
// ended: its result is its records dir's out/result.txt.
func (w *spawnWiring) report(sess *session.Session, status string, opts Options) {
	w.reportFrom(sess, sess.RecordsDir, status, opts)
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
