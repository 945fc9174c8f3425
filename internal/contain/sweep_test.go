package contain_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/contain"
)

// The cgroups of a runtime that died without removing them (kill -9) are
// swept, with whatever still runs in them; a live runtime's are left alone
// (issue 22 item 14).
func TestSweepStaleCgroups(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("cgroups are Linux")
	}
	bases := contain.CgroupBases()
	if len(bases) == 0 {
		t.Skip("no cgroup this process may make children in")
	}
	// A pid that ran and is gone.
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("murmur-%d-1", dead.Process.Pid)
	live := fmt.Sprintf("murmur-%d-999999", os.Getpid())
	for _, b := range bases {
		for _, n := range []string{stale, live} {
			if err := os.Mkdir(filepath.Join(b, n), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer func() {
		for _, b := range bases {
			os.Remove(filepath.Join(b, live))
			os.Remove(filepath.Join(b, stale))
		}
	}()
	// Something the dead runtime left running in its cgroup.
	left := exec.Command("/bin/sleep", "60")
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- left.Wait() }()
	if err := os.WriteFile(filepath.Join(bases[0], stale, "cgroup.procs"), []byte(strconv.Itoa(left.Process.Pid)), 0); err != nil {
		left.Process.Kill()
		t.Fatal(err)
	}
	if n := contain.SweepStaleCgroups(); n < 1 {
		t.Errorf("swept %d cgroups, want the stale one", n)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		left.Process.Kill()
		t.Fatal("the process left in the stale cgroup was not killed")
	}
	for _, b := range bases {
		if _, err := os.Stat(filepath.Join(b, stale)); !os.IsNotExist(err) {
			t.Errorf("%s/%s is still there: %v", b, stale, err)
		}
		if _, err := os.Stat(filepath.Join(b, live)); err != nil {
			t.Errorf("the live runtime's %s/%s was swept: %v", b, live, err)
		}
	}
}
