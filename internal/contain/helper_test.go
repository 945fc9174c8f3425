//go:build linux

package contain_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/testbin"
)

// mur-contain beside the executable is used only when it answers with the
// running build's stamp: a helper from another build (here a stand-in
// answering another protocol) is passed over.
func TestFindHelper(t *testing.T) {
	build := func(dir string, args ...string) {
		c := exec.Command("go", append(append([]string{"build"}, args...), "-o", filepath.Join(dir, contain.HelperName), "./cmd/mur-contain")...)
		c.Dir = testbin.Root()
		c.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("building mur-contain: %v\n%s", err, out)
		}
	}
	same, other := t.TempDir(), t.TempDir()
	build(same, "-buildvcs=false") // "protocol N devel", as this test binary
	stale := "#!/bin/sh\necho 'mur-contain protocol 0 0123abc'\n"
	if err := os.WriteFile(filepath.Join(other, contain.HelperName), []byte(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	exe := func(dir string) string { return filepath.Join(dir, "mur") }
	if got := contain.FindHelper(exe(same)); got != filepath.Join(same, contain.HelperName) {
		out, _ := exec.Command(filepath.Join(same, contain.HelperName), "--version").Output()
		t.Errorf("a helper of the same stamp was not used: got %q (it says %q, this build is %q)", got, strings.TrimSpace(string(out)), contain.HelperStamp())
	}
	if got := contain.FindHelper(exe(t.TempDir())); got != "" {
		t.Errorf("no helper beside mur, yet %q", got)
	}
	if got := contain.FindHelper(exe(other)); got != "" {
		t.Errorf("a helper of another stamp was used: %q", got)
	}
}
