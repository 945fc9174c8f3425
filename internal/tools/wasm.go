package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

// ToolRunCall names the call a tool's deadline stops, in call_deadline lines.
const ToolRunCall = wit.IfaceToolRun + "#" + wit.RunFunc

// Env is what every component tool of a session shares: the engine, the
// session's identity and folders, and mur's own environment for env.allow.
type Env struct {
	Engine  *wasmhost.Engine
	Session *session.Session
	// Lookup reads mur's own environment; nil is os.LookupEnv.
	Lookup func(string) (string, bool)
	// Logger receives what is worth a log line but not a trace line; nil
	// is slog.Default().
	Logger *slog.Logger
	// Wrap contains every native command a shell tool starts (the session's
	// containment tier, contain.Command); nil runs them uncontained.
	Wrap func(*exec.Cmd) error
	// ProxyEnv names the egress proxy for every shell command (HTTP_PROXY
	// and the rest), where the network namespace applies; nil otherwise.
	ProxyEnv []string
	// Preloaded holds the tools compiled before the session started
	// (Preload): a tool found here is not compiled again, so no compile
	// time lands in a tool_call's duration_ms.
	Preloaded Preloaded
	// StateHome is the home whose ~/.murmur/state holds the stores the
	// session's tools open ("" opens none: a test's bare inventory), and
	// StateMaxBytes bounds each (capabilities.resources.state_max_bytes).
	StateHome     string
	StateMaxBytes int64
}

// Preloaded is each WASM tool's compiled component, or why it cannot be
// loaded, by name@version.
type Preloaded map[string]Loaded

// Loaded is one tool's compile outcome.
type Loaded struct {
	Comp *wasmhost.Component
	Err  error
}

// Close releases every preloaded component (a tool that took one closes it
// too; closing twice is harmless).
func (p Preloaded) Close() {
	for _, l := range p {
		if l.Comp != nil {
			l.Comp.Close()
		}
	}
}

// Preload compiles (or loads from the compile cache) the component of every
// WASM tool m declares, from the artifacts its launch resolved, before any
// session exists. Each is keyed in the cache by the digest its resolve
// computed (the zip's SHA-256 and the entry), so its bytes are not hashed
// again. A tool that cannot be loaded is kept with its error, which its
// calls then answer (the run itself goes on, as when it compiled on first
// call).
func Preload(eng *wasmhost.Engine, m *manifest.Manifest, resolved []*store.Resolved) Preloaded {
	byRef := map[string]*store.Resolved{}
	for _, r := range resolved {
		byRef[r.Name+"@"+r.Version] = r
	}
	out := Preloaded{}
	for _, a := range m.Artifacts {
		r := byRef[ref(a)]
		if a.RuntimeKind() != manifest.RuntimeTool || r == nil || a.RefuseNative() != nil ||
			(r.Manifest != nil && r.Manifest.RefuseNative() != nil) {
			continue
		}
		if _, done := out[ref(a)]; done {
			continue
		}
		comp, err := loadComponent(eng, a, r)
		out[ref(a)] = Loaded{Comp: comp, Err: err}
	}
	return out
}

// DeadlineRecorder receives the call_deadline line a tool's deadline leaves
// when it passed while the tool waited on the runtime.
type DeadlineRecorder interface {
	CallDeadline(component, call string, deadline time.Duration)
}

// Invocation is one call of a component tool.
type Invocation struct {
	Input wit.ToolInput
	// Chunks receives murmur:text/chunks from the tool; nil logs them.
	Chunks func(ctx context.Context, text string, thinking bool) error
	// RequestInput answers murmur:task/task#request-input; nil refuses it
	// (a script capsule's tool has no one to ask).
	RequestInput func(ctx context.Context, prompt string) (string, error)
	// Recorder receives call_deadline lines; nil records none.
	Recorder DeadlineRecorder
}

// WASM is a tool artifact whose payload is a component exporting
// murmur:tool/run: compiled on its first call, then reused by every later
// call of the session, each in a fresh instance bounded by the tool's own
// narrowed grant.
type WASM struct {
	decl     manifest.Artifact
	grant    manifest.ArtifactGrant
	resolved *store.Resolved // nil: the artifact could not be resolved (loadErr says why)
	env      *Env

	once    sync.Once
	comp    *wasmhost.Component
	loadErr error

	// The tool's stdout and stderr logs, opened once, on its first call,
	// and truncated by each call (see RunConfig); nil: discarded.
	logsOnce       sync.Once
	stdout, stderr *os.File

	// The log that keeps a call's streamed chunks past MaxStreamedBytes
	// (logs/tools/<scope>/<name>.chunks.log), opened on the first call
	// that needs it; nil: such chunks are dropped.
	spillOnce sync.Once
	spill     *os.File

	// The log that keeps a call's result metadata past
	// wasmhost.MaxResultListBytes (logs/tools/<scope>/<name>.metadata.log).
	metaOnce sync.Once
	meta     *os.File

	// httpLog is the logger of the tool's wasi:http decisions, made once
	// (slog's With copies the handler's state on every call).
	httpLog func() *slog.Logger
}

// NewWASM is the tool decl, resolved at launch as r (nil when it could not
// be: loadErr is then returned by every call), granted grant.
func NewWASM(env *Env, decl manifest.Artifact, grant manifest.ArtifactGrant, r *store.Resolved, loadErr error) *WASM {
	t := &WASM{decl: decl, grant: grant, resolved: r, env: env, loadErr: loadErr}
	t.httpLog = sync.OnceValue(func() *slog.Logger { return env.logger().With("tool", decl.Name) })
	return t
}

func (t *WASM) Name() string { return t.decl.Name }
func (t *WASM) Kind() string { return KindWASM }

func (t *WASM) Description() string {
	if t.resolved != nil && t.resolved.Manifest != nil && t.resolved.Manifest.Description != "" {
		return t.resolved.Manifest.Description
	}
	return "the tool " + ref(t.decl)
}

// Schema is the input_schema of the tool's own manifest (docs/agent-capsules.md),
// else DefaultSchema.
func (t *WASM) Schema() json.RawMessage {
	if t.resolved != nil && t.resolved.Manifest != nil && len(t.resolved.Manifest.InputSchema) > 0 {
		return t.resolved.Manifest.InputSchema
	}
	return DefaultSchema
}

// Close releases the compiled component. Calls after Close fail.
func (t *WASM) Close() {
	t.once.Do(func() { t.loadErr = errors.New("tools: the session is over") })
	if t.comp != nil {
		t.comp.Close()
	}
	t.logsOnce.Do(func() {}) // no logs opened after Close
	t.spillOnce.Do(func() {})
	t.metaOnce.Do(func() {})
	for _, f := range []*os.File{t.stdout, t.stderr, t.spill, t.meta} {
		if f != nil {
			f.Close()
		}
	}
}

// Component compiles the tool's component, once per session, and returns
// it; a launch may call it early to pay the compile before the first call.
func (t *WASM) Component() (*wasmhost.Component, error) {
	if err := t.load(); err != nil {
		return nil, err
	}
	return t.comp, nil
}

// load compiles the tool's component, once per session, unless its launch
// preloaded it.
func (t *WASM) load() error {
	t.once.Do(func() {
		if t.loadErr != nil {
			return
		}
		if l, ok := t.env.Preloaded[ref(t.decl)]; ok {
			t.comp, t.loadErr = l.Comp, l.Err
			return
		}
		t.comp, t.loadErr = loadComponent(t.env.Engine, t.decl, t.resolved)
	})
	return t.loadErr
}

// loadComponent checks and compiles the tool decl's resolved component,
// naming it in the compile cache by its resolve's digest.
func loadComponent(eng *wasmhost.Engine, decl manifest.Artifact, r *store.Resolved) (*wasmhost.Component, error) {
	rf := ref(decl)
	if r.Runtime != manifest.RuntimeTool {
		return nil, diag.New("E-RUN-063", "tool %s cannot be loaded: the installed artifact is a %s, not a tool", rf, r.Runtime).
			WithHint("declare it with its own runtime, or install the tool artifact of that name")
	}
	file, ok := r.Archive.PayloadName()
	if !ok || !strings.HasSuffix(file, ".wasm") {
		return nil, diag.New("E-RUN-063", "tool %s cannot be loaded: its .mur.zip holds no root .wasm component", rf).
			WithHint("rebuild it with 'mur build' from a directory holding the tool's component")
	}
	// On a compile-cache hit the component is never read from the zip.
	comp, err := eng.CompileDigest(wasmhost.CompileOptions{Name: r.Ref(), Digest: store.Digest(r, file)},
		func() ([]byte, error) { return r.Archive.ReadFile(file) })
	if err != nil {
		return nil, diag.Wrap(err, "E-RUN-063", "tool %s cannot be loaded", rf).
			WithHint("rebuild it as a component exporting %s", wit.IfaceToolRun)
	}
	if !wit.ExportsToolRun(comp) {
		comp.Close()
		return nil, diag.New("E-RUN-063", "tool %s cannot be loaded: %s does not export %s with a run function", rf, file, wit.IfaceToolRun).
			WithHint("build it against the tool world (murmur:runtime-guest/tool)")
	}
	return comp, nil
}

// Call runs the tool once for either caller. A model's call sees the
// result's data (else its summary) as text, and a result that did not pass
// as an error naming its status.
func (t *WASM) Call(ctx context.Context, c *Call) Outcome {
	inv := Invocation{Input: c.Input}
	if c.Recorder != nil {
		inv.Recorder = c.Recorder
	}
	if c.Task != nil {
		inv.Chunks, inv.RequestInput = c.Task.Chunks, c.Task.RequestInput
	}
	r, err := t.Run(ctx, inv)
	if err != nil {
		return Outcome{Err: err, Ending: EndingOf(err), StateStore: t.StateStore()}
	}
	out := Outcome{Result: r, Text: resultText(r), Ending: trace.EndOK, StateStore: t.StateStore()}
	if c.Task != nil && r.Status != wit.StatusPassed {
		out.Err = fmt.Errorf("%s answered %s: %s", t.Name(), r.Status, out.Text)
	}
	return out
}

// resultText is what a tool result says: its data, else its summary.
func resultText(r wit.ToolResult) string {
	switch {
	case r.Data != nil:
		return *r.Data
	case r.Summary != nil:
		return *r.Summary
	case r.DataPath != nil:
		return "the result is in " + *r.DataPath
	}
	return "(no output)"
}

// Run instantiates the tool in a fresh store and calls its run once. A tool
// that cannot be loaded, and one that traps, runs past its deadline or hits
// a resource limit, answers an E-RUN-06x error with the reason; the caller
// goes on.
func (t *WASM) Run(ctx context.Context, inv Invocation) (wit.ToolResult, error) {
	if err := t.load(); err != nil {
		return wit.ToolResult{}, err
	}
	rc, err := t.RunConfig(inv)
	if err != nil {
		return wit.ToolResult{}, err
	}
	if st := t.StateStore(); st != "" {
		var done func()
		ctx, done, err = t.holdState(ctx, st, &rc)
		if err != nil {
			return wit.ToolResult{}, t.ending(inv, rc.Limits, err)
		}
		defer done()
	}
	spill := &metaSpill{t: t}
	rc.ResultSpill = spill.add
	wit.ChooseIO(t.comp, &rc)
	inst, err := t.env.Engine.Instantiate(ctx, t.comp, rc)
	if err != nil {
		return wit.ToolResult{}, t.ending(inv, rc.Limits, err)
	}
	defer inst.Close()
	res, err := wit.CallToolRun(ctx, inst, inv.Input)
	if err != nil {
		return wit.ToolResult{}, t.ending(inv, rc.Limits, err)
	}
	if st := t.StateStore(); st != "" {
		// Measured once more as the call ends: a write made after the
		// watch's last measure is not let through.
		if sl, ok := context.Cause(ctx).(*grant.StateLimitError); ok {
			return wit.ToolResult{}, t.ending(inv, rc.Limits, sl)
		}
		if sl := grant.StateBytes(st, home.StateStore(t.env.StateHome, st), t.stateMax()); sl != nil {
			return wit.ToolResult{}, t.ending(inv, rc.Limits, sl)
		}
	}
	return spill.note(res), nil
}

// StateStore is the state store the tool's component sees ("" for none):
// its artifact's, when the session opens stores.
func (t *WASM) StateStore() string {
	if t.env.StateHome == "" {
		return ""
	}
	return t.grant.StateStore
}

// stateMax is capabilities.resources.state_max_bytes (its default when
// the env leaves it unset).
func (t *WASM) stateMax() int64 {
	if t.env.StateMaxBytes <= 0 {
		return manifest.DefaultStateMaxBytes
	}
	return t.env.StateMaxBytes
}

// holdState readies one call that sees store: its lock taken (the wait
// counts against the call's deadline, so rc's deadline is what is left),
// the store measured against state_max_bytes before the call and watched
// while it runs. done releases both.
func (t *WASM) holdState(ctx context.Context, store string, rc *wasmhost.RunConfig) (context.Context, func(), error) {
	h := t.env.StateHome
	s := grant.StateCall{Name: store, Dir: home.StateStore(h, store), Lock: home.StateLock(h, store), MaxBytes: t.stateMax()}
	ctx, done, waited, err := s.Open(ctx, rc.Limits.Deadline)
	if err != nil {
		return ctx, nil, err
	}
	rc.Limits.Deadline -= waited
	return ctx, done, nil
}

// MetadataSpilledKey is the metadata pair a result gets when its metadata
// passed wasmhost.MaxResultListBytes: its value says how many pairs were not
// kept and where they are.
const MetadataSpilledKey = "murmur:metadata-spilled"

// metaSpill is one call's account of the metadata pairs past the bound:
// they go to the tool's metadata log (logs/tools/<scope>/<name>.metadata.log,
// one JSON [key, value] line each, the last call's only), at most
// MaxSpilledBytes of them; the rest are counted and dropped.
type metaSpill struct {
	t                 *WASM
	f                 *os.File
	opened            bool
	n, bytes, dropped int64
}

func (s *metaSpill) add(v wasmhost.Value) {
	s.n++
	if !s.opened {
		s.opened = true
		s.f = s.t.metaLog()
		if s.f != nil {
			if err := s.f.Truncate(0); err != nil {
				s.t.env.logger().Warn("tool metadata log not truncated", "tool", s.t.decl.Name, "error", err)
			}
		}
	}
	line, err := json.Marshal(v)
	if err != nil || s.f == nil || s.bytes+int64(len(line))+1 > MaxSpilledBytes {
		s.dropped++
		return
	}
	if _, err := s.f.Write(append(line, '\n')); err != nil {
		s.dropped++
		return
	}
	s.bytes += int64(len(line)) + 1
}

// note adds MetadataSpilledKey to res when pairs were spilled.
func (s *metaSpill) note(res wit.ToolResult) wit.ToolResult {
	if s.n == 0 {
		return res
	}
	where := spillName(s.f)
	if s.dropped > 0 {
		where += fmt.Sprintf(" (%d of them dropped past %d bytes)", s.dropped, MaxSpilledBytes)
	}
	s.t.env.logger().Warn("tool metadata past the bound spilled", "tool", s.t.decl.Name, "pairs", s.n, "log", where)
	res.Metadata = append(res.Metadata, [2]string{MetadataSpilledKey,
		fmt.Sprintf("%d pairs past %d bytes are in %s", s.n, wasmhost.MaxResultListBytes, where)})
	return res
}

// metaLog opens the tool's metadata log once per session; nil when the
// session has no records dir or it cannot be opened.
func (t *WASM) metaLog() *os.File {
	t.metaOnce.Do(func() {
		dir, bare, ok := t.logDir()
		if !ok {
			return
		}
		err := os.MkdirAll(dir, 0o700)
		if err == nil {
			t.meta, err = os.OpenFile(filepath.Join(dir, bare+".metadata.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		}
		if err != nil {
			t.env.logger().Warn("tool metadata past the bound is dropped", "tool", t.decl.Name, "error", err)
		}
	})
	return t.meta
}

func (e *Env) lookup() func(string) (string, bool) {
	if e.Lookup == nil {
		return os.LookupEnv
	}
	return e.Lookup
}

func (e *Env) logger() *slog.Logger {
	if e.Logger == nil {
		return slog.Default()
	}
	return e.Logger
}

// RunConfig is the sandbox one call runs in: its narrowed limits, an
// environment of its env.allow names plus the identity, a filesystem of its
// scope of the work folder (read-write) and the runtime dir (read-only), and
// the host interfaces of the tool world.
func (t *WASM) RunConfig(inv Invocation) (wasmhost.RunConfig, error) {
	g := t.grant.Grants
	sess := t.env.Session
	dir, err := scopeDir(sess.Workdir, g.FilesystemScope)
	if err != nil {
		return wasmhost.RunConfig{}, diag.Wrap(err, "E-RUN-065", "tool %s: its filesystem scope cannot be opened", t.decl.Name).
			WithHint("capabilities.filesystem.scope must name a folder inside the work folder (not a symlink leading out of it)")
	}
	wasi := wasmhost.WASI{
		Args:     []string{manifest.Bare(t.decl.Name)},
		Env:      grant.Env(sess, g.EnvAllow, t.env.lookup()),
		Preopens: grant.Preopens(dir, sess.RuntimeDir),
	}
	if g.FilesystemScope == nil {
		wasi.Preopens = append(wasi.Preopens, grant.PeerInPreopens(sess.Workdir)...)
	}
	if st := t.StateStore(); st != "" {
		wasi.Preopens = append(wasi.Preopens, grant.StatePreopens(home.StateStore(t.env.StateHome, st))...)
	}
	// The tool's stdout and stderr go to logs/tools/<scope>/<name>.std{out,err}.log
	// in the records dir; each invoke starts them afresh, so they hold the
	// last call's output. Without a records dir they are discarded.
	if out, errf := t.logs(); out != nil {
		for _, f := range []*os.File{out, errf} {
			// Opened O_APPEND: the call writes from the start again. Most
			// calls leave a log empty; truncating an empty file still costs
			// a journaled inode update on ext4, so only a non-empty one is.
			if end, err := f.Seek(0, io.SeekEnd); err == nil && end == 0 {
				continue
			}
			if err := f.Truncate(0); err != nil {
				t.env.logger().Warn("tool log not truncated", "tool", t.decl.Name, "file", f.Name(), "error", err)
			}
		}
		wasi.Stdout, wasi.Stderr = out, errf
	}
	return wasmhost.RunConfig{Limits: grant.Limits(g.Limits), WASI: wasi, Host: t.host(inv)}, nil
}

// logs opens the tool's two log files once per session (not by path on
// every call: a tool called 10,000 times in a run would otherwise create,
// open and close them 10,000 times); nil when the session has no records
// dir or they cannot be opened.
func (t *WASM) logs() (stdout, stderr *os.File) {
	t.logsOnce.Do(func() {
		dir, bare, ok := t.logDir()
		if !ok {
			return
		}
		var files [2]*os.File
		err := os.MkdirAll(dir, 0o700)
		for j, name := range []string{bare + ".stdout.log", bare + ".stderr.log"} {
			if err != nil {
				break
			}
			files[j], err = os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		}
		if err != nil {
			for _, f := range files {
				if f != nil {
					f.Close()
				}
			}
			t.env.logger().Warn("tool logs are discarded", "tool", t.decl.Name, "error", err)
			return
		}
		t.stdout, t.stderr = files[0], files[1]
	})
	return t.stdout, t.stderr
}

// logDir is the folder of the tool's logs in the records dir and its bare
// name; false when the session has no logs folder.
func (t *WASM) logDir() (dir, bare string, ok bool) {
	sess := t.env.Session
	logs := filepath.Join(sess.RecordsDir, "logs")
	if sess.RecordsDir == "" || !isDir(logs) {
		return "", "", false
	}
	scope, bare, _ := strings.Cut(t.decl.Name, "/")
	return filepath.Join(logs, "tools", scope), bare, true
}

// spillLog opens the tool's chunks log once per session; nil when the
// session has no records dir or it cannot be opened.
func (t *WASM) spillLog() *os.File {
	t.spillOnce.Do(func() {
		dir, bare, ok := t.logDir()
		if !ok {
			return
		}
		err := os.MkdirAll(dir, 0o700)
		if err == nil {
			t.spill, err = os.OpenFile(filepath.Join(dir, bare+".chunks.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		}
		if err != nil {
			t.env.logger().Warn("tool chunks past the bound are dropped", "tool", t.decl.Name, "error", err)
		}
	})
	return t.spill
}

// Bounds on what one call of a tool streams through murmur:text/chunks.
// The caller (an agent task's response, a log line) gets the chunks up to
// MaxStreamedBytes; the chunk that would pass it and every later one go to
// the tool's chunks log, which keeps at most MaxSpilledBytes of a call
// (the rest is counted and dropped). A tool streaming without end thus
// costs the session neither memory nor unbounded disk.
const (
	MaxStreamedBytes = 64 << 10
	MaxSpilledBytes  = 64 << 20
)

// chunkBound is one call's account of its streamed chunks.
type chunkBound struct {
	t                      *WASM
	next                   func(ctx context.Context, text string, thinking bool) error
	sent, spilled, dropped int64
	spilling               bool
}

func (b *chunkBound) chunk(ctx context.Context, text string, thinking bool) error {
	n := int64(len(text))
	if !b.spilling && b.sent+n <= MaxStreamedBytes {
		b.sent += n
		return b.next(ctx, text, thinking)
	}
	f := b.t.spillLog()
	first := !b.spilling
	b.spilling = true
	if first && f != nil {
		// The log holds the last call's spill, as the std logs hold its output.
		if err := f.Truncate(0); err != nil {
			b.t.env.logger().Warn("tool chunks log not truncated", "tool", b.t.decl.Name, "error", err)
		}
	}
	switch {
	case f == nil || b.spilled+n > MaxSpilledBytes:
		b.dropped += n
	default:
		if _, err := f.WriteString(text); err != nil {
			b.dropped += n
		} else {
			b.spilled += n
		}
	}
	if first {
		note := fmt.Sprintf("\n[the tool streamed more than %d bytes; the rest is in %s]\n", MaxStreamedBytes, spillName(f))
		return b.next(ctx, note, false)
	}
	return nil
}

func spillName(f *os.File) string {
	if f == nil {
		return "no log (it could not be kept)"
	}
	return f.Name()
}

// host is what a tool's component may import besides WASI (the tool world):
// murmur:text/chunks and murmur:task/task, answered by the invocation.
func (t *WASM) host(inv Invocation) *wasmhost.Host {
	h := wasmhost.NewHost()
	chunks := inv.Chunks
	if chunks == nil {
		log, sid := t.env.logger(), t.env.Session.ID
		chunks = func(ctx context.Context, text string, thinking bool) error {
			log.Debug("tool chunk", "session", sid, "thinking", thinking, "bytes", len(text))
			return nil
		}
	}
	wit.GrantTextChunks(h, (&chunkBound{t: t, next: chunks}).chunk)
	ask := inv.RequestInput
	if ask == nil {
		// Its WIT result has no error side: the error stops the tool.
		ask = func(ctx context.Context, prompt string) (string, error) {
			return "", errors.New("murmur:task/task#request-input: a script capsule's tool has no one to ask for input")
		}
	}
	wit.GrantTask(h, ask)
	// wasi:http: the tool's own narrowed network.allow (docs/manifest.md),
	// and a formation member's callees at their virtual addresses; a
	// refusal is a log line, the request's error is the tool's to handle.
	wit.GrantHTTPMember(h, t.env.Session.Callees, wit.NetworkAllow(t.grant.Grants.NetworkAllow, "capabilities.network.allow"),
		t.httpLog(),
		wit.HTTPBounds{MaxBodyBytes: wit.HTTPMaxBodyBytes(t.env.lookup()), MaxInFlight: wit.HTTPMaxInFlight})
	return h
}

// ending words a tool call that did not return normally as the error its
// caller receives; a deadline passed while the tool waited on the runtime
// also leaves a call_deadline line naming the tool and its call.
func (t *WASM) ending(inv Invocation, lim wasmhost.Limits, err error) error {
	name := t.decl.Name
	e := grant.EndingOf(err)
	if e.WaitedOnRuntime && inv.Recorder != nil {
		inv.Recorder.CallDeadline(name, ToolRunCall, lim.Deadline)
	}
	var out *diag.Diagnostic
	var (
		sl   *grant.StateLimitError
		busy *grant.StateBusyError
	)
	var noReply *NoReplyError
	switch {
	case errors.As(err, &noReply):
		out = diag.New("E-RUN-064", "tool %s: %s", name, noReply)
	case errors.As(err, &sl):
		out = diag.New("E-RUN-064", "tool %s: %s", name, sl.Error())
	case errors.As(err, &busy):
		out = diag.New("E-RUN-064", "tool %s: %s", name, busy.Error())
	case e.Status == trace.EndDeadlineExceeded:
		out = diag.New("E-RUN-064", "tool %s: %v (deadline %s)", name, e.Err, lim.Deadline)
	case e.Status == trace.EndResourceLimit, e.Cancelled:
		out = diag.New("E-RUN-064", "tool %s: %v", name, e.Err)
	case e.Exited:
		out = diag.New("E-RUN-064", "tool %s exited with status %d without returning a result", name, e.ExitCode)
	case e.Status == trace.EndTrapped:
		out = diag.New("E-RUN-064", "tool %s trapped: %s", name, e.Reason)
	default:
		out = diag.Wrap(err, "E-RUN-064", "tool %s failed", name)
	}
	return &EndingError{Ending: e.Status, Diagnostic: out}
}

// EndingError is a component tool call that did not return normally: the
// diagnostic its caller sees, and its ending in the spec's words (an agent's
// tool_call line records it: a limit is never reported as a crash).
type EndingError struct {
	Ending string
	*diag.Diagnostic
}

func (e *EndingError) Unwrap() error { return e.Diagnostic }

// EndingOf is the ending of a tool call's error: ok for nil, the component
// call's ending for an *EndingError, failed for any other error.
func EndingOf(err error) string {
	var ee *EndingError
	switch {
	case err == nil:
		return trace.EndOK
	case errors.As(err, &ee):
		return ee.Ending
	}
	return trace.EndFailed
}

// scopeDir is the folder a tool sees as its work folder: the whole work
// folder, or its filesystem.scope inside it (created when missing). A scope
// that resolves outside the work folder through a symlink is refused.
func scopeDir(workdir string, scope *string) (string, error) {
	if scope == nil {
		return workdir, nil
	}
	clean, err := manifest.CleanScope(*scope)
	if err != nil {
		return "", err
	}
	if clean == "." {
		return workdir, nil
	}
	dir := filepath.Join(workdir, filepath.FromSlash(clean))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	realWork, err := filepath.EvalSymlinks(workdir)
	if err != nil {
		return "", err
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	if realDir != realWork && !strings.HasPrefix(realDir, realWork+string(filepath.Separator)) {
		return "", fmt.Errorf("%s resolves to %s, outside the work folder", clean, realDir)
	}
	return realDir, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// ScopeDir is the folder a component granted filesystem scope sees as its
// work folder (see scopeDir); hooks share the rule.
func ScopeDir(workdir string, scope *string) (string, error) { return scopeDir(workdir, scope) }
