package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/launch"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
)

func init() { register(newPublishCmd) }

func newPublishCmd(stdout, stderr io.Writer) *cobra.Command {
	var force, asJSON, noPrecompile bool
	cmd := &cobra.Command{
		Use:   "publish [ZIP]",
		Short: "Publish a .mur.zip into the global store ($HOME/.murmur/artifacts)",
		Long: `Publish ZIP (default: the zip 'mur build' would write in the current
directory) into the global store, as <scope>/<name>/<version>/ with its .sha256
and .meta.json sidecars; a bare name is published as local/<name>. The same
version with the same bytes is a no-op; with other bytes it is refused unless
--force.

With --json it prints one JSON object: name, version, runtime, sha256, store
("global"), path (the version's directory) and unchanged (true when the same
bytes were already there).

The artifact's component (a script capsule's, a tool's, a hook's or a stored
driver's) is then compiled into the compile cache, as its first run would,
so that run starts warm; --no-precompile skips it, and mur doctor says which
installed components are not compiled yet. A component that does not compile
is still published, with a warning (W-REG-002).`,
		Example: `  mur publish                          # the zip 'mur build' wrote here
  mur publish dist/echo-1.0.0.mur.zip
  mur publish --force                  # replace 1.0.0 rebuilt with other bytes`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			zip := ""
			if len(args) == 1 {
				zip = args[0]
			}
			if err := runPublish(zip, force, asJSON, stdout, stderr, !noPrecompile); err != nil {
				return err
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace the same version even when its bytes differ")
	cmd.Flags().BoolVar(&noPrecompile, "no-precompile", false, "do not compile the component into the compile cache")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was published as one JSON object")
	return cmd
}

// storedJSON is what mur publish --json and mur install REF --json print:
// one artifact put in a store.
type storedJSON struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Runtime   string `json:"runtime"`
	SHA256    string `json:"sha256"`
	Store     string `json:"store"`
	Path      string `json:"path"`
	Unchanged bool   `json:"unchanged"`
}

func runPublish(zipPath string, force, asJSON bool, stdout, stderr io.Writer, precompileIt bool) error {
	homeDir, err := home.Dir()
	if err != nil {
		return err
	}
	if zipPath == "" {
		if zipPath, err = defaultZip(); err != nil {
			return err
		}
	}
	data, err := readZip(zipPath)
	if err != nil {
		return err
	}
	global := store.Global(homeDir)
	r, err := global.Publish(data, force)
	if err != nil {
		return err
	}
	if precompileIt {
		precompile(homeDir, global, r.Name, r.Version, stderr)
	}
	if asJSON {
		return printJSON(stdout, storedJSON{Name: r.Name, Version: r.Version, Runtime: r.Runtime, SHA256: r.SHA256,
			Store: store.KindGlobal, Path: filepath.Dir(r.ZipPath), Unchanged: r.Unchanged})
	}
	verb := paint(stdout, "published")
	if r.Unchanged {
		verb = "already published (same bytes)"
	}
	fmt.Fprintf(stdout, "%s %s@%s (%s) sha256 %s\n  -> %s\n", verb, r.Name, r.Version, r.Runtime, r.SHA256, filepath.Dir(r.ZipPath))
	return nil
}

// defaultZip is the zip 'mur build' would write in the current directory.
func defaultZip() (string, error) {
	if _, err := os.Stat(store.ManifestEntry); err != nil {
		return "", diag.New("E-REG-015", "no ZIP given and no murmur.yaml in the current directory").
			WithHint("name the .mur.zip to publish, or run 'mur build' and 'mur publish' in the artifact's directory")
	}
	m, err := manifest.Load(store.ManifestEntry, manifest.Options{SkipSecrets: true})
	if err != nil {
		return "", err
	}
	return store.ZipFileName(m), nil
}

func readZip(p string) ([]byte, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, diag.Wrap(err, "E-IO-001", "cannot read %s", p).
			WithHint("build it first with 'mur build'")
	}
	if err != nil {
		return nil, diag.Wrap(err, "E-IO-001", "cannot read %s", p)
	}
	return data, nil
}

// storeProjectDir is the project of the current directory (docs/stores.md),
// for a command that has no -g.
func storeProjectDir() (string, error) {
	return storeProjectDirHint("run it inside a project: a directory holding murmur.yaml, or one below it")
}

// storeProjectDirG is storeProjectDir for a command whose -g uses the global
// store instead.
func storeProjectDirG() (string, error) {
	return storeProjectDirHint("run it inside a project, or use the global store with -g")
}

func storeProjectDirHint(hint string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", diag.Wrap(err, "E-IO-005", "cannot read the current directory")
	}
	d, ok := store.FindProject(wd)
	if !ok {
		return "", diag.New("E-REG-017", "no murmur.yaml in %s or any directory above it: not inside a project", wd).
			WithHint("%s", hint)
	}
	return d, nil
}

// precompile compiles name@version's component from st into the compile
// cache (launch.Precompile), saying so on a terminal; a component that does
// not compile is only warned about: it is stored, and its run says why.
func precompile(homeDir string, st *store.Store, name, version string, stderr io.Writer) {
	r, err := st.Resolve(name, version, manifest.Options{SkipSecrets: true})
	if err == nil {
		_, err = launch.Precompile(homeDir, r, func(ref string) {
			if isTerminal(stderr) {
				fmt.Fprintf(stderr, "compiling %s for its first run…\n", ref)
			}
		})
	}
	if err != nil {
		fmt.Fprintln(stderr, diag.Warn("W-REG-002", "%s@%s is stored, but its component could not be compiled ahead of its first run: %v", name, version, err).String())
	}
}
