package e2e_test

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/testbin"
)

// freePort is a loopback port nothing listens on at the moment of return
// (never the daemon's default 7700, which a user's own mur-roost may hold).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

var withRoostPIDRE = regexp.MustCompile(`(?m)^mur-roost \(pid (\d+)\) at (http://127\.0\.0\.1:\d+) for this run`)

// TestWithRoostDelegation: with --with-roost and no MURMUR_ROOST_URL, mur
// run starts the real mur-roost beside it, the orchestrator registers there
// and delegates to its worker, the daemon's start-up lines reach mur run's
// stderr, and once the run has ended the daemon's process is gone and its
// port free again.
func TestWithRoostDelegation(t *testing.T) {
	testbin.Path(t, "./cmd/mur-roost") // built beside mur, where --with-roost looks first
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: exit\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", orchTranscript)
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)

	r := runMur(t, homeDir, orch, nil, "run", "--json", "--with-roost", "--roost-port", strconv.Itoa(port), "--task", "delegate it")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	if got, _ := os.ReadFile(filepath.Join(rd.RecordsDir, "out", "result.txt")); string(got) != "The worker reported back." {
		t.Errorf("result.txt %q; stderr %s", got, r.Stderr)
	}
	lines := traceLines(t, rd.RecordsDir)
	if dl := byType(lines, "delegation"); len(dl) != 1 || dl[0].Str("outcome") != "ok" {
		t.Errorf("delegation lines %v", dl)
	}
	if !strings.Contains(r.Stderr, "mur-roost: listening on "+addr+"\n") {
		t.Errorf("the daemon's listening line is not on mur run's stderr:\n%s", r.Stderr)
	}
	m := withRoostPIDRE.FindStringSubmatch(r.Stderr)
	if m == nil || m[2] != "http://"+addr {
		t.Fatalf("no pid line for the daemon at %s:\n%s", addr, r.Stderr)
	}
	pid, _ := strconv.Atoi(m[1])
	if !gone(pid) {
		t.Errorf("mur-roost (pid %d) still runs after mur run ended", pid)
	}
	if ln, err := net.Listen("tcp", addr); err != nil {
		t.Errorf("port %d still bound after the run: %v", port, err)
	} else {
		ln.Close()
	}
}

// TestWithRoostRefusals: a port already bound is E-RUN-080 and
// MURMUR_ROOST_URL set as well is E-RUN-081, each with the contract's
// words, before any session or daemon exists; --roost-port without
// --with-roost is a usage error.
func TestWithRoostRefusals(t *testing.T) {
	testbin.Path(t, "./cmd/mur-roost")
	homeDir, base := t.TempDir(), t.TempDir()
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", orchTranscript)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	tp := strconv.Itoa(taken.Addr().(*net.TCPAddr).Port)
	free := strconv.Itoa(freePort(t))

	for _, c := range []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"port taken", nil, []string{"--with-roost", "--roost-port", tp}, 1,
			"error[E-RUN-080]: mur-roost cannot listen on 127.0.0.1:" + tp + ": address already in use; a daemon may already run there — use it with MURMUR_ROOST_URL=http://127.0.0.1:" + tp + ", or pick --roost-port"},
		{"both name a daemon", []string{"MURMUR_ROOST_URL=http://127.0.0.1:" + free}, []string{"--with-roost", "--roost-port", free}, 1,
			"error[E-RUN-081]: --with-roost and MURMUR_ROOST_URL both name a daemon; use one"},
		{"port without --with-roost", nil, []string{"--roost-port", free}, 2, "--roost-port and --spawn-allow go with --with-roost"},
		{"spawn-allow without --with-roost", nil, []string{"--spawn-allow", "local/other"}, 2, "--roost-port and --spawn-allow go with --with-roost"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runMur(t, homeDir, orch, c.env, append([]string{"run", "--task", "x"}, c.args...)...)
			if r.Code != c.code || !strings.Contains(r.Stderr, c.want) {
				t.Errorf("exit %d, want %d and %q:\n%s", r.Code, c.code, c.want, r.Stderr)
			}
			if strings.Contains(r.Stderr, "mur-roost: listening") {
				t.Errorf("a daemon was started:\n%s", r.Stderr)
			}
			if s := sessionsUnder(homeDir); len(s) != 0 {
				t.Errorf("sessions exist after a refusal: %v", s)
			}
		})
	}
}

// roostChildOf is the pid of the mur-roost process whose parent is pid.
func roostChildOf(t *testing.T, pid int) int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open || s[open+1:close] != "mur-roost" {
			continue
		}
		f := strings.Fields(s[close+1:]) // state, ppid, …
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			n, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return n
		}
	}
	t.Fatalf("no mur-roost child of pid %d", pid)
	return 0
}

// TestWithRoostSpawnAllowAndKill: --spawn-allow given to mur run reaches
// the daemon (another top-level capsule registers there while the run
// serves), and kill -9 of mur run still ends its daemon (the kernel's
// parent-death signal), leaving the port free.
func TestWithRoostSpawnAllowAndKill(t *testing.T) {
	testbin.Path(t, "./cmd/mur-roost")
	homeDir, base := t.TempDir(), t.TempDir()
	spawner := "capabilities:\n  spawn:\n    allow: [local/worker]\n"
	host := replayCapsule(t, homeDir, filepath.Join(base, "host"), "host", "1.0.0", spawner+"lifecycle:\n  after_task: sleep\n", workerTranscript)
	other := replayCapsule(t, homeDir, filepath.Join(base, "other"), "other", "1.0.0", spawner, workerTranscript)
	port := strconv.Itoa(freePort(t))

	cmd, out, _ := startMurEnv(t, homeDir, host, nil, "run", "--json", "--with-roost", "--roost-port", port,
		"--spawn-allow", "local/other", "--task", "x")
	// A daemon left running holds mur run's stderr open: Wait must not hang on it.
	cmd.WaitDelay = 5 * time.Second
	readReady(t, out)
	pid := roostChildOf(t, cmd.Process.Pid)
	if r := runMur(t, homeDir, other, []string{"MURMUR_ROOST_URL=http://127.0.0.1:" + port}, "run", "--task", "x"); r.Code != 0 {
		t.Errorf("local/other, given with --spawn-allow, did not register: %+v", r)
	}

	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for i := 0; !gone(pid); i++ {
		if i > 600 {
			t.Fatalf("mur-roost (pid %d) outlived its killed mur run by 15 s", pid)
		}
		time.Sleep(25 * time.Millisecond)
	}
	if ln, err := net.Listen("tcp", "127.0.0.1:"+port); err != nil {
		t.Errorf("port %s still bound: %v", port, err)
	} else {
		ln.Close()
	}
}
