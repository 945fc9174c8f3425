// Package delegate is the capsule's side of delegation (docs/delegation.md):
// a session that declares
// capabilities.spawn.allow registers at mur-roost and holds its credential
// in memory; its delegate-task tool asks POST /spawn, launches the approved
// child as a `mur run --capsule` subprocess of its own with a spawner
// lifeline, and returns once the child holds its task; the child reports
// its completion to the parent's door; the delegating task waits after its
// turn and continues once with every outcome.
//
// A Runtime is one parent session's; the child's side (reading the approval
// and the spawner handle, watching the lifeline, reporting) is the
// functions in child.go and completion.go.
package delegate

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
	"github.com/murmur-go/murmur/internal/trace"
)

// Bounds of a delegation: how long a child has to print its ready line, to
// accept its task, and to end after SIGTERM.
const (
	LaunchBound   = 180 * time.Second
	DeliveryBound = 30 * time.Second
	// EndGrace is how long an ended child has between SIGTERM and SIGKILL.
	EndGrace = 5 * time.Second
	// BackstopExtra is added to the child watch for the backstop.
	BackstopExtra = 30 * time.Second
)

// RoostURL reads MURMUR_ROOST_URL; "" when unset or blank.
func RoostURL(lookup func(string) (string, bool)) string {
	v, _ := lookup(EnvRoostURL)
	return strings.TrimSpace(v)
}

// Deadline is the child watch: MURMUR_DELEGATION_TIMEOUT_SECS when it is a
// positive integer, else lifecycle.delegation_deadline_secs, else 600 s.
func Deadline(m *manifest.Manifest, lookup func(string) (string, bool)) time.Duration {
	if v, ok := lookup(EnvTimeout); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
			return time.Duration(n) * time.Second
		}
	}
	return time.Duration(m.Lifecycle.DelegationDeadlineSecs.Or(manifest.DefaultDelegationDeadline)) * time.Second
}

// Register announces the session at roostURL and returns its credential:
// with the approval a child was launched under, or on the top-level path
// (the zero approval). A refusal is E-RUN-042 quoting the daemon's error; a
// daemon that cannot be reached (or answers something that is not the
// daemon's) is E-RUN-043 naming the URL.
func Register(ctx context.Context, roostURL string, req roostapi.RegisterRequest, approval roostapi.Approval) (roostapi.Credential, error) {
	if u, err := url.Parse(roostURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return roostapi.Credential{}, diag.New("E-RUN-043", "mur-roost cannot be reached at %s=%s: it is not an http:// address", EnvRoostURL, roostURL).
			WithHint("set %s=http://127.0.0.1:7700 (the daemon's address)", EnvRoostURL)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := &roostapi.Client{BaseURL: roostURL}
	cred, err := c.Register(ctx, req, approval)
	if err == nil {
		// A 200 with a JSON body and no credential is something other than
		// the daemon on that port: going on would delegate with nothing.
		if cred.Reveal() == "" {
			return roostapi.Credential{}, diag.New("E-RUN-043", "mur-roost cannot be reached at %s: what answered POST /register is not the daemon (its answer holds no credential)", roostURL).
				WithHint("start mur-roost (mur-roost --spawn-allow %s) or fix %s", req.Name, EnvRoostURL)
		}
		return cred, nil
	}
	var re *roostapi.Error
	if errors.As(err, &re) && re.StatusCode != 0 && isDaemonRefusal(re) {
		return roostapi.Credential{}, diag.New("E-RUN-042", "mur-roost at %s refused to register %s@%s: %s", roostURL, req.Name, req.Version, re.Message).
			WithHint("start mur-roost with --spawn-allow %s, and publish the capsule where the daemon resolves it", req.Name)
	}
	return roostapi.Credential{}, diag.Wrap(err, "E-RUN-043", "mur-roost cannot be reached at %s", roostURL).
		WithHint("start mur-roost (mur-roost --spawn-allow %s) or fix %s", req.Name, EnvRoostURL)
}

// isDaemonRefusal tells the daemon's {"error": …} answers (403, 409, 500…)
// from what a stranger on the port answers.
func isDaemonRefusal(e *roostapi.Error) bool {
	return e.StatusCode >= 400 && e.StatusCode < 600 && !strings.HasPrefix(e.Message, "<")
}

// Config is one parent session's delegation runtime.
type Config struct {
	RoostURL   string
	Credential roostapi.Credential
	// The parent session.
	SessionID, Name, Version string
	RecordsDir, RuntimeDir   string
	// DoorURL is the parent's A2A endpoint, http://host:port.
	DoorURL string
	// SpawnAllow and WorkdirSnapshot are capabilities.spawn's lists (full
	// names); EnvAllow is the parent's capabilities.env.allow.
	SpawnAllow, WorkdirSnapshot, EnvAllow []string
	// Lookup reads the parent process's environment.
	Lookup func(string) (string, bool)
	// MurBinary is the mur a child runs from.
	MurBinary string
	// Deadline is the child watch.
	Deadline time.Duration
	// FormationID is the parent's formation ("" for none).
	FormationID string
	Recorder    *trace.Recorder
	Log         *slog.Logger
	// RefusalHint follows a "not in parent's spawn_allow" refusal: set when
	// the manifest on disk differs from the published copy mur-roost judges.
	RefusalHint string

	// Snapshot copies the parent's work folder into a child's directory, for
	// a capsule listed in WorkdirSnapshot, before the child starts; an error
	// fails the delegation (the directory already removed).
	Snapshot func(ctx context.Context, full, version, childDir string) (*trace.Snapshot, error)
	// ChildEnvAllow reads a child's capabilities.env.allow before it is
	// launched: only names both its list and EnvAllow hold are handed on.
	// Nil hands on none of them.
	ChildEnvAllow func(full, version string) ([]string, error)
	// Tier is the parent's achieved containment class, handed to each
	// child as parent_tier: its floor is at least this.
	Tier string
}

// Runtime is a parent session's delegations. Safe for concurrent use.
type Runtime struct {
	cfg    Config
	client *roostapi.Client
	bare   map[string]string // bare name → full spawn.allow entry

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every outcome
	dels    map[string]*delegation
	closed  bool
	wg      sync.WaitGroup

	// A script parent's (NewScript): the context its delegations name,
	// and the completion listener's shutdown; nil for an agent parent.
	scriptContext string
	stopListener  func()
	// onStarted, set by tests only, sees each delegation once started,
	// with the call's start time.
	onStarted func(call time.Time, d *delegation)
}

// New makes the runtime over a registered session.
func New(cfg Config) *Runtime {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = manifest.DefaultDelegationDeadline * time.Second
	}
	if cfg.Tier == "" {
		cfg.Tier = "advisory" // a parent that names no tier raises no child's floor
	}
	r := &Runtime{cfg: cfg, client: &roostapi.Client{BaseURL: cfg.RoostURL}, bare: map[string]string{}, dels: map[string]*delegation{}}
	for _, full := range cfg.SpawnAllow {
		r.bare[manifest.Bare(full)] = full
	}
	return r
}

// Close ends every child still running (all at once, one grace), waits for
// their launchers, and deregisters the session with outcome (complete or
// failed), best effort.
func (r *Runtime) Close(outcome string) {
	r.mu.Lock()
	r.closed = true
	var live []*delegation
	for _, d := range r.dels {
		if !d.exited() {
			live = append(live, d)
		}
	}
	r.mu.Unlock()
	r.endAll(live, "the delegating task was cancelled")
	r.wg.Wait()
	if r.stopListener != nil {
		r.stopListener()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.client.Deregister(ctx, r.cfg.Credential, outcome); err != nil {
		r.cfg.Log.Warn("deregistering at mur-roost failed", "url", r.cfg.RoostURL, "error", err)
	}
}

// Deregister reports a session's end with no runtime (a child that
// delegates nothing), best effort.
func Deregister(roostURL string, cred roostapi.Credential, outcome string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := (&roostapi.Client{BaseURL: roostURL}).Deregister(ctx, cred, outcome); err != nil && log != nil {
		log.Warn("deregistering at mur-roost failed", "url", roostURL, "error", err)
	}
}
