package launch

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/murmur-go/murmur/internal/agent"
	"github.com/murmur-go/murmur/internal/contain/egress"
	"github.com/murmur-go/murmur/internal/delegate"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/hooks"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/membercall"
	"github.com/murmur-go/murmur/internal/peerfile"
	"github.com/murmur-go/murmur/internal/plan"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

// WindDownLimit bounds an agent session's wind-down (docs/agent-capsules.md): past
// it, or on a second signal, the session records its end and exits at once.
const WindDownLimit = 20 * time.Second

// agentRun is an agent capsule's part of a run (docs/agent-capsules.md):
// staging, the door's listener, MURMUR.md, session_start, serving, the
// running record and the --json line — in that order, so no request is
// answered before session_start exists — then tasks until the lifecycle, a
// signal or murmur.StopSession ends the session.
type agentRun struct {
	acceptance string
	px         *egress.Proxy // nil when the capsule runs no native command
	proxyEnv   []string
	drv        driver.Driver
	ln         net.Listener
	addr       string
	hooks      *hooks.Dispatcher
	inv        *tools.Inventory
	mcp        *mcpServers
	plane      *peerfile.Plane     // exports.peer_files; nil: none
	calls      *membercall.Runtime // call-member's calls; nil: no callee

	// loop is the inference loop once the session exists: a hook's
	// run-inference goes through it (its driver, its token ceiling).
	loopMu sync.Mutex
	loop   *agent.Session
}

func (k *agentRun) name() string { return "agent" }

// open reads the task, starts the egress proxy, compiles the tools and the
// driver and binds the door's listener, all before the session exists.
func (k *agentRun) open(_ context.Context, r *run) error {
	p := r.p
	m := p.Manifest
	task, err := readTask(r.opts.Task, os.Stdin, r.opts.Stderr)
	if err != nil {
		return err
	}
	r.task = task
	k.acceptance = m.Lifecycle.Acceptance()
	if k.acceptance == "none" && task == "" {
		return diag.New("E-RUN-041", "%s accepts no task at its door (lifecycle.task_acceptance: none), so it needs --task", m.Name).
			WithHint("run it with --task FILE|TEXT, or set lifecycle.task_acceptance to single or queue")
	}
	// Commands run in a network namespace with only loopback; the egress
	// proxy, listening inside it, forwards what network.allow covers. A
	// host that refuses the namespace refuses the launch (E-CAP-005)
	// before session_start, for spawn.allow as for shell.allow.
	if p.Containment.Native {
		if k.px, err = egress.Start(p.Grants.Capsule.NetworkAllow); err != nil {
			return err
		}
		k.proxyEnv = egress.Env()
	} else if err := p.needNetNS(); err != nil {
		return err
	}
	if err := r.engine(); err != nil {
		return err
	}
	if k.drv, err = p.newDriver(r.eng); err != nil {
		return err
	}
	if k.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return diag.Wrap(err, "E-RUN-049", "the door cannot listen on 127.0.0.1").
			WithHint("check that loopback networking is up")
	}
	k.addr = k.ln.Addr().String()
	r.url = "http://" + k.addr
	return nil
}

// infer is a hook's run-inference.
func (k *agentRun) infer(ctx context.Context, hook string, req wit.InferenceRequest) (wit.InferenceResponse, error) {
	k.loopMu.Lock()
	l := k.loop
	k.loopMu.Unlock()
	if l == nil {
		return wit.InferenceResponse{}, fmt.Errorf("run-inference is not available before the session starts")
	}
	return l.HookInference(ctx, hook, req)
}

// start loads the hooks — compiled before session_start, which names them;
// one that is not a hook-world component refuses the session — and writes
// the agent's session_start.
func (k *agentRun) start(r *run, sess *session.Session, rec *trace.Recorder) error {
	p := r.p
	m := p.Manifest
	hk, err := loadHooks(p, r.eng, sess, rec, k.infer, r.opts.Log)
	if err != nil {
		return err
	}
	k.hooks = hk
	in := m.Inference
	var ceiling *int
	if in.MaxSessionTokens.Set {
		v := in.MaxSessionTokens.V
		ceiling = &v
	}
	info := k.drv.Info()
	declared := append(append(p.ToolNames(), peerToolNames(p)...), memberToolNames(p)...)
	if p.Grants.Plan.Submit {
		declared = append(declared, plan.ToolName)
	}
	rec.Emit(trace.AgentSessionStart{
		SessionStart: r.dl.sessionStart(trace.SessionStart{CapsuleName: sess.Name, CapsuleVersion: sess.Version, Kind: "agent",
			ToolsDeclared: declared, EffectiveGrants: p.GrantsJSON}, p),
		Model:    in.Model,
		Driver:   trace.DriverInfo{Name: info.Name, Version: info.Version, Implementation: info.Implementation, SHA256: info.SHA256},
		MaxTurns: in.MaxTurns.Or(manifest.DefaultMaxTurns), MaxSessionTokens: ceiling,
		TaskAcceptance: m.Lifecycle.Acceptance(), AfterTask: m.Lifecycle.AfterTaskMode(),
		URL: r.url, SystemPromptSHA256: agent.PromptSHA256(p.SystemPrompt), Hooks: append([]string{}, hk.Names()...),
		PolicyHooks: append([]string{}, hk.PolicyNames()...), ApprovalRequired: approvalModelNames(m),
		InputTimeoutSecs: inputTimeoutSecs(m),
		MCPServers:       p.MCPServers(),
	})
	r.mu.Lock()
	r.agent = true
	r.mu.Unlock()
	return nil
}

// serve builds the inventory and the loop, serves the door, and waits for
// the session's end: the door's, a signal's, a lifeline's, or a work
// folder past its bound; then winds down.
func (k *agentRun) serve(ctx context.Context, r *run) (ending, error) {
	// A closed lifeline winds the session down through a context of its
	// own: the wind-down bounds itself, so the run's hard-exit fallback is
	// not armed by it.
	ctx, endRun := context.WithCancelCause(ctx)
	defer endRun(nil)
	p, sess, rec, dl := r.p, r.sess, r.rec, r.dl
	m := p.Manifest
	if k.px != nil && r.egress != nil {
		k.px.SetLogger(r.egress.logger)
	}
	bindDriver(k.drv, sess, rec)
	// Every MCP server is ready (started by the run right after
	// session_start) before the inventory, MURMUR.md, the door and the
	// ready line: the model's tool list is fixed before the first task.
	loop, err := k.build(r)
	if err != nil {
		k.mcp.stop()
		return ending{}, err
	}
	k.loopMu.Lock()
	k.loop = loop
	k.loopMu.Unlock()
	k.hooks.OnStage(ctx, wit.StageEvent{ShellAllow: p.Grants.Capsule.ShellAllow})
	k.hooks.OnSessionStart(ctx, wit.SessionContext{CapsuleName: sess.Name, CapsuleVersion: sess.Version,
		SessionID: sess.ID, Model: m.Inference.Model, Capabilities: p.Grants.Lines()})
	dr, err := door.New(door.Config{Name: sess.Name, Version: sess.Version, SessionID: sess.ID, URL: r.url,
		TaskAcceptance: k.acceptance, QueueDepth: m.Lifecycle.QueueDepth.Or(manifest.DefaultQueueDepth),
		AfterTask: m.Lifecycle.AfterTaskMode(), Runner: k.calls.Runner(dl.runner(loop)), Recorder: doorRecorder{rec}, Logger: r.opts.Log,
		Completions: dl.completions(), PeerFiles: peerfile.Handler(k.plane),
		Auth: doorAuth(r)})
	if err != nil {
		return ending{}, err
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = dr.Serve(k.ln) }()
	r.ready(&k.addr)
	if r.task != "" {
		if _, err := dr.SubmitTask(ctx, r.task); err != nil {
			r.opts.Log.Warn("the --task task was not accepted", "error", err)
		}
	}

	e := ending{Result: Result{SessionID: sess.ID, Name: sess.Name, Version: sess.Version, RecordsDir: sess.RecordsDir,
		Answer: filepath.Join(sess.RecordsDir, filepath.FromSlash(AnswerFile))}, flush: true, resultDir: sess.RecordsDir}
	r.watchLifeline(endRun)
	full := watchWorkdir(ctx, sess, m.Capabilities.EffLimits().WorkdirMaxBytes, dr)
	dl.windingDown.Store(true)
	status, reason := windDown(ctx, dr, rec, full, &e)
	k.mcp.stop()
	k.calls.Close()
	dl.close(status)
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_ = dr.Shutdown(sctx)
	cancel()
	dr.Close()
	<-served
	if k.plane != nil {
		k.plane.Close() // every handle of the session is revoked with its key
	}
	e.Ending, e.Reason = status, reason
	tot := rec.AgentTotals()
	if k.px != nil { // a nil *egress.Proxy is not a nil counter
		e.Refused, e.EgressLog = r.egress.count(k.px)
	} else {
		e.Refused, e.EgressLog = r.egress.count(nil)
	}
	k.hooks.OnSessionEnd(context.WithoutCancel(ctx), wit.SessionEndEvent{TotalTurns: uint32(tot.Turns),
		TotalInputTokens: uint64(tot.InputTokens), TotalOutputTokens: uint64(tot.OutputTokens),
		TotalToolCalls: uint32(tot.ToolCalls), TotalShellCalls: uint32(tot.ShellCalls),
		DurationMS: uint64(time.Since(sess.Started).Milliseconds()), ExitStatus: status})
	// A member whose formation ended exits 0 (docs/formations.md): no
	// E-RUN-040 for an ending the formation chose.
	if e.traceFailed == nil && e.Signal == nil && status != trace.EndOK && status != trace.EndFormationEnded {
		e.Err = endedError(sess, loop, status, reason)
	}
	return e, nil
}

// endedError is E-RUN-040, an agent session that did not end ok: why is
// the last failed task's text, else the session's reason.
func endedError(sess *session.Session, loop *agent.Session, status, reason string) error {
	why := ""
	if f := loop.LastFailure(); f != "" && status != trace.EndResourceLimit {
		why = ": " + f
	} else if reason != "" {
		why = ": " + reason
	}
	return diag.New("E-RUN-040", "the session ended %s%s", status, why).
		WithHint("run 'mur trace show %s' to see each task", sess.ID)
}

// build makes the session's inventory (with delegate-task for a parent),
// lists it in MURMUR.md, and makes the inference loop over it.
func (k *agentRun) build(r *run) (*agent.Session, error) {
	p, sess, rec, dl := r.p, r.sess, r.rec, r.dl
	m := p.Manifest
	wrap, err := p.commandWrap(sess, k.px)
	if err != nil {
		return nil, err
	}
	k.inv, err = tools.Build(p.toolsEnv(&tools.Env{Engine: r.eng, Session: sess, Lookup: p.lookup, Logger: r.opts.Log, Wrap: wrap,
		ProxyEnv: k.proxyEnv, Preloaded: r.pre}), m, p.Grants, p.Tools)
	if err != nil {
		return nil, err
	}
	for _, e := range k.mcp.entries() {
		if err := k.inv.Add(e); err != nil {
			return nil, err
		}
	}
	if rt := dl.runtime(p, sess, rec, r.url, r.opts); rt != nil {
		if err := k.inv.Add(rt.Tool()); err != nil {
			return nil, err
		}
	}
	if err := k.addPeerTools(r); err != nil {
		return nil, err
	}
	if err := k.addMemberTools(r); err != nil {
		return nil, err
	}
	// submit-plan, for an agent capsule granted it (docs/plans.md); bound
	// to the whole inventory once it is built.
	var submit *plan.Tool
	var at *agentTools
	if p.Grants.Plan.Submit {
		submit = plan.NewTool(plan.ToolConfig{RuntimeDir: sess.RuntimeDir, Lines: rec,
			Cut:      func(id, text string) string { return at.cut(id, text) },
			Capsules: dl.capsuleSteps(p)})
		if err := k.inv.Add(submit); err != nil {
			return nil, err
		}
		submit.Bind(k.inv, plan.NewCatalog(k.inv, modelNames(k.inv), p.Grants.Capsule.ShellAllow, p.Grants.Capsule.SpawnAllow))
	}
	k.inv.SetGate(gateConfig(m, k.hooks))
	at = newAgentTools(k.inv, rec, sess.RecordsDir, k.hooks, dl.tasks)
	var lines []session.ToolLine
	for _, e := range k.inv.Entries() {
		desc := e.Description()
		if e.Kind() == tools.KindMCP {
			desc, _, _ = strings.Cut(desc, "\n")
		}
		if k.inv.NeedsApproval(e.Name()) {
			desc += " (operator approval)"
		}
		lines = append(lines, session.ToolLine{Name: e.Name(), Kind: e.Kind(), Description: desc})
	}
	sess.SetMCPServers(p.mcpDocLines())
	if err := sess.SetTools(lines, p.GrantsJSON); err != nil {
		fmt.Fprintln(r.opts.Stderr, diag.Warn("W-IO-055", "MURMUR.md could not list the tools: %v", err).String())
	}
	in := m.Inference
	loop := agent.New(agent.Config{
		Driver: k.drv, Model: in.Model,
		MaxTurns: in.MaxTurns.Or(manifest.DefaultMaxTurns), MaxTokens: in.MaxTokens.Or(manifest.DefaultMaxTokens),
		MaxSessionTokens: in.MaxSessionTokens.Or(0),
		CallDeadline:     time.Duration(m.Capabilities.EffLimits().DeadlineSeconds) * time.Second,
		System: agent.SystemPrompt(agent.Identity{Name: sess.Name, Version: sess.Version, SessionID: sess.ID,
			Workdir: sess.Workdir}, p.SystemPrompt),
		Tools: at, Recorder: rec,
		Hooks:      k.hooks,
		ResultPath: filepath.Join(sess.RecordsDir, "out", "result.txt"),
		Waiter:     k.waiter(dl, rec),
		Endings:    k.endings(),
	})
	return loop, nil
}

// watchWorkdir waits for the door to end, the run's context to end, or
// capabilities.resources.workdir_max_bytes to be passed while the session
// runs: a work folder past it (with the commands' HOME, which they can
// write as freely) winds the session down, resource_limit.
func watchWorkdir(ctx context.Context, sess *session.Session, max int64, dr *door.Server) *grant.WorkdirLimitError {
	overflow := make(chan *grant.WorkdirLimitError, 1)
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go grant.WatchWorkdirAndHome(wctx, sess.Workdir, sessionHome(sess), max, func(e *grant.WorkdirLimitError) {
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
	return full
}

// windDown ends the door's tasks as the session's end requires and returns
// the session's exit status and reason, setting e's signal and trace
// failure. The status is read after the runners have returned: a task the
// wind-down cancelled writes its task_end first.
func windDown(ctx context.Context, dr *door.Server, rec *trace.Recorder, full *grant.WorkdirLimitError, e *ending) (status, reason string) {
	sig, signalledNow := signalled(ctx)
	stopped := dr.EndReason() == door.EndStopSession
	tf := traceFailure(ctx)
	if signalledNow {
		tf = nil
	}
	if full != nil || tf != nil {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), WindDownLimit)
		dr.WindDown(wctx)
		_ = dr.Wait(wctx)
		cancel()
		if full != nil {
			status, reason = trace.EndResourceLimit, full.Error()
		} else {
			status, reason = trace.EndFailed, tf.Error()
		}
	} else if fe := formationEnded(ctx); signalledNow || stopped || fe {
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
		if fe && !signalledNow {
			// The formation ended: live or queued tasks canceled, exit 0.
			e.traceFailed = tf
			if status != "" {
				return trace.EndFormationEnded, "the formation ended"
			}
			return trace.EndOK, "the formation ended"
		}
		if signalledNow {
			reason = sig.Reason()
			e.Signal = sig
		} else if status != "" {
			// mur stop canceled a live or queued task: the session did not
			// end ok, and exits as SIGTERM does.
			e.Signal = &Signalled{Signal: syscall.SIGTERM}
		}
		// Otherwise mur stop ended an idle session cleanly: it ends ok and
		// exits 0, not 143 (which scripts read as a kill).
	} else {
		_ = dr.Wait(context.Background())
	}
	e.traceFailed = tf
	if status == "" {
		status = rec.LastTaskNotOK()
	}
	if status == "" {
		status = trace.EndOK
	}
	if stopped && !signalledNow && e.Signal == nil && status != trace.EndOK {
		// A stop whose task ended canceled on its own path (not in
		// WindDown's list) is still a stop that canceled work: 143.
		e.Signal = &Signalled{Signal: syscall.SIGTERM}
	}
	return status, reason
}

// close runs after session_end.
// peerToolNames are the peer file plane's runtime tools the session has,
// for session_start.tools_declared (addPeerTools adds them).
func peerToolNames(p *Plan) []string {
	var out []string
	if p.Grants.PeerFiles != nil {
		out = append(out, peerfile.ShareToolName)
	}
	if len(p.Grants.Capsule.PeerFetchAllow) > 0 {
		out = append(out, peerfile.FetchToolName)
	}
	return out
}

// addPeerTools adds share-file (exports.peer_files) and fetch-peer-file
// (a non-empty capabilities.peer_fetch.allow) to the inventory
// (docs/peer-files.md).
func (k *agentRun) addPeerTools(r *run) error {
	p, sess, rec := r.p, r.sess, r.rec
	if g := p.Grants.PeerFiles; g != nil {
		pl, err := peerfile.NewPlane(sess.ID, r.url, sess.Workdir, *g)
		if err != nil {
			return fmt.Errorf("the peer file plane's key: %w", err)
		}
		pl.OnRedeem = func(l trace.PeerHandleRedeem) { rec.Emit(l) }
		k.plane = pl
		if err := k.inv.Add(&peerfile.ShareTool{Plane: pl}); err != nil {
			return err
		}
	}
	if allow := p.Grants.Capsule.PeerFetchAllow; len(allow) > 0 {
		if err := makePeerIn(p, sess.Workdir); err != nil {
			return err
		}
		lim := p.Manifest.Capabilities.EffLimits()
		f := &peerfile.Fetcher{Workdir: sess.Workdir, Allow: allow, WorkdirMax: lim.WorkdirMaxBytes,
			MaxBody: wit.HTTPMaxBodyBytes(p.lookup),
			Client:  doorapi.NewClient("", &http.Client{Transport: &http.Transport{Proxy: nil}})}
		if err := k.inv.Add(&peerfile.FetchTool{Fetcher: f, Deadline: time.Duration(lim.DeadlineSeconds) * time.Second}); err != nil {
			return err
		}
	}
	return nil
}

func (k *agentRun) close() {
	k.mcp.stop()
	k.hooks.Close()
	if k.inv != nil {
		k.inv.Close()
	}
	if c, ok := k.drv.(interface{ Close() }); ok {
		c.Close()
	}
	if k.ln != nil {
		k.ln.Close()
	}
	if k.px != nil {
		k.px.Close()
	}
}

// loadHooks compiles the capsule's runtime: hook artifacts, in manifest
// order, each with its own narrowed grant.
func loadHooks(p *Plan, eng *wasmhost.Engine, sess *session.Session, rec *trace.Recorder, infer hooks.InferenceFunc, log *slog.Logger) (*hooks.Dispatcher, error) {
	// Hooks are instantiated once, before the fetch tool is built: peer-in/
	// must be there now for a hook's read-only peer-in preopen.
	if err := makePeerIn(p, sess.Workdir); err != nil {
		return nil, err
	}
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
		h := hooks.Hook{Resolved: r, Limits: g.Limits, Env: env, Callees: sess.Callees,
			HTTPBounds: wit.HTTPBounds{MaxBodyBytes: wit.HTTPMaxBodyBytes(p.lookup), MaxInFlight: wit.HTTPMaxInFlight}}
		// docs/agent-capsules.md: a hook sees no filesystem and no network beyond
		// what its own entry's capabilities grant; an entry without
		// capabilities inherits none of the capsule's.
		if c := a.Capabilities; c != nil {
			h.NetworkAllow = g.NetworkAllow
			if c.Filesystem.Scope.Set || c.Filesystem.WorkdirExec.Set {
				pre, err := hookPreopens(sess.Workdir, sess.RuntimeDir, g.FilesystemScope)
				if err != nil {
					return nil, diag.Wrap(err, "E-RUN-065", "hook %s: its filesystem scope cannot be opened", a.Name).
						WithHint("capabilities.filesystem.scope must name a folder inside the work folder (not a symlink leading out of it)")
				}
				h.Preopens = pre
			}
		}
		if st, ok := a.StateStoreName(manifest.Bare(p.Manifest.Name)); ok {
			h.State = hooks.StateStore{Name: st, Dir: home.StateStore(p.Home, st), Lock: home.StateLock(p.Home, st),
				MaxBytes: p.Manifest.Capabilities.Resources.StateMaxBytes.Or(manifest.DefaultStateMaxBytes)}
		}
		list = append(list, h)
	}
	if len(list) == 0 {
		return nil, nil
	}
	return hooks.Load(context.Background(), hooks.Config{Engine: eng, Hooks: list, Recorder: hookRecorder{rec},
		RecordsDir: sess.RecordsDir, Inference: infer, Logger: log})
}

// makePeerIn makes peer-in/ in workdir for a capsule granted
// capabilities.peer_fetch.allow: the runtime's from the start, 0555,
// read-only to the capsule's code (its components see it through a
// read-only preopen). A folder already there is kept.
func makePeerIn(p *Plan, workdir string) error {
	if len(p.Grants.Capsule.PeerFetchAllow) == 0 {
		return nil
	}
	if err := os.Mkdir(filepath.Join(workdir, peerfile.InDir), 0o555); err != nil && !os.IsExist(err) {
		return fmt.Errorf("peer-in/ cannot be made in the work folder: %w", err)
	}
	return nil
}

// hookPreopens is the filesystem of a hook whose entry declares one: its
// view (scope's folder, or the whole work folder) and the runtime
// directory; a view that is the whole work folder also sees peer-in/
// through read-only preopens, as a tool's does.
func hookPreopens(workdir, runtimeDir string, scope *string) ([]wasmhost.Preopen, error) {
	dir, err := tools.ScopeDir(workdir, scope)
	if err != nil {
		return nil, err
	}
	pre := grant.Preopens(dir, runtimeDir)
	if scope == nil {
		pre = append(pre, grant.PeerInPreopens(workdir)...)
	}
	return pre, nil
}

// hookRecorder writes the dispatcher's lines through the session recorder.
type hookRecorder struct{ rec *trace.Recorder }

func (h hookRecorder) HookCall(c hooks.Call) {
	h.rec.HookCall(trace.HookCall{Hook: c.Hook, Event: c.Event, DurationMS: c.DurationMS, Status: c.Status,
		Error: c.Error, Output: c.Output, InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, StateStore: c.StateStore})
}

func (h hookRecorder) CallDeadline(component, call string, d time.Duration) {
	h.rec.CallDeadline(component, call, d)
}

// doorRecorder writes the door's trace lines through the session recorder.
type doorRecorder struct{ rec *trace.Recorder }

func (d doorRecorder) TaskReceived(taskID, contextID, messageID string, origin door.Origin) {
	d.rec.Emit(trace.A2ATaskReceived{TaskID: taskID, ContextID: contextID, MessageID: messageID, Origin: string(origin)})
}

func (d doorRecorder) TaskReceivedFrom(taskID, contextID, messageID string, origin door.Origin, caller string) {
	d.rec.Emit(trace.A2ATaskReceived{TaskID: taskID, ContextID: contextID, MessageID: messageID, Origin: string(origin), CallerMember: caller})
}

func (d doorRecorder) TaskRejected(taskID, reason string) {
	d.rec.Emit(trace.TaskRejected{TaskID: taskID, Reason: reason})
}

func (d doorRecorder) TaskCanceled(taskID string, phase door.Phase, res door.Residue) {
	d.rec.Emit(trace.TaskCanceled{TaskID: taskID, Phase: string(phase), DelegationIDs: nonNil(res.Delegations),
		MemberCallIDs: nonNil(res.MemberCalls)})
}

// nonNil is ids, or [] for none: a line's list is never null.
func nonNil(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

// doorAuth is the door's bearer authentication and peer consent: the
// operator token, and a member's formation verify key.
func doorAuth(r *run) *door.Auth {
	m := r.p.Manifest
	a := &door.Auth{Realm: r.sess.Name, OperatorToken: r.doorToken, AcceptPeer: m.Door.AcceptsPeerTasks()}
	if mem := r.dl.member; mem != nil {
		if key, err := formation.DecodeKey(mem.VerifyKey); err == nil {
			a.FormationID, a.Member, a.VerifyKey = mem.FormationID, mem.Member, key
		}
	}
	return a
}
