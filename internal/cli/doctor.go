package cli

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
)

func init() { register(newDoctorCmd) }

func newDoctorCmd(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check every artifact the project declares: installed, hash intact, lock-consistent",
		Long: `For the project's murmur.yaml, resolve every declared artifact the way a run
does (project store, then global store; murmur.lock checked when present),
re-hashing its bytes against the sidecars, and print a checklist. Exits
non-zero when any check fails.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDoctor(stdout, stderr)
		},
	}
}

func runDoctor(stdout, stderr io.Writer) error {
	homeDir, err := home.Dir()
	if err != nil {
		return err
	}
	proj, err := storeProjectDir()
	if err != nil {
		return err
	}
	mpath := filepath.Join(proj, store.ManifestEntry)
	fmt.Fprintf(stdout, "project   %s\n", proj)
	m, err := manifest.Load(mpath, manifest.Options{SkipSecrets: true})
	if err != nil {
		fmt.Fprintf(stdout, "FAIL  manifest %s\n", mpath)
		return err
	}
	printManifestWarnings(stderr, m)
	fmt.Fprintf(stdout, "ok    manifest %s@%s\n", m.Name, m.Version)
	problems := 0
	chain := store.Chain{Project: store.Project(proj), Global: store.Global(homeDir)}
	lock, err := store.ReadLock(proj)
	switch {
	case err != nil:
		problems++
		fmt.Fprintf(stdout, "FAIL  lock %s\n", filepath.Join(proj, store.LockFile))
		diag.Print(stdout, err, "E-REG-013")
	case lock == nil:
		fmt.Fprintf(stdout, "ok    lock: none (resolution is presence-only; 'mur install' pins)\n")
	default:
		chain.Lock = lock
		fmt.Fprintf(stdout, "ok    lock %s (%d pinned)\n", lock.File, len(lock.Artifacts))
		declared := map[string]bool{}
		for _, a := range m.Artifacts {
			declared[a.Name] = true
		}
		for _, e := range lock.Artifacts {
			if !declared[e.Name] {
				fmt.Fprintf(stdout, "warn  %s@%s is pinned but no longer declared ('mur install' rewrites the lock)\n", e.Name, e.Version)
			}
		}
	}
	for _, a := range m.Artifacts {
		ref := a.Name + "@" + a.Version
		r, rerr := chain.Resolve(a.Name, a.Version, manifest.Options{SkipSecrets: true})
		if rerr != nil {
			problems++
			fmt.Fprintf(stdout, "FAIL  %s\n", ref)
			diag.Print(stdout, rerr, "E-REG-018")
			continue
		}
		pinned := "not locked"
		if chain.Lock != nil {
			pinned = "matches murmur.lock"
		}
		fmt.Fprintf(stdout, "ok    %s (%s) installed in the %s store, sha256 %s matches its sidecars, %s\n",
			ref, r.Runtime, r.Store.Kind, r.SHA256[:12], pinned)
	}
	if problems > 0 {
		return diag.New("E-REG-018", "%d problem(s) in %s", problems, mpath).
			WithHint("fix each FAIL above ('mur publish', 'mur install'), then run 'mur doctor' again")
	}
	fmt.Fprintf(stdout, "all %d declared artifact(s) resolve\n", len(m.Artifacts))
	return nil
}
