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
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

// Recorder receives the events the host interfaces must leave in the trace
// (contracts §5). *trace.Recorder implements it: the trace line and, when
// telemetry is on, the capsule.tool_call span.
type Recorder interface {
	ToolCall(tool string, start time.Time, inBytes, outBytes int, errText string)
	ArtifactPulled(ev trace.ArtifactPulled)
	A2ASend(ev trace.A2ASend)
	CallDeadline(component, call string, deadline time.Duration)
}

// Config is what a Session needs from the run that owns it.
type Config struct {
	// Engine compiles and instantiates the tool components.
	Engine *wasmhost.Engine
	// Manifest is the capsule's manifest: its artifacts are the tools invoke
	// may run.
	Manifest *manifest.Manifest
	// Grants are the capsule's effective grants; nil computes them from
	// Manifest (the warnings are the caller's to print, so pass them in).
	Grants *manifest.Grants
	// Stores resolves declared tools and backs the artifact manager: its
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

// Session is the host side of the murmur:* interfaces for one capsule
// session. It is safe for concurrent use. Close it when the run is over.
type Session struct {
	cfg        Config
	grants     manifest.Grants
	grantsJSON string
	lookup     func(string) (string, bool)
	http       *http.Client
	log        *slog.Logger
	toolHost   *wasmhost.Host

	mu       sync.Mutex
	rec      Recorder
	tools    map[string]*tool // by full name, and by each name it was invoked as
	closed   bool
	inflight sync.WaitGroup // invokes running: Close waits for them
	ownHTTP  bool
}

// New checks cfg and returns a Session. Nothing is compiled or resolved yet:
// a tool is loaded on its first invoke, so a capsule that never calls a tool
// pays nothing for it.
func New(cfg Config) (*Session, error) {
	if cfg.Engine == nil || cfg.Manifest == nil || cfg.Session == nil {
		return nil, errors.New("hostapi: Config needs Engine, Manifest and Session")
	}
	s := &Session{cfg: cfg, lookup: cfg.Lookup, http: cfg.HTTPClient, log: cfg.Logger, tools: map[string]*tool{}}
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
	s.toolHost = s.newToolHost()
	return s, nil
}

// Register grants the three murmur:* interfaces to a run's Host, recording
// through rec (nil records nothing). *trace.Recorder is one; the
// script runtime's Imports hook is a two-line adapter calling Register.
// delegate-task is not among the tools:
// delegation is a later issue, so a capsule that declares spawn.allow finds
// no such tool (invoke answers err naming it, like any undeclared name).
func (s *Session) Register(h *wasmhost.Host, rec Recorder) {
	s.mu.Lock()
	s.rec = rec
	s.mu.Unlock()
	wit.GrantToolRegistry(h, s.Invoke)
	wit.GrantArtifactManager(h, s)
	wit.GrantMessageSend(h, s.Send)
}

// Close waits for invokes still running, then releases the compiled tool
// components (and the idle connections of its own HTTP client). Invokes
// after Close answer err.
func (s *Session) Close() error {
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
	for _, t := range s.tools {
		t.close() // a tool under two names is closed twice: Component.Close is idempotent
	}
	if s.ownHTTP {
		s.http.CloseIdleConnections()
	}
	return nil
}

// clip shortens a guest-supplied string for messages and trace lines: a
// capsule cannot make its own trace lines arbitrarily long through a name.
func clip(s string) string {
	const max = 256
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}

// GrantsJSON is the effective grants as JSON (what diagnostics answers).
func (s *Session) GrantsJSON() string { return s.grantsJSON }

func (s *Session) recorder() Recorder {
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
