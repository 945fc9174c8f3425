package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/launch"
	"github.com/murmur-go/murmur/internal/launch/launchapi"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/telemetry"
)

func init() { register(newRunCmd) }

type runFlags struct {
	manifest, task, workdir string
	json, explainScope      bool
	containment             string
	capsule, capsuleVersion string
	spawnApprovalStdin      bool
	withRoost               bool
	roostPort               int
	spawnAllow              []string
	roster                  string
}

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [DIR | FILE]",
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
build applies, and runs nothing; with --json, as one JSON object.

The project is DIR (the directory holding murmur.yaml) or FILE (a manifest),
as --manifest takes it. --capsule and --capsule-version go together; half of
the pair is a usage error that lists the installed versions.`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("roster") {
				return runRosterCmd(cmd, args, f, stdout, stderr)
			}
			if err := runArgs(cmd, args, &f, stderr); err != nil {
				return err
			}
			if (f.capsule == "") != (f.capsuleVersion == "") {
				return usageError{fmt.Errorf("--capsule and --capsule-version go together")}
			}
			if f.capsule != "" && cmd.Flags().Changed("manifest") {
				return usageError{fmt.Errorf("--manifest and --capsule exclude each other: --capsule runs an installed artifact with no project")}
			}
			if f.capsule == "" && !cmd.Flags().Changed("manifest") {
				// As list, doctor and trace do: the project is the nearest
				// directory at or above this one holding a murmur.yaml.
				if wd, err := os.Getwd(); err == nil {
					if d, ok := store.FindProject(wd); ok {
						f.manifest = filepath.Join(d, store.ManifestEntry)
					}
				}
				if f.manifest == "" {
					f.manifest = store.ManifestEntry // none found: the refusal names ./murmur.yaml
				}
			}
			return runCapsule(cmd.Context(), f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.manifest, "manifest", "", "the capsule's manifest: a murmur.yaml `PATH`, or the directory holding it (default: the nearest murmur.yaml at or above the current directory)")
	fl.StringVar(&f.task, "task", "", "the task: a `FILE|TEXT` (a file is read, - is standard input, anything else is the text); the capsule reads it as murmur-runtime/task.md")
	fl.StringVar(&f.workdir, "workdir", "", "the capsule's work folder `DIR` (default <manifest dir>/workdir/<session id>)")
	fl.BoolVar(&f.json, "json", false, "print one JSON line describing the session once it is ready")
	fl.BoolVar(&f.explainScope, "explain-scope", false, "print what the capsule is granted and how it is contained, then exit without running")
	fl.StringVar(&f.containment, "containment", "", "the containment `CLASS` to require (advisory|scoped|sealed); a floor this host cannot deliver is refused (E-CAP-003)")
	fl.StringVar(&f.capsule, "capsule", "", "run the installed capsule `FULLNAME` (scope/name) with no project (with --capsule-version)")
	fl.StringVar(&f.capsuleVersion, "capsule-version", "", "the `VERSION` of --capsule")
	fl.BoolVar(&f.spawnApprovalStdin, launchapi.FlagSpawnApprovalStdin, false, "read a parent runtime's spawn approval from standard input (for a parent capsule's runtime only)")
	fl.BoolVar(&f.withRoost, "with-roost", false, "start mur-roost for this run (on 127.0.0.1:--roost-port, allowing this capsule at the top level), set MURMUR_ROOST_URL to it, and end it after the session")
	fl.IntVar(&f.roostPort, "roost-port", launch.DefaultRoostPort, "the loopback `PORT` --with-roost's mur-roost listens on")
	fl.StringArrayVar(&f.spawnAllow, "spawn-allow", nil, "with --with-roost, one more capsule `FULLNAME` the daemon lets register at the top level (repeatable)")
	fl.StringVar(&f.roster, "roster", "", "start the formation of a roster: a `DIR` holding roster.yaml, or a roster FILE (docs/formations.md); combines with --task (the entry's), --json and --containment only")
	decorateRunCmd(cmd)
	return cmd
}

func runCapsule(ctx context.Context, f runFlags, stdout, stderr io.Writer) error {
	switch f.containment {
	case "", manifest.ContainmentAdvisory, manifest.ContainmentScoped, manifest.ContainmentSealed:
	default:
		return usageError{fmt.Errorf("--containment must be advisory, scoped or sealed, not %q", f.containment)}
	}
	homeDir, err := home.Dir()
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if !f.withRoost && (f.roostPort != launch.DefaultRoostPort || len(f.spawnAllow) > 0) {
		return usageError{fmt.Errorf("--roost-port and --spawn-allow go with --with-roost")}
	}
	if f.withRoost && (f.roostPort < 1 || f.roostPort > 65535) {
		return usageError{fmt.Errorf("--roost-port must be a port from 1 to 65535, not %d", f.roostPort)}
	}
	// --with-roost: MURMUR_ROOST_URL is answered from the daemon this run
	// starts once it is up; the process environment is left as it is.
	var roostURL string
	lookup := launch.WithRoostURL(os.LookupEnv, &roostURL)
	if f.withRoost {
		if err := launch.CheckWithRoost(os.LookupEnv); err != nil {
			return err
		}
	}
	// From here SIGTERM and SIGINT cancel the run, which ends on its one
	// path (launch.Run); before the session exists nothing is recorded.
	ctx, stop := launch.NotifyContext(ctx)
	defer stop()
	plan, err := launch.Load(launch.Request{ManifestPath: f.manifest, Capsule: f.capsule, CapsuleVersion: f.capsuleVersion,
		Containment: f.containment, Home: homeDir, LookupEnv: lookup})
	if err != nil {
		return err
	}
	printManifestWarnings(stderr, plan.Manifest)
	diag.PrintWarnings(stderr, plan.Containment.Warnings)
	if f.explainScope {
		return explainScope(plan, f.json, stdout)
	}
	if f.withRoost {
		// Started once the plan is loaded (a refused manifest starts no
		// daemon) and ended after session_end, however the run ends.
		rs, err := launch.StartRoost(ctx, launch.RoostConfig{Port: f.roostPort,
			SpawnAllow: append([]string{plan.Manifest.Name}, f.spawnAllow...), Output: stderr})
		if err != nil {
			return err
		}
		defer rs.Stop()
		roostURL = rs.URL
		fmt.Fprintf(stderr, "mur-roost (pid %d) at %s for this run; it ends with the session\n", rs.PID, rs.URL)
	}
	// On a terminal a person is watching: say which session this is as
	// soon as it exists, and what is being compiled while they wait (a cold
	// compile takes seconds). Pipes and logs get neither.
	tty := isTerminal(stderr)
	var ttyMu sync.Mutex
	opts := launch.Options{
		Task: f.task, Workdir: f.workdir, Stderr: stderr, SpawnApprovalStdin: f.spawnApprovalStdin, Stdin: os.Stdin,
		Ready: func(r launch.Ready) {
			if r.URL != nil && AgentReady != nil {
				// An agent's start-up is over: it now serves tasks for as
				// long as it lives (cmd/mur/gc.go).
				AgentReady()
			}
			if f.json {
				line, _ := json.Marshal(r) // launchapi.Ready
				fmt.Fprintln(stdout, string(line))
			}
			if tty {
				// An agent's door, as a URL a person can paste (the --json
				// line keeps the bare host:port a parent reads, launchapi.Ready).
				door := ""
				if r.URL != nil {
					door = " at http://" + *r.URL
				}
				ttyMu.Lock()
				fmt.Fprintf(stderr, "session %s started%s (records: %s)\n", r.SessionID, door, r.RecordsDir)
				ttyMu.Unlock()
			}
		},
	}
	if tty {
		opts.OnCompile = func(component string) {
			ttyMu.Lock()
			fmt.Fprintf(stderr, "compiling %s…\n", component)
			ttyMu.Unlock()
		}
	}
	opts.Spans = telemetry.Open // spans come from the trace when the manifest or the environment names a collector
	res, err := launch.Run(ctx, plan, opts)
	if err != nil {
		return err
	}
	if tty && res.Refused > 0 {
		// Each refusal is a line in the session's log, not on this screen.
		fmt.Fprintf(stderr, "egress: %d network request(s) refused, not covered by capabilities.network.allow; see %s\n", res.Refused, res.EgressLog)
	}
	if res.Signal != nil {
		if res.SessionID != "" {
			fmt.Fprintf(stderr, "%s: %s (%s)\n", res.SessionID, res.Ending, res.Reason)
		}
		return exitStatus(res.Signal.ExitCode())
	}
	if f.json {
		// With --json, stdout holds exactly the ready line (docs/cli.md).
		fmt.Fprintf(stderr, "%s: %s\n", res.SessionID, res.Ending)
		return res.Err
	}
	// Without it, the answer goes to stdout and the status and record
	// paths to stderr (docs/cli.md), so `mur run > answer.txt` works.
	shown, err := printAnswer(stdout, res.Answer)
	fmt.Fprintf(stderr, "%s: %s\n", res.SessionID, res.Ending)
	fmt.Fprintf(stderr, "records: %s\n", res.RecordsDir)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "answer:  %s could not be read: %v\n", res.Answer, err)
	case shown:
		fmt.Fprintf(stderr, "answer:  %s\n", res.Answer)
	default:
		fmt.Fprintf(stderr, "answer:  none (%s was not written)\n", res.Answer)
	}
	return res.Err
}

// answerMax bounds the answer mur run prints (docs/cli.md): past it, the
// answer is cut and a last line names the file holding all of it.
const answerMax = 64 << 10

// printAnswer copies the answer file at path to w, cut at answerMax. It
// reports whether there was an answer to show: a missing or empty file is
// none. On a terminal, control characters a guest wrote are shown as
// escapes, line by line; a pipe gets the bytes as they are.
func printAnswer(w io.Writer, path string) (bool, error) {
	if path == "" {
		return false, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
		return false, err
	}
	b, err := io.ReadAll(io.LimitReader(f, answerMax+1))
	if err != nil {
		return false, err
	}
	cut := len(b) > answerMax
	if cut {
		b = b[:answerMax]
		// Not in the middle of a character.
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
			if r, n := utf8.DecodeLastRune(b); r != utf8.RuneError || n != 1 {
				break
			}
			b = b[:len(b)-1]
		}
	}
	text := string(b)
	if isTerminal(w) {
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			lines[i] = safe(l)
		}
		text = strings.Join(lines, "\n")
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if cut {
		text += fmt.Sprintf("[the answer is cut at 64 KiB here: all %d bytes of it are in %s]\n", st.Size(), path)
	}
	_, err = io.WriteString(w, text)
	return true, err
}

// explainScope prints what the capsule would be granted and how this build
// contains it (--explain-scope, docs/cli.md): the plan as loaded, before
// any component is compiled, artifact resolved, secret read or session file
// written.
//
// With --json it prints one JSON object instead (launch.ScopeJSON, whose
// shape docs/containment.md documents).
func explainScope(p *launch.Plan, asJSON bool, stdout io.Writer) error {
	if asJSON {
		b, err := json.Marshal(p.Scope())
		if err != nil {
			return fmt.Errorf("--explain-scope --json: %w", err)
		}
		_, err = fmt.Fprintln(stdout, string(b))
		return err
	}
	m, c := p.Manifest, p.Containment
	fmt.Fprintf(stdout, "%s@%s: %s (%s)\n", m.Name, m.Version, p.Kind(), p.From)
	for _, l := range c.Lines() {
		fmt.Fprintln(stdout, l)
	}
	for _, l := range p.MCPLines() {
		fmt.Fprintln(stdout, l)
	}
	for _, l := range p.MCPNotProtected() {
		fmt.Fprintln(stdout, "not protected here: "+l)
	}
	for _, l := range p.PlaneNotProtected() {
		fmt.Fprintln(stdout, l)
	}
	for _, l := range p.Grants.Lines() {
		fmt.Fprintln(stdout, l)
	}
	if m.Inference != nil {
		for _, l := range p.GateLines() {
			fmt.Fprintln(stdout, l)
		}
	}
	if m.IsAgent() {
		// What the door asks of its callers (docs/formations.md).
		auth, peer := "none", "refused"
		if m.Door.Authenticated() {
			auth = m.Door.AuthScheme
		}
		if m.Door.AcceptsPeerTasks() {
			peer = "accepted"
		}
		fmt.Fprintf(stdout, "door auth: %s\npeer tasks: %s\n", auth, peer)
	}
	return nil
}
