package contain_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/murmur-go/murmur/internal/contain"
)

// world is one session's files as a contained command would meet them.
type world struct {
	root, work, home, records, runtime, otherRuntime, sibling, outside, tools string
	self, i386                                                                string
	// suid is a setuid-root copy of the attack program ("" when this run
	// cannot make one).
	suid string
}

func newWorld(t *testing.T) *world {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &world{
		root:         root,
		work:         filepath.Join(root, "work"),
		records:      filepath.Join(root, "records"),
		home:         filepath.Join(root, "records", "home"),
		runtime:      filepath.Join(root, "run", "session-a"),
		otherRuntime: filepath.Join(root, "run", "session-b"),
		sibling:      filepath.Join(root, "sibling"),
		outside:      filepath.Join(root, "outside"),
		tools:        filepath.Join(root, "tools"),
	}
	for _, d := range []string{w.work, w.home, w.runtime, w.otherRuntime, w.sibling, w.outside, w.tools} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(w.sibling, "secret"), filepath.Join(w.otherRuntime, "secret"), filepath.Join(w.records, "trace.jsonl")} {
		if err := os.WriteFile(f, []byte("secret"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A copy of a system binary in the work folder: running it needs
	// workdir_exec.
	b, err := os.ReadFile("/usr/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.work, "mytrue"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	// The test binary doubles as the attack program; it is granted like a
	// shell.allow binary outside the system dirs.
	if w.self, err = os.Executable(); err != nil {
		t.Fatal(err)
	}
	w.i386 = buildI386(t, w.tools)
	w.suid = setuidCopy(t, w.self, w.tools)
	return w
}

// suidEnv names a setuid-root copy of the test binary that a root parent
// made for an unprivileged run of this suite (TestUnprivileged).
const suidEnv = "MURMUR_CONTAIN_TEST_SUID"

// setuidCopy makes a setuid-root copy of the attack program, as root; an
// unprivileged run uses the one its root parent made.
func setuidCopy(t testing.TB, self, dir string) string {
	if os.Geteuid() != 0 {
		return os.Getenv(suidEnv)
	}
	dst := filepath.Join(dir, "suid")
	if err := copyFile(self, dst); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dst, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dst, 0o4755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// buildI386 builds a static 32-bit program that calls getpid through
// int 0x80 and exits 0 only if that call was let through.
func buildI386(t *testing.T, dir string) string {
	if runtime.GOARCH != "amd64" {
		return ""
	}
	src := filepath.Join(dir, "i386.c")
	code := `void _start(void){int r;__asm__ volatile("int $0x80":"=a"(r):"a"(20));
int c=(r>0)?0:1;__asm__ volatile("int $0x80"::"a"(1),"b"(c));for(;;)__asm__ volatile("hlt");}`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "i386")
	if b, err := exec.Command("gcc", "-m32", "-static", "-nostdlib", "-O1", "-o", out, src).CombinedOutput(); err != nil {
		t.Logf("i386 entry row skipped: gcc -m32 failed: %v %s", err, b)
		return ""
	}
	// Unconfined it must work, or the row proves nothing.
	if err := exec.Command(out).Run(); err != nil {
		t.Logf("i386 entry row skipped: the 32-bit program does not run unconfined here: %v", err)
		return ""
	}
	return out
}

func (w *world) plan(t testing.TB, class string) *contain.Plan {
	return w.planWith(t, class, contain.Resources{})
}

// tight are the resource caps the fork bomb and the balloon meet: both
// planes (the cgroup caps and the rlimits) well below what they ask for,
// the cgroup caps lower, so that where a cgroup plane holds it is what
// stops them.
var tight = contain.Resources{MaxProcesses: 48, MemoryBytes: 384 << 20, CgroupPidsMax: 48, CgroupMemoryBytes: 96 << 20}

func (w *world) planWith(t testing.TB, class string, res contain.Resources) *contain.Plan {
	tools := []string{w.self}
	for _, x := range []string{w.i386, w.suid} {
		if x != "" {
			tools = append(tools, x)
		}
	}
	p, err := contain.NewPlan(contain.Input{
		Class: class, WorkFolder: w.work, Home: w.home, RuntimeDir: w.runtime, RecordsDir: w.records, Tools: tools,
		Resources: res,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs path under p and returns its exit status and output; a helper
// that failed to set up the plan fails the test, so a refusal is never
// counted for a command that never ran.
func run(t testing.TB, p *contain.Plan, dir string, path string, args ...string) (int, string) {
	return runEnv(t, p, dir, []string{"PATH=/usr/bin:/bin"}, path, args...)
}

func runEnv(t testing.TB, p *contain.Plan, dir string, env []string, path string, args ...string) (int, string) {
	c, err := contain.Command(p, path, args, env, dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err = c.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		t.Fatalf("%s at %s: %v", path, p.Class, err)
	}
	if code == contain.ExitSetup {
		t.Fatalf("%s at %s: the helper failed: %s", path, p.Class, out.String())
	}
	return code, strings.TrimSpace(out.String())
}

var classes = []string{contain.Advisory, contain.Scoped, contain.Sealed}

func requireTier(t *testing.T, class string) {
	if lacks := contain.Probe().Lacks(class); lacks != "" {
		t.Skipf("%s: this host lacks %s", class, lacks)
	}
}

func TestNormalCommands(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the tiers are Linux")
	}
	w := newWorld(t)
	cases := []struct {
		name string
		path string
		args []string
	}{
		{"true", "/bin/true", nil},
		{"ls the work folder", "/bin/ls", []string{"-la", w.work}},
		{"write a file in the work folder", "/bin/sh", []string{"-c", "echo hi > " + w.work + "/made && cat " + w.work + "/made"}},
		{"read /etc/passwd", "/bin/cat", []string{"/etc/passwd"}},
		{"run a binary from /usr/bin", "/usr/bin/id", nil},
		{"write in HOME", "/bin/sh", []string{"-c", "echo hi > \"$HOME/f\""}},
		{"a pipeline", "/bin/sh", []string{"-c", "ls " + w.work + " | grep -c mytrue"}},
		{"read the runtime dir", "/bin/ls", []string{w.runtime}},
		{"read /dev/zero and /dev/urandom, write /dev/null", "/bin/sh", []string{"-c", "head -c 8 /dev/zero > /dev/null && head -c 8 /dev/urandom > /dev/null"}},
		{"a shell.allow tool outside the system dirs", w.self, []string{attackArg, "read", "/etc/passwd"}},
	}
	for _, class := range classes {
		t.Run(class, func(t *testing.T) {
			requireTier(t, class)
			p := w.plan(t, class)
			for _, c := range cases {
				if code, out := run(t, p, w.work, c.path, c.args...); code != 0 {
					t.Errorf("%s: exit %d: %s", c.name, code, out)
				}
			}
		})
	}
}

func TestEscapes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the tiers are Linux")
	}
	w := newWorld(t)
	sib := exec.Command("/bin/sleep", "60")
	if err := sib.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sib.Process.Kill(); sib.Wait() }()
	sibPid := strconv.Itoa(sib.Process.Pid)
	runtimePid := strconv.Itoa(os.Getpid())
	fs := []string{contain.Scoped, contain.Sealed}
	all := classes
	type row struct {
		name    string
		holds   []string // the tiers that claim to stop it
		path    string
		args    []string
		skip    string
		outcome func(code int) bool // true: escaped
		tight   bool                // under the tight resource caps
	}
	escapedIf0 := func(code int) bool { return code == 0 }
	sh := func(s string) (string, []string) { return "/bin/sh", []string{"-c", s} }
	a := func(args ...string) (string, []string) { return w.self, append([]string{attackArg}, args...) }
	mk := func(name string, holds []string, pa func() (string, []string)) row {
		p, args := pa()
		return row{name: name, holds: holds, path: p, args: args, outcome: escapedIf0}
	}
	rows := []row{
		mk("read /etc/shadow", fs, func() (string, []string) { return a("read", "/etc/shadow") }),
		mk("read a sibling dir outside the work folder", fs, func() (string, []string) { return a("read", w.sibling+"/secret") }),
		mk("read another session's runtime dir", fs, func() (string, []string) { return a("read", w.otherRuntime+"/secret") }),
		mk("write outside the work folder", fs, func() (string, []string) { return a("write", w.outside+"/x") }),
		mk("write the records dir (outside HOME)", fs, func() (string, []string) { return a("write", w.records+"/trace.jsonl") }),
		mk("write a system dir", fs, func() (string, []string) { return a("write", "/usr/escaped") }),
		mk("exec from the work folder without workdir_exec", fs, func() (string, []string) { return sh(w.work + "/mytrue") }),
		mk("ptrace a sibling", all, func() (string, []string) { return a("ptrace", sibPid) }),
		mk("open /proc/<runtime>/mem", fs, func() (string, []string) { return a("procmem", runtimePid) }),
		mk("signal the runtime", fs, func() (string, []string) { return a("kill", runtimePid) }),
		mk("raw socket", all, func() (string, []string) { return a("socket", "inet", "raw") }),
		mk("netlink socket", all, func() (string, []string) { return a("socket", "netlink") }),
		mk("packet socket", all, func() (string, []string) { return a("socket", "packet") }),
		mk("unix socket without network.unix_sockets", all, func() (string, []string) { return a("socket", "unix") }),
		mk("unshare -U", all, func() (string, []string) { return sh("unshare -U /bin/true") }),
		mk("unshare -m", all, func() (string, []string) { return sh("unshare -m /bin/true") }),
		mk("mount a tmpfs", all, func() (string, []string) {
			return sh("mkdir -p " + w.work + "/m && mount -t tmpfs none " + w.work + "/m")
		}),
		mk("chroot", all, func() (string, []string) { return sh("chroot / /bin/true") }),
		mk("open /proc/<ppid>/mem (the runtime)", fs, func() (string, []string) { return a("procmem", "ppid") }),
		mk("exec a memfd it wrote (memfd_create + execveat)", fs, func() (string, []string) { return a("memfdexec") }),
	}
	if ldso := dynamicLoader(); ldso != "" {
		rows = append(rows, mk("ld.so <file in the work folder>", fs, func() (string, []string) {
			return sh("cp /bin/true " + w.work + "/ldso-true && " + ldso + " " + w.work + "/ldso-true")
		}))
	} else {
		rows = append(rows, row{name: "ld.so <file in the work folder>", holds: fs, skip: "no dynamic loader found"})
	}
	// The fork bomb asks for 400 processes and the balloon for 1 GiB;
	// tight allows 48 and 96 MiB (cgroups) / 384 MiB (rlimits).
	rows = append(rows,
		row{name: "fork bomb under max_processes", holds: all, tight: true, path: w.self, args: []string{attackArg, "forkbomb", "400"}, outcome: escapedIf0},
		row{name: "memory balloon under the cap", holds: all, tight: true, path: w.self, args: []string{attackArg, "balloon", "1024"}, outcome: escapedIf0},
	)
	if w.suid != "" {
		rows = append(rows, row{name: "a setuid-root binary", holds: all, path: w.suid, args: []string{attackArg, "privs"}, outcome: escapedIf0})
	} else {
		rows = append(rows, row{name: "a setuid-root binary", holds: all, skip: "not root and no setuid copy made by a root parent"})
	}
	if w.i386 != "" {
		rows = append(rows, row{name: "i386 syscall entry (int 0x80)", holds: all, path: w.i386, outcome: escapedIf0})
	} else {
		rows = append(rows, row{name: "i386 syscall entry (int 0x80)", holds: all, skip: "no 32-bit toolchain or no IA32 emulation on this machine"})
	}
	results := map[string]map[string]string{}
	for _, class := range classes {
		if lacks := contain.Probe().Lacks(class); lacks != "" {
			t.Errorf("%s: this host lacks %s (the reference study says this machine kind has every tier)", class, lacks)
			continue
		}
		p := w.plan(t, class)
		pt := w.planWith(t, class, tight)
		for _, r := range rows {
			p := p
			if r.tight {
				p = pt
			}
			if results[r.name] == nil {
				results[r.name] = map[string]string{}
			}
			if r.skip != "" {
				results[r.name][class] = "skipped"
				continue
			}
			code, out := run(t, p, w.work, r.path, r.args...)
			escaped := r.outcome(code)
			holds := contains(r.holds, class)
			switch {
			case escaped && holds:
				results[r.name][class] = "ESCAPED"
				t.Errorf("%s at %s: escaped (%s)", r.name, class, out)
			case escaped:
				results[r.name][class] = "open (not claimed)"
			default:
				results[r.name][class] = "blocked"
			}
			if data, _ := os.ReadFile(w.records + "/trace.jsonl"); string(data) != "secret" && contains(fs, class) {
				t.Errorf("%s at %s: the records dir was written", r.name, class)
			}
			// Anything the command may have left behind on the host.
			os.WriteFile(w.records+"/trace.jsonl", []byte("secret"), 0o644)
			_ = exec.Command("umount", w.work+"/m").Run()
			os.Remove(w.outside + "/x")
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-50s %-20s %-20s %-20s\n", "attack", classes[0], classes[1], classes[2])
	for _, r := range rows {
		fmt.Fprintf(&b, "%-50s %-20s %-20s %-20s\n", r.name, results[r.name][classes[0]], results[r.name][classes[1]], results[r.name][classes[2]])
		if r.skip != "" {
			fmt.Fprintf(&b, "  (skipped: %s)\n", r.skip)
		}
	}
	t.Log(b.String())
}

// dynamicLoader is this machine's ELF interpreter, "" when none is found.
func dynamicLoader() string {
	for _, g := range []string{"/lib64/ld-linux-*.so*", "/lib/ld-linux-*.so*", "/lib/*/ld-linux-*.so*"} {
		if m, _ := filepath.Glob(g); len(m) > 0 {
			return m[0]
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestGrantsOpen checks the refusals above are the plan's doing: the same
// attacks succeed once the manifest grants them.
func TestGrantsOpen(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the tiers are Linux")
	}
	w := newWorld(t)
	for _, class := range classes {
		requireTier(t, class)
		p, err := contain.NewPlan(contain.Input{Class: class, WorkFolder: w.work, Home: w.home, Tools: []string{w.self}, UnixSockets: true})
		if err != nil {
			t.Fatal(err)
		}
		if code, out := run(t, p, w.work, w.self, attackArg, "socket", "unix"); code != 0 {
			t.Errorf("%s with network.unix_sockets: unix socket refused: %s", class, out)
		}
		p, err = contain.NewPlan(contain.Input{Class: class, WorkFolder: w.work, WorkdirExec: true})
		if err != nil {
			t.Fatal(err)
		}
		if p.Class != contain.Advisory {
			t.Errorf("workdir_exec left the class at %s", p.Class)
		}
		if code, out := run(t, p, w.work, w.work+"/mytrue"); code != 0 {
			t.Errorf("%s with workdir_exec: exec from the work folder refused: %s", class, out)
		}
	}
}
