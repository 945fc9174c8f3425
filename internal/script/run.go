// Package script runs a script capsule to one of its endings
// (docs/running-capsules.md "Endings"): one fresh instance of the capsule's
// component, `run` called once, inside the session's work folder with the
// runtime dir mounted read-only, bounded by the manifest's limits.
//
// The host interfaces a component may import (murmur:tool-registry,
// artifact-manager, message) live in internal/hostapi; this package takes
// them as an Imports value, so it depends only on the shape it consumes and
// a capsule whose imports are not granted still runs (each ungranted call
// fails with an error naming the capability).
package script

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/logfile"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

// Log files in the records dir's logs/.
const (
	StdoutLog = "stdout.log"
	StderrLog = "stderr.log"
	HTTPLog   = "http.log"
)

// Imports grants host functions to a run. Define is called once per run,
// before instantiation, with the recorder every event must go through.
type Imports interface {
	Define(h *wasmhost.Host, rec *trace.Recorder) error
}

// Config is one script capsule run.
type Config struct {
	Engine    *wasmhost.Engine
	Component *wasmhost.Component
	// ComponentName names the component in call_deadline lines ("capsule.wasm").
	ComponentName string
	Session       *session.Session
	Recorder      *trace.Recorder
	// Limits are the capsule's effective limits (defaults applied).
	Limits manifest.EffLimits
	// EnvAllow is capabilities.env.allow; Lookup reads mur's own environment.
	EnvAllow []string
	Lookup   func(string) (string, bool)
	// NetworkAllow is capabilities.network.allow: the origins the capsule's
	// wasi:http may reach (none when empty).
	NetworkAllow []string
	// Imports grants the murmur:* host interfaces; nil grants none.
	Imports Imports
}

// Result is how the run ended.
type Result struct {
	// Ending is one of trace.EndOK, EndTrapped, EndDeadlineExceeded,
	// EndResourceLimit, EndFailed.
	Ending string
	// Reason says why, for anything but ok ("" for ok).
	Reason string
	// Err is the error behind a non-ok ending.
	Err error
}

// Run instantiates the component in a fresh store and calls run once. It
// records a call_deadline line when the call is stopped while waiting on the
// runtime; the caller writes session_end from the Result.
func Run(ctx context.Context, cfg Config) Result {
	s := cfg.Session
	env := grant.Env(s, cfg.EnvAllow, cfg.Lookup)
	host := wasmhost.NewHost()
	// wasi:http: a request goes out when capabilities.network.allow covers
	// it; a refusal is logged to logs/http.log. The capsule's
	// own requests are not traced.
	httpLog, err := logfile.NewCappedLog(filepath.Join(s.RecordsDir, "logs", HTTPLog), 0, 0, true)
	if err != nil {
		return Result{Ending: trace.EndFailed, Reason: "logs: " + err.Error(), Err: err}
	}
	defer httpLog.Close()
	wit.GrantHTTPMember(host, s.Callees, wit.NetworkAllow(cfg.NetworkAllow, "capabilities.network.allow"),
		slog.New(slog.NewTextHandler(httpLog, nil)),
		wit.HTTPBounds{MaxBodyBytes: wit.HTTPMaxBodyBytes(cfg.Lookup), MaxInFlight: wit.HTTPMaxInFlight})
	if cfg.Imports != nil {
		if err := cfg.Imports.Define(host, cfg.Recorder); err != nil {
			return Result{Ending: trace.EndFailed, Reason: "host interfaces: " + err.Error(), Err: err}
		}
	}
	lim := grant.Limits(cfg.Limits)
	// The engine writes the guest's stdio to a path; a pipe there lets
	// the logs keep their head and tail only, and keeps stderr's last lines
	// for the ending's reason.
	stdout, err := logfile.NewLogPipe(filepath.Join(s.RecordsDir, "logs", StdoutLog))
	if err != nil {
		return Result{Ending: trace.EndFailed, Reason: "logs: " + err.Error(), Err: err}
	}
	stderr, err := logfile.NewLogPipe(filepath.Join(s.RecordsDir, "logs", StderrLog))
	if err != nil {
		stdout.Close(0)
		return Result{Ending: trace.EndFailed, Reason: "logs: " + err.Error(), Err: err}
	}
	res := run(ctx, cfg, host, env, lim, stdout, stderr)
	// Closing the instance closed the engine's writers: what the pipes
	// still hold is read before the logs are closed.
	stdout.Close(lim.Grace)
	stderr.Close(lim.Grace)
	if res.Ending != trace.EndOK {
		res.Reason = withStderr(res.Reason, stderr.Log.LastLines(StderrReasonLines))
	}
	return res
}

// StderrReasonLines is how many of the guest's last stderr lines a non-ok
// ending's reason carries: the cause (a Go panic's message, a tool's
// complaint) is usually there, not in the engine's trap.
const StderrReasonLines = 10

// withStderr puts a guest's last stderr lines under reason.
func withStderr(reason string, lines []string) string {
	if len(lines) == 0 {
		return reason
	}
	var b strings.Builder
	b.WriteString(reason)
	b.WriteString("\nthe guest's stderr ends:")
	for _, l := range lines {
		b.WriteString("\n  ")
		b.WriteString(strings.ToValidUTF8(l, "\uFFFD"))
	}
	return b.String()
}

// run instantiates and calls the component with its stdio on the pipes,
// stopped early when its work folder passes workdir_max_bytes.
func run(ctx context.Context, cfg Config, host *wasmhost.Host, env map[string]string, lim wasmhost.Limits, stdout, stderr *logfile.LogPipe) Result {
	s := cfg.Session
	ctx, cancel := context.WithCancelCause(ctx)
	var watch sync.WaitGroup
	defer watch.Wait()
	defer cancel(nil) // ends the watcher before Wait (deferred calls run last first)
	watch.Go(func() {
		grant.WatchWorkdir(ctx, s.Workdir, cfg.Limits.WorkdirMaxBytes, func(e *grant.WorkdirLimitError) { cancel(e) })
	})
	rc := wasmhost.RunConfig{
		Limits: lim,
		Host:   host,
		WASI: wasmhost.WASI{
			Args:       []string{cfg.ComponentName},
			Env:        env,
			StdoutPath: stdout.Path,
			StderrPath: stderr.Path,
			Preopens:   grant.Preopens(s.Workdir, s.RuntimeDir),
		},
	}
	wit.ChooseIO(cfg.Component, &rc)
	inst, err := cfg.Engine.Instantiate(ctx, cfg.Component, rc)
	stdout.Opened()
	stderr.Opened()
	if err != nil {
		return classify(cfg, lim, "instantiate", err)
	}
	defer inst.Close()
	if err := wit.CallCapsuleRun(ctx, inst); err != nil {
		return classify(cfg, lim, wit.IfaceCapsuleRun+"#"+wit.RunFunc, err)
	}
	if e, ok := context.Cause(ctx).(*grant.WorkdirLimitError); ok {
		// run returned as the folder passed the limit: still past it.
		return Result{Ending: trace.EndResourceLimit, Reason: e.Error(), Err: e}
	}
	return Result{Ending: trace.EndOK}
}

// classify records the call_deadline line a deadline passed while waiting
// on the runtime leaves, and words the ending as the run's Result.
func classify(cfg Config, lim wasmhost.Limits, call string, err error) Result {
	e := grant.EndingOf(err)
	if e.WaitedOnRuntime {
		// The line names the component call the deadline stopped; what it
		// was waiting on goes in the reason.
		cfg.Recorder.CallDeadline(cfg.ComponentName, call, lim.Deadline)
	}
	return Result{Ending: e.Status, Reason: e.Reason, Err: e.Err}
}
