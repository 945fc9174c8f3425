package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/driver/builtin"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/launch"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
)

func init() { register(newDoctorCmd) }

func newDoctorCmd(stdout, stderr io.Writer) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check every artifact the project declares: installed, hash intact, lock-consistent",
		Long: `For the project's murmur.yaml, resolve every declared artifact the way a run
does (project store, then global store; murmur.lock checked when present),
re-hashing its bytes against the sidecars, and print a checklist on stdout;
each failed check's diagnostic goes to stderr. Exits non-zero when any check
fails.

With --json, the checklist is one JSON object on stdout (docs/cli.md gives
its shape), failures included; a manifest that cannot be read is the --json
error object instead.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(asJSON, stdout, stderr)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checklist as one JSON object")
	return cmd
}

// doctorReport is mur doctor's checklist; --json prints it as is.
type doctorReport struct {
	Project   string           `json:"project"`
	Manifest  string           `json:"manifest"`
	Name      string           `json:"name"`
	Version   string           `json:"version"`
	Build     string           `json:"build"` // launch.ProviderBuild: in-process or murdriver
	Lock      doctorLock       `json:"lock"`
	Artifacts []doctorArtifact `json:"artifacts"`
	Problems  int              `json:"problems"`
	OK        bool             `json:"ok"`
}

// doctorLock is the murmur.lock check. State is none (no lock: resolution
// is presence-only), pinned, or unreadable (Error says why).
type doctorLock struct {
	File   string         `json:"file"`
	State  string         `json:"state"`
	Pinned int            `json:"pinned"`
	Stale  []string       `json:"stale"` // pinned name@version no longer declared
	Error  *jsonErrorBody `json:"error,omitempty"`
}

// doctorArtifact is one declared artifact's check. With OK, Runtime, Store
// (project|global), SHA256 and Locked (it matches murmur.lock) are set;
// without, Error says why.
type doctorArtifact struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	OK      bool   `json:"ok"`
	Runtime string `json:"runtime,omitempty"`
	Store   string `json:"store,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	Locked  bool   `json:"locked"`
	// Precompiled tells whether the compile cache holds its component
	// (absent for an artifact with none: an agent capsule, a skill).
	Precompiled *bool          `json:"precompiled,omitempty"`
	Error       *jsonErrorBody `json:"error,omitempty"`
}

// mcpInPlace is doctorArtifact.Store for an MCP server: declared in place,
// never stored or locked.
const mcpInPlace = "declared in place"

// builtInStore is doctorArtifact.Store for a driver mur has built in.
const builtInStore = "built-in"

func runDoctor(asJSON bool, stdout, stderr io.Writer) error {
	homeDir, err := home.Dir()
	if err != nil {
		return err
	}
	proj, err := storeProjectDir()
	if err != nil {
		return err
	}
	mpath := filepath.Join(proj, store.ManifestEntry)
	if !asJSON {
		fmt.Fprintf(stdout, "project   %s\n", proj)
		fmt.Fprintf(stdout, "build     %s: %s\n", launch.ProviderBuild, launch.ProviderBuildText)
	}
	m, err := manifest.Load(mpath, manifest.Options{SkipSecrets: true})
	if err != nil {
		if !asJSON {
			fmt.Fprintf(stdout, "%s  manifest %s\n", paint(stdout, "FAIL"), mpath)
		}
		return err
	}
	printManifestWarnings(stderr, m)
	rep := doctorReport{Project: proj, Manifest: mpath, Name: m.Name, Version: m.Version, Build: launch.ProviderBuild,
		Artifacts: []doctorArtifact{}, Lock: doctorLock{File: filepath.Join(proj, store.LockFile), Stale: []string{}}}
	// doctor checks the bytes themselves: every zip is hashed again.
	chain := store.Chain{Project: store.Project(proj), Global: store.Global(homeDir).Rehashing()}
	var failures []error // each FAIL's diagnostic, for stderr
	lock, err := store.ReadLock(proj)
	switch {
	case err != nil:
		rep.Problems++
		rep.Lock.State = "unreadable"
		b := errorBody(err, "E-REG-013")
		rep.Lock.Error = &b
		failures = append(failures, err)
	case lock == nil:
		rep.Lock.State = "none"
	default:
		chain.Lock = lock
		rep.Lock.State, rep.Lock.File, rep.Lock.Pinned = "pinned", lock.File, len(lock.Artifacts)
		declared := map[string]bool{}
		for _, a := range m.Artifacts {
			declared[a.Name] = true
		}
		for _, e := range lock.Artifacts {
			if !declared[e.Name] {
				rep.Lock.Stale = append(rep.Lock.Stale, e.Name+"@"+e.Version)
			}
		}
	}
	for _, a := range m.Artifacts {
		da := doctorArtifact{Name: a.Name, Version: a.Version}
		if a.IsMCP() {
			// Declared in place: nothing is stored or locked for it; what
			// doctor checks is that it can be reached.
			da.Runtime, da.Store = manifest.RuntimeMCP, mcpInPlace
			where, err := launch.MCPWhere(m, a, os.LookupEnv)
			da.SHA256 = where // the binary or url, shown instead of a digest
			if err != nil {
				rep.Problems++
				b := errorBody(err, "E-RUN-150")
				da.Error = &b
				failures = append(failures, err)
			} else {
				da.OK = true
			}
			rep.Artifacts = append(rep.Artifacts, da)
			continue
		}
		r, rerr := chain.Resolve(a.Name, a.Version, manifest.Options{SkipSecrets: true})
		if rerr != nil && store.IsNotFound(rerr) && a.RuntimeKind() == manifest.RuntimeDriver && builtin.Has(a.Name) {
			// mur run uses the built-in of that name when none is installed;
			// in the split build a provider built-in needs mur-driver beside mur.
			rerr = nil
			if builtin.Provider(a.Name) {
				rerr = launch.ProviderProblem(a.Name)
			}
			if rerr == nil {
				da.OK, da.Runtime, da.Store = true, manifest.RuntimeDriver, builtInStore
				rep.Artifacts = append(rep.Artifacts, da)
				continue
			}
		}
		if rerr != nil {
			rep.Problems++
			b := errorBody(rerr, "E-REG-018")
			da.Error = &b
			failures = append(failures, rerr)
		} else {
			da.OK, da.Runtime, da.Store, da.SHA256, da.Locked = true, r.Runtime, r.Store.Kind, r.SHA256, chain.Lock != nil
			if comp, cached, err := launch.IsPrecompiled(homeDir, r); err == nil && comp != "" {
				da.Precompiled = &cached
			}
		}
		rep.Artifacts = append(rep.Artifacts, da)
	}
	rep.OK = rep.Problems == 0
	var summary error
	if rep.Problems > 0 {
		summary = diag.New("E-REG-018", "%d problem(s) in %s", rep.Problems, mpath).
			WithHint("fix each FAIL above ('mur publish', 'mur install'), then run 'mur doctor' again")
	}
	if asJSON {
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, string(b))
		for _, f := range failures {
			diag.Print(stderr, f, "E-REG-018")
		}
		return summary
	}
	printDoctor(stdout, stderr, rep, failures)
	return summary
}

// printDoctor writes the checklist for a person: one line a check on stdout,
// each failure's diagnostic on stderr right after its FAIL line.
func printDoctor(stdout, stderr io.Writer, rep doctorReport, failures []error) {
	fmt.Fprintf(stdout, "%s    manifest %s@%s\n", paint(stdout, "ok"), rep.Name, rep.Version)
	next := func() {
		diag.Print(stderr, failures[0], "E-REG-018")
		failures = failures[1:]
	}
	switch rep.Lock.State {
	case "unreadable":
		fmt.Fprintf(stdout, "%s  lock %s\n", paint(stdout, "FAIL"), rep.Lock.File)
		next()
	case "none":
		fmt.Fprintf(stdout, "%s    lock: none (resolution is presence-only; 'mur install' pins)\n", paint(stdout, "ok"))
	default:
		fmt.Fprintf(stdout, "%s    lock %s (%d pinned)\n", paint(stdout, "ok"), rep.Lock.File, rep.Lock.Pinned)
		for _, s := range rep.Lock.Stale {
			fmt.Fprintf(stdout, "%s  %s is pinned but no longer declared ('mur install' rewrites the lock)\n", paint(stdout, "warn"), s)
		}
	}
	for _, a := range rep.Artifacts {
		ref := a.Name + "@" + a.Version
		if !a.OK {
			fmt.Fprintf(stdout, "%s  %s\n", paint(stdout, "FAIL"), ref)
			next()
			continue
		}
		if a.Store == mcpInPlace {
			fmt.Fprintf(stdout, "%s    mcp  %s  declared in place: %s\n", paint(stdout, "ok"), ref, a.SHA256)
			continue
		}
		if a.Store == builtInStore {
			fmt.Fprintf(stdout, "%s    %s (driver) not installed: built into mur, which runs it\n", paint(stdout, "ok"), ref)
			continue
		}
		pinned := "not locked"
		if a.Locked {
			pinned = "matches murmur.lock"
		}
		fmt.Fprintf(stdout, "%s    %s (%s) installed in the %s store, sha256 %s matches its sidecars, %s\n", paint(stdout, "ok"),
			ref, a.Runtime, a.Store, a.SHA256[:12], pinned)
		if a.Precompiled != nil && !*a.Precompiled {
			fmt.Fprintf(stdout, "%s  %s's component is not compiled yet: its first run compiles it ('mur install %s' compiles it now)\n", paint(stdout, "warn"), ref, ref)
		}
	}
	if rep.OK {
		fmt.Fprintf(stdout, "all %d declared artifact(s) resolve\n", len(rep.Artifacts))
	}
}
