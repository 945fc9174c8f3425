package cli

import (
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
file it names (or under that name in the directory it names).`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return runBuild(dir, out, stdout, stderr)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the zip to `FILE` (a directory: <bare-name>-<version>.mur.zip in it)")
	return cmd
}

func runBuild(dir, out string, stdout, stderr io.Writer) error {
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
	payload := b.Payload
	if payload == "" {
		payload = "manifest only"
	}
	fmt.Fprintf(stdout, "built %s@%s (%s, %s) -> %s\n", b.Manifest.Name, b.Manifest.Version,
		b.Manifest.Runtime.Or(manifest.RuntimeCapsule), payload, abs)
	fmt.Fprintf(stdout, "  sha256 %s, %d files, %d bytes\n", b.SHA256, len(b.Files), len(b.Zip))
	return nil
}

// printManifestWarnings prints the warnings found while loading a manifest.
// Each warning's message already names its file, line and column.
func printManifestWarnings(w io.Writer, m *manifest.Manifest) {
	for _, x := range m.Warnings {
		fmt.Fprintln(w, x.String())
	}
}
