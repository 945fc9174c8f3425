package hostapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

// Recorder receives the events the host interfaces must leave in the trace
// (its trace.jsonl lines). *trace.Recorder implements it: the trace line and, when
// telemetry is on, the capsule.tool_call span.
type Recorder interface {
	ToolCall(tool string, start time.Time, inBytes, outBytes int, errText string)
	ArtifactPulled(ev trace.ArtifactPulled)
	A2ASend(ev trace.A2ASend)
	CallDeadline(component, call string, deadline time.Duration)
}

// Config is what an Imports needs from the run that owns it.
type Config struct {
	// Manifest is the capsule's manifest.
	Manifest *manifest.Manifest
	// Tools is the session's tool inventory (internal/tools), built once at
	// launch from the resolved artifacts: what invoke may run. nil is none.
	Tools *tools.Inventory
	// Grants are the capsule's effective grants; nil computes them from
	// Manifest (the warnings are the caller's to print, so pass them in).
	Grants *manifest.Grants
	// Stores backs the artifact manager: its
	// Project store (nil for a --capsule run) is where pull installs and
	// remove removes; its Global store is where pull installs from.
	Stores store.Chain
	// Session gives the identity (id, name, version) and the work folder,
	// runtime dir and records dir of the run.
	Session *session.Session
	// Lookup reads mur's own environment for env.allow names; nil means
	// os.LookupEnv.
	Lookup func(string) (string, bool)
	// HTTPClient carries message/send; nil builds one that uses no proxy
	// and follows no redirect (a redirect could lead off the granted host).
	HTTPClient *http.Client
	// Logger receives what is worth a log line but not a trace line; nil
	// means slog.Default().
	Logger *slog.Logger
}

// Imports is the host side of the murmur:* interfaces a capsule's
// component imports, for one capsule session (a session.Session). It is
// safe for concurrent use. Close it when the run is over.
type Imports struct {
	cfg        Config
	grants     manifest.Grants
	grantsJSON string
	lookup     func(string) (string, bool)
	http       *http.Client
	log        *slog.Logger
	tools      *tools.Inventory

	mu       sync.Mutex
	rec      Recorder
	closed   bool
	inflight sync.WaitGroup // invokes running: Close waits for them
	ownHTTP  bool
}

// New checks cfg and returns an Imports. Nothing is compiled here: a tool is
// compiled on its first invoke, so a capsule that never calls a tool pays
// nothing for it.
func New(cfg Config) (*Imports, error) {
	if cfg.Manifest == nil || cfg.Session == nil {
		return nil, errors.New("hostapi: Config needs Manifest and Session")
	}
	s := &Imports{cfg: cfg, lookup: cfg.Lookup, http: cfg.HTTPClient, log: cfg.Logger, tools: cfg.Tools}
	if s.tools == nil {
		s.tools = tools.NewInventory(cfg.Manifest.Name)
	}
	if cfg.Grants != nil {
		s.grants = *cfg.Grants
	} else {
		s.grants, _ = cfg.Manifest.EffectiveGrants()
	}
	b, err := json.Marshal(s.grants)
	if err != nil {
		return nil, err
	}
	s.grantsJSON = string(b)
	if s.lookup == nil {
		s.lookup = os.LookupEnv
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.http == nil {
		s.http, s.ownHTTP = newHTTPClient(), true
	}
	return s, nil
}

// Register grants the three murmur:* interfaces to a run's Host, recording
// through rec (nil records nothing). *trace.Recorder is one; the
// script runtime's Imports hook is a two-line adapter calling Register.
// invoke reaches whatever the inventory holds that a script may call: tool
// components, and delegate-task for a capsule that declares spawn.allow.
func (s *Imports) Register(h *wasmhost.Host, rec Recorder) {
	s.mu.Lock()
	s.rec = rec
	s.mu.Unlock()
	wit.GrantToolRegistry(h, s.Invoke)
	wit.GrantArtifactManager(h, s)
	wit.GrantMessageSend(h, s.Send)
}

// Close waits for invokes still running, then releases the idle
// connections of its own HTTP client. Invokes after Close answer err. The
// tool inventory is its owner's to close (tools.Inventory.Close).
func (s *Imports) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.inflight.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ownHTTP {
		s.http.CloseIdleConnections()
	}
	return nil
}

// clip shortens a guest-supplied string for messages and trace lines.
func clip(s string) string { return tools.Clip(s) }

// GrantsJSON is the effective grants as JSON (what diagnostics answers).
func (s *Imports) GrantsJSON() string { return s.grantsJSON }

func (s *Imports) recorder() Recorder {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec == nil {
		return nopRecorder{}
	}
	return s.rec
}

type nopRecorder struct{}

func (nopRecorder) ToolCall(string, time.Time, int, int, string) {}
func (nopRecorder) ArtifactPulled(trace.ArtifactPulled)          {}
func (nopRecorder) A2ASend(trace.A2ASend)                        {}
func (nopRecorder) CallDeadline(string, string, time.Duration)   {}
