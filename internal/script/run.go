// Package script runs a script capsule to one of its endings (capsules.txt
// "Script capsules", "Execution limits"): one fresh instance of the capsule's
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
	"os"
	"path/filepath"
	"sync"

	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/sandbox"
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

// lazyFile creates its file on the first write, so a run that makes no
// request leaves no empty log behind.
type lazyFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
	err  error
}

func (l *lazyFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && l.err == nil {
		l.f, l.err = os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.f.Write(p)
}

func (l *lazyFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		return l.f.Close()
	}
	return nil
}

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
	env := sandbox.Env(s, cfg.EnvAllow, cfg.Lookup)
	host := wasmhost.NewHost()
	// wasi:http: a request goes out when capabilities.network.allow covers
	// it (contracts §17); a refusal is logged to logs/http.log. The capsule's
	// own requests are not traced.
	httpLog := &lazyFile{path: filepath.Join(s.RecordsDir, "logs", HTTPLog)}
	defer httpLog.Close()
	wit.GrantHTTPBounded(host, wit.NetworkAllow(cfg.NetworkAllow, "capabilities.network.allow"),
		slog.New(slog.NewTextHandler(httpLog, nil)),
		wit.HTTPBounds{MaxBodyBytes: wit.HTTPMaxBodyBytes(cfg.Lookup), MaxInFlight: wit.HTTPMaxInFlight})
	if cfg.Imports != nil {
		if err := cfg.Imports.Define(host, cfg.Recorder); err != nil {
			return Result{Ending: trace.EndFailed, Reason: "host interfaces: " + err.Error(), Err: err}
		}
	}
	// The engine creates both logs owner-only, like every file of the records dir.
	stdoutPath := filepath.Join(s.RecordsDir, "logs", StdoutLog)
	stderrPath := filepath.Join(s.RecordsDir, "logs", StderrLog)
	lim := sandbox.Limits(cfg.Limits)
	rc := wasmhost.RunConfig{
		Limits: lim,
		Host:   host,
		WASI: wasmhost.WASI{
			Args:       []string{cfg.ComponentName},
			Env:        env,
			StdoutPath: stdoutPath,
			StderrPath: stderrPath,
			Preopens:   sandbox.Preopens(s.Workdir, s.RuntimeDir),
		},
	}
	inst, err := cfg.Engine.Instantiate(ctx, cfg.Component, rc)
	if err != nil {
		return classify(cfg, lim, "instantiate", err)
	}
	defer inst.Close()
	if err := wit.CallCapsuleRun(ctx, inst); err != nil {
		return classify(cfg, lim, wit.IfaceCapsuleRun+"#"+wit.RunFunc, err)
	}
	return Result{Ending: trace.EndOK}
}

// classify records the call_deadline line a deadline passed while waiting
// on the runtime leaves, and words the ending as the run's Result.
func classify(cfg Config, lim wasmhost.Limits, call string, err error) Result {
	e := sandbox.EndingOf(err)
	if e.WaitedOnRuntime {
		// The line names the component call the deadline stopped; what it
		// was waiting on goes in the reason.
		cfg.Recorder.CallDeadline(cfg.ComponentName, call, lim.Deadline)
	}
	return Result{Ending: e.Status, Reason: e.Reason, Err: e.Err}
}
