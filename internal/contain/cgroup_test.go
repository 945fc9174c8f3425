//go:build linux

package contain_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/command"
	"github.com/murmur-go/murmur/internal/contain"
)

// TestResourcePlane: where a cgroup plane holds, it is what stops the fork
// bomb and the balloon (the rlimits are set far above them here), and each
// command's cgroups are gone once it has ended.
func TestResourcePlane(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("cgroups are Linux")
	}
	plane, blocker := contain.ResourcePlane()
	t.Logf("resource plane: %s %s", plane, blocker)
	if plane == contain.PlaneRlimits {
		if os.Geteuid() == 0 {
			t.Fatalf("root on this machine kind has cgroup v1 (the reference study), but: %s", blocker)
		}
		t.Skipf("no cgroup plane for this user: %s", blocker)
	}
	w := newWorld(t)
	loose := contain.Resources{MemoryBytes: 64 << 30, CgroupPidsMax: 48, CgroupMemoryBytes: 96 << 20}
	before := cgroupDirs(t)
	for _, class := range classes {
		requireTier(t, class)
		p := w.planWith(t, class, loose)
		code, out := run(t, p, w.work, w.self, attackArg, "balloon", "1024")
		if code != 128+9 {
			t.Errorf("%s: balloon: exit %d (%s), want SIGKILL by the cgroup's OOM killer", class, code, out)
		}
		code, out = run(t, p, w.work, w.self, attackArg, "forkbomb", "400")
		if code == 0 || !strings.Contains(strings.ToLower(out), "fork") {
			t.Errorf("%s: fork bomb: exit %d (%s), want a refused fork", class, code, out)
		}
	}
	if after := cgroupDirs(t); after != before {
		t.Errorf("cgroups left behind: %d before, %d after", before, after)
	}
}

func cgroupDirs(t *testing.T) int {
	n := 0
	_ = filepath.WalkDir("/sys/fs/cgroup", func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), "murmur-") {
			n++
		}
		return nil
	})
	return n
}

// TestKillEscapers: a command that leaves its process group (setsid) and
// closes its descriptors is still ended with the command, at every tier —
// by its cgroups, or by a PID namespace where there are none.
func TestKillEscapers(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the tiers are Linux")
	}
	w := newWorld(t)
	spec := func(marker string) command.Spec {
		return command.Spec{Path: "/bin/sh", Args: []string{"-c", "setsid sleep " + marker + " </dev/null >/dev/null 2>&1 & sleep 0.3; exec >&- 2>&-"},
			Env: []string{"PATH=/usr/bin:/bin"}, Dir: w.work, Limit: 1 << 10}
	}
	// Uncontained, the process group kill misses it: the check sees an
	// escape when there is one.
	if _, err := command.Run(context.Background(), spec("60.25")); err != nil {
		t.Fatal(err)
	}
	if pid := findSleep("60.25"); pid == "" {
		t.Fatal("uncontained, the setsid'd sleep was not found: the check cannot see an escape")
	} else {
		_ = killPid(pid)
	}
	for i, class := range classes {
		requireTier(t, class)
		p := w.plan(t, class)
		marker := "6" + strings.Repeat("1", i+1) + ".5"
		s := spec(marker)
		s.Wrap = contain.Wrap(p)
		r, err := command.Run(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if r.ExitCode != 0 {
			t.Fatalf("%s: exit %d: %s", class, r.ExitCode, r.Stderr)
		}
		if pid := findSleep(marker); pid != "" {
			t.Errorf("%s: the setsid'd sleep %s (pid %s) outlived its command", class, marker, pid)
			_ = killPid(pid)
		} else {
			t.Logf("%s: blocked (the setsid'd descendant ended with the command)", class)
		}
	}
}

func findSleep(marker string) string {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if strings.Contains(string(b), "sleep\x00"+marker) {
			if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && strings.Contains(string(st), ") Z ") {
				continue // a zombie is ended
			}
			return e.Name()
		}
	}
	return ""
}
