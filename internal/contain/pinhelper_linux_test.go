package contain

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/murmur-go/murmur/internal/command"
)

// PinHelper only opens mur-contain: its stamp is asked (a process started)
// when the first command needs the helper, so a run with no native command
// starts none (issue 31). The helper then run is the file pinned at start,
// whatever is at its path by then.
func TestPinHelperStartsNoProcess(t *testing.T) {
	saved := []any{helperPath, helperOpened, helperPinned, executable}
	t.Cleanup(func() {
		helperOnce, verifyOnce = sync.Once{}, sync.Once{}
		helperPath = saved[0].(string)
		helperOpened = saved[1].(*command.Pinned)
		helperPinned = saved[2].(*command.Pinned)
		executable = saved[3].(func() (string, error))
	})
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	// The stand-in is this test binary (a script cannot be run by its
	// pinned descriptor): with StampLogEnv set it answers --version as
	// mur-contain and records each time it is asked.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, HelperName), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(StampLogEnv, ran)
	helperOnce, verifyOnce = sync.Once{}, sync.Once{}
	helperPath, helperOpened, helperPinned = "", nil, nil
	executable = func() (string, error) { return filepath.Join(dir, "mur"), nil }

	PinHelper()
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("PinHelper started mur-contain")
	}
	// Replaced on disk after the pin: the pinned file is still the one run.
	if err := os.Rename(filepath.Join(dir, HelperName), filepath.Join(dir, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, HelperName), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := helper()
	if !strings.HasPrefix(got, "/proc/self/fd/") {
		t.Fatalf("helper() = %q, want the pinned mur-contain", got)
	}
	helper()
	out, err := os.ReadFile(ran)
	if err != nil || string(out) != "run\n" {
		t.Fatalf("mur-contain asked its stamp %q times (%v), want once", out, err)
	}
}
