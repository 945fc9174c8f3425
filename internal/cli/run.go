package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/hostapi"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/script"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/telemetry"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

func init() { register(newRunCmd) }

type runFlags struct {
	manifest, task, workdir string
	json, explainScope      bool
	containment             string
	capsule, capsuleVersion string
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a capsule from its manifest (or an installed one with --capsule)",
		Long: `Run a capsule. A script capsule (no inference: block) runs its root .wasm
component's murmur:capsule/run once and ends with ok, trapped,
deadline_exceeded, resource_limit or failed (exit status 0 for ok, 1 otherwise).

Before anything starts, the capsule's component is checked and every tool it
declares under artifacts: is resolved (project store, then global store;
murmur.lock checked where one exists). The session's trace, logs and results
stay in its records dir under ~/.murmur/records; read them with
'mur trace show'. SIGTERM ends a run at once (exit status 143) after
recording its session_end.

--explain-scope prints the capsule's effective grants and the containment this
build applies, and runs nothing.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (f.capsule == "") != (f.capsuleVersion == "") {
				return usageError{fmt.Errorf("--capsule and --capsule-version go together")}
			}
			if f.capsule != "" && cmd.Flags().Changed("manifest") {
				return usageError{fmt.Errorf("--manifest and --capsule exclude each other: --capsule runs an installed artifact with no project")}
			}
			return runCapsule(f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.manifest, "manifest", "murmur.yaml", "the capsule's manifest: a murmur.yaml `PATH`, or the directory holding it")
	fl.StringVar(&f.task, "task", "", "the task: a `FILE|TEXT` (a file is read, anything else is the text); the capsule reads it as murmur-runtime/task.md")
	fl.StringVar(&f.workdir, "workdir", "", "the capsule's work folder `DIR` (default <manifest dir>/workdir/<session id>)")
	fl.BoolVar(&f.json, "json", false, "print one JSON line describing the session once it is ready")
	fl.BoolVar(&f.explainScope, "explain-scope", false, "print what the capsule is granted and how it is contained, then exit without running")
	fl.StringVar(&f.containment, "containment", "", "the containment `CLASS` to require (advisory|scoped|sealed; only advisory in this build)")
	fl.StringVar(&f.capsule, "capsule", "", "run the installed capsule `FULLNAME` (scope/name) with no project (needs --capsule-version)")
	fl.StringVar(&f.capsuleVersion, "capsule-version", "", "the `VERSION` of --capsule")
	return cmd
}

// launch is what a run knows once everything it needs is resolved, before
// any session file exists.
type launch struct {
	m             *manifest.Manifest
	manifestYAML  []byte
	manifestDir   string // "" for --capsule
	componentName string
	component     []byte
	tools         []*store.Resolved
	chain         store.Chain
}

// readyLine is the --json line (contracts §10).
type readyLine struct {
	URL        *string `json:"url"`
	PID        int     `json:"pid"`
	SessionID  string  `json:"session_id"`
	Name       string  `json:"name"`
	Version    string  `json:"version"`
	Workdir    string  `json:"workdir"`
	RecordsDir string  `json:"records_dir"`
}

func runCapsule(f runFlags, stdout, stderr io.Writer) error {
	switch f.containment {
	case "", manifest.ContainmentAdvisory:
	case manifest.ContainmentScoped, manifest.ContainmentSealed:
		// Asking for a floor on the command line is the same requirement as
		// declaring it, and this build falls short of it the same way.
		return diag.New("E-CAP-003", "--containment %s asks for a containment floor this mur cannot deliver: it applies the WASM component sandbox and no native containment tier", f.containment).
			WithHint("run without --containment, or with --containment advisory; 'mur run --explain-scope' shows what this build applies")
	default:
		return usageError{fmt.Errorf("--containment must be advisory, scoped or sealed, not %q", f.containment)}
	}
	homeDir, err := home.Dir()
	if err != nil {
		return err
	}
	if f.explainScope {
		return explainScope(f, homeDir, stdout, stderr)
	}
	sig := onSignal()
	defer sig.stop()
	l, err := prepare(f, homeDir, stderr)
	if err != nil {
		return err
	}

	// Compile (or load from the cache) before any session file exists: a
	// component that cannot run is refused without leaving a session behind.
	eng, err := wasmhost.NewEngine(wasmhost.Config{CacheDir: home.Compiled(homeDir)})
	if err != nil {
		return err
	}
	defer eng.Close()
	comp, err := compileCapsule(eng, l)
	if err != nil {
		return err
	}
	defer comp.Close()

	task, err := readTask(f.task)
	if err != nil {
		return err
	}
	// Its W-SEC-007 warnings were printed with the manifest's (prepare).
	grants, _ := l.m.EffectiveGrants()
	grantsJSON, _ := json.Marshal(grants)
	sess, err := session.New(session.Config{
		Home: homeDir, ManifestDir: l.manifestDir, Workdir: f.workdir,
		Name: l.m.Name, Version: l.m.Version, Task: task,
		ManifestYAML: l.manifestYAML, Grants: grantsJSON,
	})
	if err != nil {
		return err
	}
	defer sess.Close()

	if r := retainOf(l.m); r.MaxSessions > 0 || r.MaxAge > 0 {
		_, ws := session.ApplyRetain(sess.ProjectRecordsDir, sess.ID, r, sess.RunningDir, time.Now())
		diag.PrintWarnings(stderr, ws)
	}

	var warnOnce sync.Mutex
	tw, err := trace.Create(filepath.Join(sess.RecordsDir, trace.FileName), sess.ID, trace.Options{
		Warn: func(w diag.Warning) { warnOnce.Lock(); fmt.Fprintln(stderr, w.String()); warnOnce.Unlock() },
	})
	if err != nil {
		return err
	}
	defer tw.Close()

	var tel *telemetry.Session
	if ep := l.m.Observability.OtelEndpoint; ep != "" {
		tel, err = telemetry.Start(ep, telemetry.Identity{SessionID: sess.ID, CapsuleName: sess.Name,
			CapsuleVersion: sess.Version, Kind: "script"}, filepath.Join(sess.RecordsDir, "logs", "otel.log"),
			telemetry.Options{}, sess.Started)
		if err != nil {
			fmt.Fprintln(stderr, diag.Warn("W-IO-053", "spans will not be exported: %v", err).String())
			tel = nil
		}
	}
	rec := script.NewRecorder(tw, tel, sess.Started)
	tools := make([]string, 0, len(l.tools))
	for _, t := range l.tools {
		tools = append(tools, t.Name)
	}
	tw.Emit(trace.SessionStart{CapsuleName: sess.Name, CapsuleVersion: sess.Version, Kind: "script",
		ToolsDeclared: tools, EffectiveGrants: grantsJSON})

	if w := sess.WriteRunningRecord(); w != nil {
		fmt.Fprintln(stderr, w.String())
	}

	// From here a signal ends the session in order (see onSignal).
	sig.setSession(func(reason string, code int) {
		if rec.End(trace.EndFailed, reason, false) {
			tw.Close()
			sess.Close()
			fmt.Fprintf(stderr, "%s: failed (%s)\n", sess.ID, reason)
			os.Exit(code)
		}
	})

	if f.json {
		line, _ := json.Marshal(readyLine{PID: os.Getpid(), SessionID: sess.ID, Name: sess.Name,
			Version: sess.Version, Workdir: sess.Workdir, RecordsDir: sess.RecordsDir})
		fmt.Fprintln(stdout, string(line))
	}

	host, err := hostapi.New(hostapi.Config{Engine: eng, Manifest: l.m, Grants: &grants, Stores: l.chain,
		Session: sess, Lookup: os.LookupEnv})
	var imports script.Imports
	if err != nil {
		fmt.Fprintln(stderr, diag.Warn("W-IO-054", "the murmur:* host interfaces are unavailable to this run: %v", err).String())
	} else {
		defer host.Close()
		imports = hostImports{host}
	}
	res := script.Run(context.Background(), script.Config{
		Engine: eng, Component: comp, ComponentName: l.componentName,
		Session: sess, Recorder: rec, Limits: l.m.Capabilities.EffLimits(),
		EnvAllow: l.m.Capabilities.Env.Allow, Lookup: os.LookupEnv,
		Imports: imports,
	})
	if !rec.End(res.Ending, res.Reason, true) {
		select {} // a signal is ending the session: its goroutine exits the process
	}
	tw.Close()
	sess.Close()

	out := stdout
	if f.json {
		out = stderr // with --json, stdout holds exactly the ready line
	}
	fmt.Fprintf(out, "%s: %s\n", sess.ID, res.Ending)
	if res.Ending == trace.EndOK {
		return nil
	}
	return endingError(sess, res)
}

// signals ends a run on SIGTERM (exit 143) or SIGINT (exit 130) at once
// (contracts §5). Before the session exists there is nothing to record and
// the process just exits; once setSession is called, the session's end is
// recorded first (session_end {failed, terminated}, running record and
// runtime dir removed) without waiting for the component, which dies with
// the process.
type signals struct {
	ch    chan os.Signal
	mu    sync.Mutex
	ender func(reason string, code int)
}

func onSignal() *signals {
	s := &signals{ch: make(chan os.Signal, 1)}
	signal.Notify(s.ch, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig, ok := <-s.ch
		if !ok {
			return
		}
		reason, code := "terminated", 143
		if sig == syscall.SIGINT {
			reason, code = "interrupted", 130
		}
		s.mu.Lock()
		end := s.ender
		s.mu.Unlock()
		if end == nil {
			os.Exit(code)
		}
		end(reason, code) // exits, unless the session already ended by itself
	}()
	return s
}

func (s *signals) setSession(end func(reason string, code int)) {
	s.mu.Lock()
	s.ender = end
	s.mu.Unlock()
}

func (s *signals) stop() { signal.Stop(s.ch) }

// hostImports grants internal/hostapi's murmur:* interfaces to a run,
// recording through the run's recorder (trace lines and OTel spans).
type hostImports struct{ s *hostapi.Session }

func (h hostImports) Define(host *wasmhost.Host, rec *script.Recorder) error {
	h.s.Register(host, rec)
	return nil
}

// endingError is the diagnostic for a run that did not end ok.
func endingError(sess *session.Session, res script.Result) error {
	codes := map[string]string{
		trace.EndTrapped:          "E-RUN-010",
		trace.EndDeadlineExceeded: "E-RUN-011",
		trace.EndResourceLimit:    "E-RUN-012",
		trace.EndFailed:           "E-RUN-013",
	}
	reason := res.Reason
	if reason == "" {
		reason = "no reason given"
	}
	return diag.New(codes[res.Ending], "%s@%s ended %s: %s", sess.Name, sess.Version, res.Ending, reason).
		WithHint("its stderr is in %s; run 'mur trace show %s'", filepath.Join(sess.RecordsDir, "logs", script.StderrLog), sess.ID)
}

func retainOf(m *manifest.Manifest) session.Retain {
	var r session.Retain
	r.MaxSessions = m.Trace.Retain.MaxSessions.Or(0)
	if d, ok := m.Trace.Retain.MaxAgeDuration(); ok {
		r.MaxAge = d
	}
	return r
}

// prepare loads the manifest (or the installed capsule), checks it is a
// script capsule, finds its component and resolves its tool artifacts.
func prepare(f runFlags, homeDir string, stderr io.Writer) (*launch, error) {
	l := &launch{}
	var chain store.Chain
	var err error
	if f.capsule != "" {
		chain, err = store.ChainFor("", homeDir)
		if err != nil {
			return nil, err
		}
		r, err := chain.Resolve(f.capsule, f.capsuleVersion, manifest.Options{SkipSecrets: true})
		if err != nil {
			if store.IsNotFound(err) {
				return nil, diag.New("E-RUN-008", "missing artifacts: %s@%s is not installed", f.capsule, f.capsuleVersion).
					WithHint("publish its .mur.zip into the global store: mur publish %s-%s.mur.zip", manifest.Bare(f.capsule), f.capsuleVersion)
			}
			return nil, err
		}
		l.m = r.Manifest
		l.manifestYAML, _ = r.Archive.ReadFile("murmur.yaml")
		if !l.m.IsAgent() {
			name, err := script.PickComponent(r.Ref(), r.Archive.Names())
			if err != nil {
				return nil, err
			}
			l.componentName = name
			if l.component, err = r.Archive.ReadFile(name); err != nil {
				return nil, diag.Wrap(err, "E-RUN-003", "cannot read %s from %s", name, r.Ref())
			}
		}
	} else {
		path, err := filepath.Abs(f.manifest)
		if err != nil {
			return nil, diag.Wrap(err, "E-RUN-002", "cannot resolve the manifest path %s", f.manifest)
		}
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			path = filepath.Join(path, "murmur.yaml")
		}
		// Secrets are resolved only once the manifest is known to be one
		// this mur runs (below): an agent capsule is refused as such, not
		// for an unset provider key it would never use here.
		m, err := manifest.Load(path, manifest.Options{SkipSecrets: true})
		if err != nil {
			return nil, err
		}
		l.m = m
		l.manifestDir = filepath.Dir(path)
		l.manifestYAML, _ = os.ReadFile(path)
		if !m.IsAgent() {
			if l.componentName, l.component, err = script.ComponentInDir(l.manifestDir); err != nil {
				return nil, err
			}
		}
		if chain, err = store.ChainFor(l.manifestDir, homeDir); err != nil {
			return nil, err
		}
	}
	l.chain = chain
	printManifestWarnings(stderr, l.m)
	if l.m.IsAgent() {
		return nil, diag.New("E-RUN-009", "%s is an agent capsule (it has an inference: block); this mur runs script capsules only", l.m.Name).
			WithHint("remove the inference: block and add a .wasm component exporting murmur:capsule/run to make it a script capsule")
	}
	if k := l.m.RuntimeKind(); k != manifest.RuntimeCapsule {
		return nil, diag.New("E-RUN-002", "%s is a %s artifact, not a capsule: only capsules run", l.m.Name, k).
			WithHint("declare it under artifacts: of a capsule's manifest instead")
	}
	// A declared floor above advisory needs a native containment tier, which
	// this build does not apply: the host falls short (E-CAP-003), and the
	// run is refused rather than silently contained less than required.
	if c := l.m.Capabilities.ContainmentClass(); manifest.ContainmentRank(c) > manifest.ContainmentRank(manifest.ContainmentAdvisory) {
		return nil, diag.New("E-CAP-003", "%s declares the %s containment floor, which this mur cannot deliver: it applies the WASM component sandbox and no native containment tier", l.m.Name, c).
			WithHint("lower capabilities.containment to advisory, or run it with a mur that applies native containment; 'mur run --explain-scope' shows what this build applies")
	}
	// Now resolve ${NAME} in gateway.api_key (contracts §4: an unset
	// variable fails the load with E-MAN-003). Only a manifest that has such
	// a reference is parsed again.
	for _, a := range l.m.Artifacts {
		if a.Gateway != nil && a.Gateway.APIKeyRef != "" {
			full, err := manifest.Parse(l.manifestYAML, l.m.File, manifest.Options{})
			if err != nil {
				return nil, err
			}
			l.m = full
			break
		}
	}

	// Every declared tool must be there before anything starts.
	var missing []string
	for _, a := range l.m.Artifacts {
		if a.RuntimeKind() != manifest.RuntimeTool {
			continue
		}
		r, err := chain.Resolve(a.Name, a.Version, manifest.Options{SkipSecrets: true})
		if err != nil {
			if store.IsNotFound(err) {
				missing = append(missing, a.Name+"@"+a.Version)
				continue
			}
			return nil, err
		}
		l.tools = append(l.tools, r)
	}
	if len(missing) > 0 {
		hint := "run 'mur install' in the project to install every declared artifact from the global store (publish a missing one there first with 'mur publish <its .mur.zip>')"
		if f.capsule != "" {
			hint = "publish each into the global store with 'mur publish <its .mur.zip>'"
		}
		return nil, diag.New("E-RUN-008", "missing artifacts: %s", strings.Join(missing, ", ")).WithHint("%s", hint)
	}
	return l, nil
}

// compileCapsule compiles the component and checks that it exports run.
func compileCapsule(eng *wasmhost.Engine, l *launch) (*wasmhost.Component, error) {
	what := l.componentName
	if l.manifestDir != "" {
		what = filepath.Join(l.manifestDir, l.componentName)
	}
	if err := script.CheckComponent(what, l.component); err != nil {
		return nil, err
	}
	comp, err := eng.Compile(l.component)
	if err != nil {
		return nil, diag.Wrap(err, "E-RUN-005", "%s is not a component this runtime can load", what).
			WithHint("build it as a component exporting %s, for example with the Go guest kit", wit.IfaceCapsuleRun)
	}
	if !wit.ExportsCapsuleRun(comp) {
		comp.Close()
		return nil, diag.New("E-RUN-006", "%s does not export %s with a run function", what, wit.IfaceCapsuleRun).
			WithHint("a script capsule's component must be built against the capsule world (murmur:runtime-guest/capsule)")
	}
	return comp, nil
}

// readTask reads --task: a file when one exists at that path, else the text.
func readTask(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if st, err := os.Stat(v); err == nil && st.Mode().IsRegular() {
		b, err := os.ReadFile(v)
		if err != nil {
			return "", diag.Wrap(err, "E-RUN-007", "cannot read the task file %s", v)
		}
		return string(b), nil
	}
	return v, nil
}

// sandboxMechanism is the one containment tier this build applies to a
// script capsule: the component sandbox. The native tiers the spec names are
// a later issue, and --explain-scope must never claim them.
const (
	sandboxMechanism = "WASM component sandbox; no native containment tier (seccomp-only, " +
		"landlock+seccomp and mountns+pivot_root+landlock+seccomp are not applied by this build)"
	sandboxDetail = "the component reaches only its work folder (read-write, as .), murmur-runtime/ " +
		"(read-only), the env.allow and identity variables and the murmur:* host interfaces; " +
		"no sockets; every wasi:http request is denied (network.allow is not applied yet); " +
		"delegate-task is not provided"
)

// explainScope prints what the capsule would be granted and how this build
// contains it, and runs nothing (contracts §10, --explain-scope). It reads
// the manifest only: no component is compiled, no artifact resolved, no
// secret read, no session file written.
func explainScope(f runFlags, homeDir string, stdout, stderr io.Writer) error {
	var m *manifest.Manifest
	var from string
	if f.capsule != "" {
		chain, err := store.ChainFor("", homeDir)
		if err != nil {
			return err
		}
		r, err := chain.Resolve(f.capsule, f.capsuleVersion, manifest.Options{SkipSecrets: true})
		if err != nil {
			if store.IsNotFound(err) {
				return diag.New("E-RUN-008", "missing artifacts: %s@%s is not installed", f.capsule, f.capsuleVersion).
					WithHint("publish its .mur.zip into the global store: mur publish %s-%s.mur.zip", manifest.Bare(f.capsule), f.capsuleVersion)
			}
			return err
		}
		m, from = r.Manifest, r.ZipPath
	} else {
		path, err := filepath.Abs(f.manifest)
		if err != nil {
			return diag.Wrap(err, "E-RUN-002", "cannot resolve the manifest path %s", f.manifest)
		}
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			path = filepath.Join(path, "murmur.yaml")
		}
		if m, err = manifest.Load(path, manifest.Options{SkipSecrets: true}); err != nil {
			return err
		}
		from = path
	}
	printManifestWarnings(stderr, m)
	grants, _ := m.EffectiveGrants()

	kind := "script capsule"
	mechanism, detail := sandboxMechanism, sandboxDetail
	switch {
	case m.RuntimeKind() != manifest.RuntimeCapsule:
		kind = m.RuntimeKind() + " artifact"
		mechanism = "none of its own: a " + m.RuntimeKind() + " runs inside the capsule that declares it"
		detail = "under that capsule's mechanism, with its grant narrowed to the capsule's"
	case m.IsAgent():
		kind = "agent capsule"
		mechanism = "none: this build does not run agent capsules"
		detail = "'mur run' refuses them (E-RUN-009); native containment tiers are a later issue"
	}
	fmt.Fprintf(stdout, "%s@%s: %s (%s)\n", m.Name, m.Version, kind, from)
	fmt.Fprintf(stdout, "mechanism: %s\n  %s\n", mechanism, detail)
	if c := grants.Capsule.Containment; c == manifest.ContainmentScoped || c == manifest.ContainmentSealed {
		fmt.Fprintf(stdout, "note: the manifest declares the %s containment floor; this build applies no native "+
			"tier, so 'mur run' refuses it (E-CAP-003)\n", c)
	}
	for _, l := range grants.Lines() {
		fmt.Fprintln(stdout, l)
	}
	return nil
}
