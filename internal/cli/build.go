package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
)

func init() { register(newBuildCmd) }

func newBuildCmd(stdout, stderr io.Writer) *cobra.Command {
	var out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "build [DIR]",
		Short: "Pack an artifact's murmur.yaml and payload into <name>-<version>.mur.zip",
		Long: `Pack the artifact in DIR (default: the current directory) into a .mur.zip:
murmur.yaml, the payload its runtime calls for (one root .wasm component for a
script capsule, tool, driver or hook, capsule.wasm preferred; skill.md for a
skill; nothing for an agent capsule) and every requires_files path.

mur build never compiles: a .wasm is checked by its header only. The zip is
deterministic, so the same inputs give the same sha256. It is written to
<bare-name>-<version>.mur.zip in the current directory, or with -o in the
file it names (or under that name in the directory it names).

With --json it prints one JSON object: name, version, runtime, payload
("" for an agent capsule), path, sha256, files, bytes.`,
		Example: `  mur build                      # the artifact in this directory
  mur build ./echo-tool -o dist/  # dist/echo-1.0.0.mur.zip
  mur build && mur publish        # then put it in the global store`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return runBuild(dir, out, asJSON, stdout, stderr)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the zip to `FILE` (a directory: <bare-name>-<version>.mur.zip in it)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was built as one JSON object")
	return cmd
}

// buildJSON is mur build --json's object.
type buildJSON struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Runtime string `json:"runtime"`
	Payload string `json:"payload"`
	Path    string `json:"path"`
	SHA256  string `json:"sha256"`
	Files   int    `json:"files"`
	Bytes   int    `json:"bytes"`
}

func runBuild(dir, out string, asJSON bool, stdout, stderr io.Writer) error {
	b, err := store.Pack(dir)
	if err != nil {
		// The manifest reader's hint names mur run's --manifest, which
		// mur build does not take.
		var d *diag.Diagnostic
		if errors.As(err, &d) && d.Code == "E-MAN-020" {
			d.WithHint("check that %s is readable, or name the directory holding the artifact's murmur.yaml", filepath.Join(dir, store.ManifestEntry))
		}
		return err
	}
	printManifestWarnings(stderr, b.Manifest)
	if out == "" {
		out = b.FileName
	} else if fi, err := os.Stat(out); err == nil && fi.IsDir() {
		out = filepath.Join(out, b.FileName) // -o DIR: the usual name, there
	}
	if err := store.WriteFileAtomic(out, b.Zip, 0o644); err != nil {
		return diag.Wrap(err, "E-IO-004", "cannot write %s", out).
			WithHint("check the directory exists and is writable, or pass -o FILE")
	}
	abs, _ := filepath.Abs(out)
	runtime := b.Manifest.Runtime.Or(manifest.RuntimeCapsule)
	if asJSON {
		return printJSON(stdout, buildJSON{Name: b.Manifest.Name, Version: b.Manifest.Version, Runtime: runtime,
			Payload: b.Payload, Path: abs, SHA256: b.SHA256, Files: len(b.Files), Bytes: len(b.Zip)})
	}
	payload := b.Payload
	if payload == "" {
		payload = "manifest only"
	}
	fmt.Fprintf(stdout, "%s %s@%s (%s, %s) -> %s\n", paint(stdout, "built"), b.Manifest.Name, b.Manifest.Version, runtime, payload, abs)
	fmt.Fprintf(stdout, "  sha256 %s, %d files, %d bytes\n", b.SHA256, len(b.Files), len(b.Zip))
	return nil
}

// printJSON writes v as one JSON line: a --json command's whole stdout.
func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// printManifestWarnings prints the warnings found while loading a manifest.
// Each warning's message already names its file, line and column.
func printManifestWarnings(w io.Writer, m *manifest.Manifest) {
	for _, x := range m.Warnings {
		fmt.Fprintln(w, x.String())
	}
}
