// Package hooks runs an agent capsule's lifecycle hooks (docs/agent-capsules.md):
// components of the hook world declared in its manifest with `runtime: hook`.
//
// Load compiles every hook at staging, checks that it is a component of the
// hook world, reads its binding from its own manifest and keeps one warm
// instance per hook for the session. The Dispatcher the loop holds then
// calls, at each event, every hook bound to it, in manifest order and
// blocking; each call is bounded by the hook's deadline (docs/agent-capsules.md,
// "Hooks": 30 s by default, a declared
// capabilities.limits.deadline_seconds replaces it, the hook's own entry's
// deadline_seconds wins) and leaves one hook_call line. A hook's error, trap
// or limit is that line plus one line in logs/hooks/<hook>.log, and the
// session moves on; a hook stopped while waiting on the runtime also leaves a
// call_deadline line and is never called again (each later event it is bound
// to is a hook_call with status not_called).
//
// What the hooks answer comes back to the loop as Outputs: artifact at any
// event, reopen-task at on-task-end, write-manifests at on-stage. Every other
// output is logged and ignored. No hook runs in a script capsule: only the
// agent loop builds a Dispatcher.
package hooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

// hook_call statuses (docs/agent-capsules.md).
const (
	StatusOK               = "ok"
	StatusError            = "error"
	StatusTrapped          = "trapped"
	StatusDeadlineExceeded = "deadline_exceeded"
	StatusResourceLimit    = "resource_limit"
	StatusNotCalled        = "not_called"
)

// BindingKey is the key of a hook's own manifest that binds it to one event.
const BindingKey = "binding"

// Call is one hook_call line (docs/agent-capsules.md).
type Call struct {
	Hook       string `json:"hook"`
	Event      string `json:"event"`
	DurationMS int64  `json:"duration_ms"`
	Status     string `json:"status"`
	// Error is the hook's err(string), the trap's message or the limit hit;
	// nil when the call was ok or not made.
	Error *string `json:"error"`
	// Output is the name of the hook-output case an ok call returned
	// ("none" included: docs/agent-capsules.md records the variant's name); nil when
	// the call failed or was not made.
	Output *string `json:"output"`
	// InputTokens and OutputTokens are the run-inference calls' totals.
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// StateStore is the state store the hook's component saw ("" for none).
	StateStore string `json:"state_store,omitempty"`
}

// Recorder is where the dispatcher writes its trace lines. *trace.Recorder
// has CallDeadline; HookCall writes one hook_call line.
type Recorder interface {
	HookCall(c Call)
	CallDeadline(component, call string, deadline time.Duration)
}

// InferenceFunc answers a hook's run-inference: one call through the
// capsule's driver, counted in the session's tokens. hook is the hook's name.
// An error is returned to the hook as err(message).
type InferenceFunc func(ctx context.Context, hook string, req wit.InferenceRequest) (wit.InferenceResponse, error)

// Hook is one `runtime: hook` artifact of the capsule's manifest, resolved by
// the caller.
type Hook struct {
	// Resolved is the hook artifact from the store: its archive's payload is
	// the component, its own murmur.yaml may set binding.
	Resolved *store.Resolved
	// Limits are the hook's effective limits (its manifest.ArtifactGrant's
	// Grants.Limits): HookDeadlineSeconds is the deadline of each call.
	Limits manifest.EffLimits
	// Env is its whole environment (grant.Env: the identity and its
	// env.allow names).
	Env map[string]string
	// Preopens are the folders it sees: none unless its entry declares
	// capabilities.filesystem (docs/agent-capsules.md), then the work folder or its
	// filesystem.scope and the runtime dir, as a tool sees them
	// (grant.Preopens).
	Preopens []wasmhost.Preopen
	// NetworkAllow is the wasi:http egress its entry's capabilities grant
	// (capabilities.network.allow narrowed to the capsule's); empty denies
	// every request.
	NetworkAllow []string
	// Callees are a formation member's callees (nil: none): its wasi:http
	// reaches them at their virtual addresses whatever NetworkAllow says
	// (wit.GrantHTTPMember).
	Callees *formation.Callees
	// HTTPBounds bound its wasi:http bodies and requests in flight; the
	// zero value is wit.DefaultHTTPBounds().
	HTTPBounds wit.HTTPBounds
	// State is the state store its entry declares (zero: none): preopened
	// as state and /state, its lock held and its size watched for each call.
	State StateStore
}

// StateStore is a hook's state store: its name, its folder, its lock file
// and capabilities.resources.state_max_bytes.
type StateStore struct {
	Name, Dir, Lock string
	MaxBytes        int64
}

// Config is what Load needs.
type Config struct {
	Engine *wasmhost.Engine
	// Hooks in manifest order.
	Hooks    []Hook
	Recorder Recorder
	// RecordsDir is the session's records dir: a hook's failures go to
	// logs/hooks/<hook>.log under it. "" writes no log files.
	RecordsDir string
	// Inference answers run-inference; nil answers every call with an
	// error the hook sees.
	Inference InferenceFunc
	// Logger gets the ignored outputs and log-file failures; nil is
	// slog.Default().
	Logger *slog.Logger
}

// Output is an honoured hook output, for the loop to act on.
type Output struct {
	// Hook is the hook's name.
	Hook string
	// Case is wit.OutputArtifact, OutputReopenTask (at on-task-end) or
	// OutputWriteManifests (at on-stage).
	Case string
	// Text is the artifact's text or the reopen reason.
	Text string
	// Manifests is write-manifests' payload.
	Manifests []wit.ToolManifest
}

// hook is one loaded hook and its session state.
type hook struct {
	name    string
	comp    *wasmhost.Component
	iface   string // the exact lifecycle interface it exports ("" for none)
	gate    string // the exact policy gate interface it exports ("" for none)
	bound   map[string]bool
	rc      wasmhost.RunConfig
	inst    *wasmhost.Instance // nil after an ending poisoned it: made again on the next call
	stopped bool               // stopped while waiting on the runtime: never called again
	logPath string
	inTok   int // run-inference tokens of the call in progress
	outTok  int
	engine  *wasmhost.Engine
	state   StateStore
}

// Dispatcher calls the session's hooks. Its methods are safe for concurrent
// use; calls are serialized (hooks run blocking, one at a time).
type Dispatcher struct {
	mu     sync.Mutex
	hooks  []*hook
	policy []*hook // the policy hooks, in manifest order
	rec    Recorder
	infer  InferenceFunc
	log    *slog.Logger
}

// Deadline is the deadline of each call of a hook with effective limits l.
func Deadline(l manifest.EffLimits) time.Duration {
	return time.Duration(l.HookDeadlineSeconds) * time.Second
}

// Load compiles, checks and instantiates every hook, in manifest order. A
// hook without a component, one that is not of the hook world (E-RUN-096)
// or whose binding names no event (E-RUN-095) is refused, and nothing is
// kept.
func Load(ctx context.Context, cfg Config) (_ *Dispatcher, err error) {
	d := &Dispatcher{rec: cfg.Recorder, infer: cfg.Inference, log: cfg.Logger}
	if d.log == nil {
		d.log = slog.Default()
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	for _, h := range cfg.Hooks {
		r := h.Resolved
		if r == nil || r.Archive == nil {
			return nil, fmt.Errorf("hooks: a hook was not resolved")
		}
		bound, err := binding(r)
		if err != nil {
			return nil, err
		}
		file, ok := r.Archive.PayloadName()
		var wasm []byte
		if ok {
			if wasm, err = r.Archive.ReadFile(file); err != nil {
				return nil, err // E-REG-002: the artifact changed since it was resolved
			}
		}
		if !ok || len(wasm) == 0 {
			return nil, diag.New("E-RUN-096", "hook %s has no component in its archive", r.Ref()).
				WithHint("a hook artifact holds a .wasm component of the hook world; rebuild it with scripts/build-component.sh <dir> hook <out.wasm>")
		}
		comp, err := cfg.Engine.CompileWith(wasm, wasmhost.CompileOptions{Name: r.Ref(), Digest: store.Digest(r, file)})
		if err != nil {
			return nil, diag.Wrap(err, "E-RUN-096", "hook %s cannot be compiled", r.Ref()).
				WithHint("a hook artifact holds a WASI 0.2 component of the hook world")
		}
		hk := &hook{name: r.Name, comp: comp, bound: bound, engine: cfg.Engine, state: h.State}
		d.hooks = append(d.hooks, hk)
		if hk.iface, hk.gate, err = wit.HookExports(comp, r.Ref()); err != nil {
			return nil, err
		}
		if hk.gate != "" {
			d.policy = append(d.policy, hk)
		}
		lim := grant.Limits(h.Limits)
		lim.Deadline = Deadline(h.Limits)
		pre := h.Preopens
		if h.State.Name != "" {
			pre = append(append([]wasmhost.Preopen(nil), pre...), grant.StatePreopens(h.State.Dir)...)
		}
		hk.rc = wasmhost.RunConfig{Limits: lim, Host: d.host(hk, h),
			WASI: wasmhost.WASI{Args: []string{manifest.Bare(r.Name)}, Env: h.Env, Preopens: pre}}
		wit.ChooseIO(comp, &hk.rc)
		if cfg.RecordsDir != "" {
			hk.logPath = filepath.Join(cfg.RecordsDir, "logs", "hooks", filepath.FromSlash(r.Name)+".log")
		}
		if hk.inst, err = cfg.Engine.Instantiate(ctx, comp, hk.rc); err != nil {
			return nil, diag.Wrap(err, "E-RUN-101", "hook %s cannot be instantiated", r.Ref()).
				WithHint("check the hook's start-up code and its limits (capabilities.limits)")
		}
	}
	return d, nil
}

// binding reads the hook's own manifest's binding: one event name, or every
// event but on-stage when absent.
func binding(r *store.Resolved) (map[string]bool, error) {
	all := func() map[string]bool {
		m := map[string]bool{}
		for _, e := range wit.HookEvents {
			if e != wit.HookOnStage {
				m[e] = true
			}
		}
		return m
	}
	raw, err := r.Archive.ReadFile("murmur.yaml")
	if err != nil {
		return all(), nil // the store has already refused an archive without one
	}
	var doc struct {
		Binding yaml.Node `yaml:"binding"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, diag.Wrap(err, "E-RUN-095", "hook %s: its murmur.yaml cannot be read for %s", r.Ref(), BindingKey).
			WithHint("fix the hook's murmur.yaml and build it again")
	}
	if doc.Binding.Kind == 0 {
		return all(), nil
	}
	b := &doc.Binding
	if b.Kind == yaml.ScalarNode && b.Tag != "!!null" {
		for _, e := range wit.HookEvents {
			if b.Value == e {
				return map[string]bool{e: true}, nil
			}
		}
	}
	shown := b.Value
	if b.Kind != yaml.ScalarNode {
		shown = "(not a single name)"
	}
	return nil, diag.New("E-RUN-095", "hook %s: %s %q names no event", r.Ref(), BindingKey, shown).
		WithHint("set %s in the hook's murmur.yaml to one of %s, or leave it out to bind every event but on-stage",
			BindingKey, strings.Join(wit.HookEvents, ", "))
}

// host grants the hook world's import, run-inference, and wasi:http as far
// as the hook's entry grants network (nothing when it grants none).
func (d *Dispatcher) host(hk *hook, decl Hook) *wasmhost.Host {
	h := wasmhost.NewHost()
	bounds := decl.HTTPBounds
	if bounds == (wit.HTTPBounds{}) {
		bounds = wit.DefaultHTTPBounds()
	}
	wit.GrantHTTPMember(h, decl.Callees, wit.NetworkAllow(decl.NetworkAllow, "capabilities.network.allow"),
		d.log.With("hook", hk.name), bounds)
	wit.GrantInference(h, func(ctx context.Context, req wit.InferenceRequest) (wit.InferenceResponse, error) {
		if d.infer == nil {
			return wit.InferenceResponse{}, errors.New("run-inference is not available in this session")
		}
		res, err := d.infer(ctx, hk.name, req)
		if err != nil {
			return wit.InferenceResponse{}, err
		}
		// Calls are serialized by d.mu: the counters belong to the call in progress.
		hk.inTok += int(res.InputTokens)
		hk.outTok += int(res.OutputTokens)
		return res, nil
	})
	return h
}

// Names lists the hooks in manifest order (session_start.hooks[]).
func (d *Dispatcher) Names() []string {
	if d == nil {
		return nil
	}
	out := make([]string, len(d.hooks))
	for i, h := range d.hooks {
		out[i] = h.name
	}
	return out
}

// Close frees every instance and component. The dispatcher is unusable
// afterwards.
func (d *Dispatcher) Close() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, h := range d.hooks {
		if h.inst != nil {
			errs = append(errs, h.inst.Close())
			h.inst = nil
		}
		errs = append(errs, h.comp.Close())
	}
	d.hooks, d.policy = nil, nil
	return errors.Join(errs...)
}

// The events, one method each: the loop fills the record, the dispatcher
// calls every hook bound to the event and returns the honoured outputs, in
// manifest order.

// OnStage calls the hooks bound to on-stage (only those that name it).
func (d *Dispatcher) OnStage(ctx context.Context, e wit.StageEvent) []Output {
	return d.dispatch(ctx, wit.HookOnStage, e.Value())
}

// OnSessionStart calls the hooks bound to on-session-start.
func (d *Dispatcher) OnSessionStart(ctx context.Context, c wit.SessionContext) []Output {
	return d.dispatch(ctx, wit.HookOnSessionStart, c.Value())
}

// OnTaskStart calls the hooks bound to on-task-start.
func (d *Dispatcher) OnTaskStart(ctx context.Context, e wit.TaskStartEvent) []Output {
	return d.dispatch(ctx, wit.HookOnTaskStart, e.Value())
}

// OnInference calls the hooks bound to on-inference.
func (d *Dispatcher) OnInference(ctx context.Context, e wit.InferenceEvent) []Output {
	return d.dispatch(ctx, wit.HookOnInference, e.Value())
}

// OnToolCall calls the hooks bound to on-tool-call.
func (d *Dispatcher) OnToolCall(ctx context.Context, e wit.ToolEvent) []Output {
	return d.dispatch(ctx, wit.HookOnToolCall, e.Value())
}

// OnShell calls the hooks bound to on-shell.
func (d *Dispatcher) OnShell(ctx context.Context, e wit.ShellEvent) []Output {
	return d.dispatch(ctx, wit.HookOnShell, e.Value())
}

// OnCompaction calls the hooks bound to on-compaction.
func (d *Dispatcher) OnCompaction(ctx context.Context, e wit.CompactionEvent) []Output {
	return d.dispatch(ctx, wit.HookOnCompaction, e.Value())
}

// OnTaskEnd calls the hooks bound to on-task-end; a reopen-task output asks
// the loop to run the task again (within lifecycle.max_task_reopens and
// max_turns, which are the loop's to enforce).
func (d *Dispatcher) OnTaskEnd(ctx context.Context, e wit.TaskEndEvent) []Output {
	return d.dispatch(ctx, wit.HookOnTaskEnd, e.Value())
}

// OnSessionEnd calls the hooks bound to on-session-end.
func (d *Dispatcher) OnSessionEnd(ctx context.Context, e wit.SessionEndEvent) []Output {
	return d.dispatch(ctx, wit.HookOnSessionEnd, e.Value())
}

func (d *Dispatcher) dispatch(ctx context.Context, event string, arg wasmhost.Value) []Output {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var outs []Output
	for _, h := range d.hooks {
		if h.iface == "" || !h.bound[event] {
			continue
		}
		if h.stopped {
			d.record(Call{Hook: h.name, Event: event, Status: StatusNotCalled})
			continue
		}
		if o, ok := d.call(ctx, h, event, arg); ok {
			outs = append(outs, o)
		}
	}
	return outs
}

// honoured tells which outputs are acted on at which event.
func honoured(event, output string) bool {
	switch output {
	case wit.OutputArtifact:
		return true
	case wit.OutputReopenTask:
		return event == wit.HookOnTaskEnd
	case wit.OutputWriteManifests:
		return event == wit.HookOnStage
	}
	return false
}

// call makes one lifecycle call and records it; ok reports an honoured output.
func (d *Dispatcher) call(ctx context.Context, h *hook, event string, arg wasmhost.Value) (Output, bool) {
	h.inTok, h.outTok = 0, 0
	start := time.Now()
	var out wit.HookOutput
	var err error
	if h.state.Name != "" {
		var done func()
		if ctx, done, err = holdState(ctx, h.state, h.rc.Limits.Deadline); err == nil {
			defer done()
		}
	}
	if err == nil && h.inst == nil {
		// An earlier ending poisoned its instance: the session's next call
		// gets a fresh one.
		h.inst, err = h.engine.Instantiate(ctx, h.comp, h.rc)
	}
	if err == nil {
		out, err = wit.CallHook(ctx, h.inst, h.iface, event, arg)
	}
	if err == nil && h.state.Name != "" {
		// Measured once more as the call ends (see holdState).
		if sl, ok := context.Cause(ctx).(*grant.StateLimitError); ok {
			err = sl
		} else if sl := grant.StateBytes(h.state.Name, h.state.Dir, h.state.MaxBytes); sl != nil {
			err = sl
		}
	}
	c := Call{Hook: h.name, Event: event, DurationMS: time.Since(start).Milliseconds(), Status: StatusOK,
		InputTokens: h.inTok, OutputTokens: h.outTok, StateStore: h.state.Name}
	if err != nil {
		var he *wit.HookError
		if errors.As(err, &he) {
			c.Status = StatusError
			c.Error = &he.Message
		} else {
			e := grant.EndingOf(err)
			switch e.Status {
			case trace.EndTrapped:
				c.Status = StatusTrapped
			case trace.EndDeadlineExceeded:
				c.Status = StatusDeadlineExceeded
			case trace.EndResourceLimit:
				c.Status = StatusResourceLimit
			default:
				c.Status = StatusError
			}
			reason := e.Reason
			if reason == "" {
				reason = err.Error()
			}
			c.Error = &reason
			if h.inst != nil {
				h.inst.Close()
				h.inst = nil
			}
			if e.WaitedOnRuntime {
				h.stopped = true
				d.rec.CallDeadline(h.name, event, h.rc.Limits.Deadline)
			}
		}
		d.record(c)
		d.logFailure(h, c)
		return Output{}, false
	}
	name := out.Case
	c.Output = &name
	d.record(c)
	if out.Case == wit.OutputNone {
		return Output{}, false
	}
	if !honoured(event, out.Case) {
		d.log.Info("hook output ignored", "hook", h.name, "event", event, "output", out.Case)
		return Output{}, false
	}
	return Output{Hook: h.name, Case: out.Case, Text: out.Text, Manifests: out.Manifests}, true
}

func (d *Dispatcher) record(c Call) {
	if d.rec != nil {
		d.rec.HookCall(c)
	}
}

// logFailure appends one line to the hook's log file.
func (d *Dispatcher) logFailure(h *hook, c Call) {
	if h.logPath == "" {
		return
	}
	msg := ""
	if c.Error != nil {
		msg = strings.ReplaceAll(*c.Error, "\n", " ")
	}
	line := fmt.Sprintf("%s %s %s: %s\n", time.Now().UTC().Format(time.RFC3339Nano), c.Event, c.Status, msg)
	if err := os.MkdirAll(filepath.Dir(h.logPath), 0o700); err != nil {
		d.log.Warn("hook log not written", "hook", h.name, "error", err)
		return
	}
	f, err := os.OpenFile(h.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		d.log.Warn("hook log not written", "hook", h.name, "error", err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		d.log.Warn("hook log not written", "hook", h.name, "error", err)
	}
}

// holdState takes a hook's store for one call: its lock (waiting at most
// the call's deadline; the wait does not shorten a warm instance's own
// deadline), a measure before the call (a store already past
// state_max_bytes is not called) and a watch while it runs, which stops
// the call past it. done releases them.
func holdState(ctx context.Context, st StateStore, wait time.Duration) (context.Context, func(), error) {
	ctx, done, _, err := grant.StateCall(st).Open(ctx, wait)
	return ctx, done, err
}
