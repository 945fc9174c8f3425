package contain_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/contain"
)

// Bad input a plan refuses: it is never granted.
func TestPlanRefusals(t *testing.T) {
	w := newWorld(t)
	link := filepath.Join(w.work, "scope")
	if err := os.Symlink(w.outside, link); err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(w.work, "inner")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		in   contain.Input
		want string // "" : accepted
	}{
		{"a filesystem.scope that is a symlink out of the work folder",
			contain.Input{Class: contain.Scoped, WorkFolder: link, Within: w.work}, "outside the work folder"},
		{"a filesystem.scope inside the work folder",
			contain.Input{Class: contain.Scoped, WorkFolder: inner, Within: w.work}, ""},
		{"a shell.allow binary under the work folder",
			contain.Input{Class: contain.Scoped, WorkFolder: w.work, Tools: []string{filepath.Join(w.work, "mytrue")}}, "needs filesystem.workdir_exec"},
		{"a shell.allow binary under the work folder a scope narrows",
			contain.Input{Class: contain.Scoped, WorkFolder: inner, Within: w.work, Tools: []string{filepath.Join(w.work, "mytrue")}}, "needs filesystem.workdir_exec"},
		{"a shell.allow binary under the work folder, with workdir_exec",
			contain.Input{Class: contain.Scoped, WorkFolder: w.work, WorkdirExec: true, Tools: []string{filepath.Join(w.work, "mytrue")}}, ""},
		{"an install dir outside the work folder", contain.Input{Class: contain.Scoped, WorkFolder: inner, Within: w.work, InstallDirs: []string{w.outside}}, ""},
		{"an install dir inside the work folder", contain.Input{Class: contain.Scoped, WorkFolder: w.work, InstallDirs: []string{inner}}, "overlaps"},
		{"an install dir holding the work folder", contain.Input{Class: contain.Scoped, WorkFolder: inner, InstallDirs: []string{w.work}}, "overlaps"},
		{"a relative install dir", contain.Input{Class: contain.Scoped, WorkFolder: w.work, InstallDirs: []string{"opt"}}, "not an absolute path"},
		{"a relative work folder", contain.Input{Class: contain.Scoped, WorkFolder: "work"}, "not an absolute path"},
		{"an unknown class", contain.Input{Class: "strict", WorkFolder: w.work}, "want advisory, scoped or sealed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := contain.NewPlan(c.in)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want a refusal saying %q", err, c.want)
			}
		})
	}
}

// TestTmpfsWorkFolder: Landlock holds on a tmpfs work folder as on the
// root filesystem (Landlock is path-based, so tmpfs is supported): writes
// inside work, writes beside it are refused.
func TestTmpfsWorkFolder(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the tiers are Linux")
	}
	base := ""
	if os.Geteuid() == 0 {
		base = t.TempDir()
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", base).CombinedOutput(); err != nil {
			t.Skipf("mount refused (%v: %s)", err, out)
		}
		defer exec.Command("umount", base).Run()
	} else if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		var err error
		if base, err = os.MkdirTemp("/dev/shm", "contain-"); err != nil {
			t.Skipf("/dev/shm: %v", err)
		}
		defer os.RemoveAll(base)
	} else {
		t.Skip("no tmpfs to put a work folder on")
	}
	work, beside := filepath.Join(base, "work"), filepath.Join(base, "beside")
	for _, d := range []string{work, beside} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	self, _ := os.Executable()
	for _, class := range []string{contain.Scoped, contain.Sealed} {
		requireTier(t, class)
		p, err := contain.NewPlan(contain.Input{Class: class, WorkFolder: work, Tools: []string{self}})
		if err != nil {
			t.Fatal(err)
		}
		if code, out := run(t, p, work, self, attackArg, "write", filepath.Join(work, "in")); code != 0 {
			t.Errorf("%s on tmpfs: a write in the work folder refused: %s", class, out)
		}
		if code, out := run(t, p, work, self, attackArg, "write", filepath.Join(beside, "out")); code == 0 {
			t.Errorf("%s on tmpfs: a write beside the work folder escaped: %s", class, out)
		}
	}
}

// An install dir is in a plan's view read and execute, never write.
func TestPlanInstallDirs(t *testing.T) {
	w := newWorld(t)
	p, err := contain.NewPlan(contain.Input{Class: contain.Sealed, WorkFolder: w.work, InstallDirs: []string{w.outside}})
	if err != nil {
		t.Fatal(err)
	}
	for _, pa := range p.Paths {
		if pa.Path == w.outside {
			if !pa.Exec || pa.Write || !pa.Dir {
				t.Fatalf("install dir %+v", pa)
			}
			return
		}
	}
	t.Fatalf("the install dir is not in the view: %+v", p.Paths)
}
