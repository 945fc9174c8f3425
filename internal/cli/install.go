package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
)

func init() { register(newInstallCmd) }

func newInstallCmd(stdout, stderr io.Writer) *cobra.Command {
	var global, force, asJSON, noPrecompile bool
	cmd := &cobra.Command{
		Use:   "install [REF]",
		Short: "Install artifacts into the project store (or the global one with -g)",
		Long: `Install REF, a .mur.zip path or <scope>/<name>@<version> from the global
store, into the project store (-g: the global store).

Without REF, install every artifact the project's murmur.yaml declares from the
global store into the project store and pin them in murmur.lock; from then on
every resolve checks the lock. The lock is written only when every artifact
installed, so a failed install keeps the previous one.

With --json, REF's install prints one JSON object (name, version, runtime,
sha256, store, path, unchanged); the project's install prints one report,
failures included: {"artifacts":[…],"lock":FILE,"pinned":N,"problems":N,"ok":BOOL},
each artifact {"name","version","ok"} with runtime and sha256, or with error.

REF's component is then compiled into the compile cache, as its first run
would (--no-precompile: not), as mur publish does.`,
		Example: `  mur install                        # every declared artifact, pinned in murmur.lock
  mur install acme/echo@1.0.0        # one artifact from the global store
  mur install ./echo-1.0.0.mur.zip   # a zip, into the project store
  mur install -g ./echo-1.0.0.mur.zip`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				if global {
					return usageError{fmt.Errorf("mur install -g needs a REF: installing a project's artifacts pins them in its own store")}
				}
				return runInstallProject(force, asJSON, stdout, stderr)
			}
			return runInstallRef(args[0], global, force, asJSON, stdout, stderr, !noPrecompile)
		},
	}
	cmd.Flags().BoolVarP(&global, "global", "g", false, "install into the global store")
	cmd.Flags().BoolVar(&force, "force", false, "replace an installed version whose bytes differ")
	cmd.Flags().BoolVar(&noPrecompile, "no-precompile", false, "do not compile REF's component into the compile cache")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was installed as one JSON object")
	return cmd
}

// isZipRef reports whether REF names a file rather than name@version.
func isZipRef(ref string) bool {
	if strings.HasSuffix(ref, ".zip") {
		return true
	}
	fi, err := os.Stat(ref)
	return err == nil && fi.Mode().IsRegular()
}

func runInstallRef(ref string, global, force, asJSON bool, stdout, stderr io.Writer, precompileIt bool) error {
	homeDir, err := home.Dir()
	if err != nil {
		return err
	}
	g := store.Global(homeDir)
	target := g
	if !global {
		proj, err := storeProjectDirG()
		if err != nil {
			return err
		}
		target = store.Project(proj)
	}
	var data []byte
	if isZipRef(ref) {
		if data, err = readZip(ref); err != nil {
			return err
		}
	} else {
		name, version, ok := strings.Cut(ref, "@")
		if !ok || name == "" || version == "" {
			return diag.New("E-REG-014", "%q is neither a .mur.zip path nor <scope>/<name>@<version>", ref).
				WithHint("e.g. mur install acme/lint@1.0.0, or mur install ./lint-1.0.0.mur.zip")
		}
		src, err := g.Resolve(name, version, manifest.Options{SkipSecrets: true})
		if err != nil {
			return err
		}
		if target == g {
			if asJSON {
				return printJSON(stdout, storedJSON{Name: src.Name, Version: src.Version, Runtime: src.Runtime, SHA256: src.SHA256,
					Store: g.Kind, Path: filepath.Dir(src.ZipPath), Unchanged: true})
			}
			fmt.Fprintf(stdout, "%s@%s is already in the global store (sha256 %s)\n", src.Name, src.Version, src.SHA256)
			return nil
		}
		if data, err = src.Archive.ReadBytes(); err != nil {
			return err
		}
	}
	r, err := target.Publish(data, force)
	if err != nil {
		return err
	}
	if precompileIt {
		precompile(homeDir, target, r.Name, r.Version, stderr)
	}
	if asJSON {
		return printJSON(stdout, storedJSON{Name: r.Name, Version: r.Version, Runtime: r.Runtime, SHA256: r.SHA256,
			Store: target.Kind, Path: filepath.Dir(r.ZipPath), Unchanged: r.Unchanged})
	}
	verb := paint(stdout, "installed")
	if r.Unchanged {
		verb = "already installed (same bytes)"
	}
	fmt.Fprintf(stdout, "%s %s@%s (%s) sha256 %s in the %s store\n  -> %s\n", verb, r.Name, r.Version, r.Runtime, r.SHA256, target.Kind, filepath.Dir(r.ZipPath))
	return nil
}

// installReport is mur install --json's report for a project's install.
type installReport struct {
	Artifacts []installedJSON `json:"artifacts"`
	Lock      string          `json:"lock"`
	Pinned    int             `json:"pinned"`
	Problems  int             `json:"problems"`
	OK        bool            `json:"ok"`
}

type installedJSON struct {
	Name    string         `json:"name"`
	Version string         `json:"version"`
	OK      bool           `json:"ok"`
	Runtime string         `json:"runtime,omitempty"`
	SHA256  string         `json:"sha256,omitempty"`
	Error   *jsonErrorBody `json:"error,omitempty"`
}

func runInstallProject(force, asJSON bool, stdout, stderr io.Writer) error {
	homeDir, err := home.Dir()
	if err != nil {
		return err
	}
	proj, err := storeProjectDir()
	if err != nil {
		return err
	}
	m, err := manifest.Load(filepath.Join(proj, store.ManifestEntry), manifest.Options{SkipSecrets: true})
	if err != nil {
		return err
	}
	printManifestWarnings(stderr, m)
	g, p := store.Global(homeDir), store.Project(proj)
	opts := manifest.Options{SkipSecrets: true}
	lock := &store.Lock{Version: store.LockVersion}
	failed := 0
	rep := installReport{Artifacts: []installedJSON{}, Lock: filepath.Join(proj, store.LockFile)}
	text := stdout // the checklist; with --json, the report replaces it
	if asJSON {
		text = io.Discard
	}
	for _, a := range m.Artifacts {
		if a.IsMCP() {
			continue // declared in place: not stored, never locked
		}
		src, err := g.Resolve(a.Name, a.Version, opts)
		if store.IsNotFound(err) {
			// Already in the project store (installed from a zip) is as good.
			if r, perr := p.Resolve(a.Name, a.Version, opts); perr == nil {
				src, err = r, nil
			}
		}
		if err == nil && src.Store != p {
			var data []byte
			if data, err = src.Archive.ReadBytes(); err == nil {
				src, err = p.Publish(data, force)
			}
		}
		if err != nil {
			failed++
			body := errorBody(err, "E-REG-019")
			rep.Artifacts = append(rep.Artifacts, installedJSON{Name: a.Name, Version: a.Version, Error: &body})
			fmt.Fprintf(text, "%s  %s@%s\n", paint(text, "FAIL"), a.Name, a.Version)
			diag.Print(stderr, err, "E-REG-019")
			continue
		}
		rep.Artifacts = append(rep.Artifacts, installedJSON{Name: src.Name, Version: src.Version, OK: true, Runtime: src.Runtime, SHA256: src.SHA256})
		fmt.Fprintf(text, "%s    %s@%s (%s) sha256 %s\n", paint(text, "ok"), src.Name, src.Version, src.Runtime, src.SHA256[:12])
		lock.Artifacts = append(lock.Artifacts, store.LockEntry{Name: src.Name, Version: src.Version, SHA256: src.SHA256})
	}
	if failed > 0 {
		if asJSON {
			rep.Problems = failed
			if err := printJSON(stdout, rep); err != nil {
				return err
			}
		}
		return diag.New("E-REG-019", "%d of %d declared artifacts could not be installed; murmur.lock was not changed", failed, len(m.Artifacts)).
			WithHint("publish the missing artifacts to the global store ('mur publish') and run 'mur install' again")
	}
	if err := store.WriteLock(proj, lock); err != nil {
		return err
	}
	if asJSON {
		rep.Pinned, rep.OK = len(lock.Artifacts), true
		return printJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "%s %d artifact(s) in %s\n", paint(stdout, "pinned"), len(lock.Artifacts), filepath.Join(proj, store.LockFile))
	return nil
}
