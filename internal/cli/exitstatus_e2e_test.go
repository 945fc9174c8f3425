package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// exitProbe is a Go script capsule that calls os.Exit with the number its
// task holds.
const exitProbe = `//go:build wasip1

package main

import (
	"os"
	"strconv"
	"strings"

	"github.com/murmur-go/murmur/guest"
)

func init() { guest.Capsule(run) }

func main() {}

func run() error {
	task, err := guest.ReadTask()
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimSpace(task))
	if err != nil {
		return err
	}
	os.Exit(n)
	return nil
}
`

// What docs/guest-kit.md ("How a run ends") says of os.Exit(n): WASI 0.2's
// wasi:cli/exit carries ok or err only, so 0 is a normal exit and any other
// status reaches the host as 1, whatever n was.
func TestGoGuestOSExitStatus(t *testing.T) {
	if _, err := os.Stat(filepath.Join(repoRoot(), "node_modules", "@bytecodealliance", "jco")); err != nil {
		t.Skip("the pinned jco is not installed (npm ci): cannot build a component here")
	}
	proj := t.TempDir()
	files := map[string]string{
		"go.mod":      "module example.com/exitprobe\n\ngo 1.26.8\n\nrequire github.com/murmur-go/murmur v0.0.0\n\nreplace github.com/murmur-go/murmur => " + repoRoot() + "\n",
		"main.go":     exitProbe,
		"murmur.yaml": "name: exitprobe\nversion: \"0.1.0\"\ndescription: exits with the status its task names\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(proj, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command(filepath.Join(repoRoot(), "scripts", "build-component.sh"), ".", "capsule", "exitprobe.wasm")
	build.Dir = proj
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the probe: %v\n%s", err, out)
	}
	home := t.TempDir()
	for _, tc := range []struct {
		status string
		code   int
		ending string
	}{
		{"0", 0, ": ok"},
		{"1", 1, ": failed"},
		{"3", 1, ": failed"},
		{"42", 1, ": failed"},
	} {
		t.Run("os.Exit("+tc.status+")", func(t *testing.T) {
			r := runMur(t, home, proj, nil, "run", "--task", tc.status, "--workdir", filepath.Join(t.TempDir(), "w"))
			if r.Code != tc.code || !strings.Contains(r.Stderr, tc.ending) {
				t.Fatalf("want exit %d and %q: %+v", tc.code, tc.ending, r)
			}
			if tc.code != 0 && !strings.Contains(r.Stderr, "guest exited with status 1") {
				t.Fatalf("os.Exit(%s) should reach the host as status 1: %+v", tc.status, r)
			}
		})
	}
}
