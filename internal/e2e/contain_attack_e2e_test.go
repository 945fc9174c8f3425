package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/murmur-go/murmur/internal/e2e"
	"github.com/murmur-go/murmur/internal/testbin"
	"github.com/murmur-go/murmur/internal/trace"
)

var tiers = []string{"advisory", "scoped", "sealed"}

// shellAgent is an agent capsule whose model makes one call to the shell
// tool binary with command, at containment tier, with extra capabilities.
func shellAgent(t *testing.T, homeDir, base, tier, binary, command, extra string) string {
	t.Helper()
	transcript := fmt.Sprintf(`version: 1
responses:
  - content:
      - {type: tool_call, id: call_sh, name: %s, input: {command: %q}}
  - content:
      - {type: text, text: "done"}
`, binary, command)
	caps := "capabilities:\n  containment: " + tier + "\n  shell:\n    allow: [" + binary + "]\n" + extra
	return agentProject(t, homeDir, base, caps, transcript)
}

// skipUnlessTier skips a tier this host cannot deliver (mur refuses it with
// E-CAP-003, which --explain-scope shows without running anything).
func skipUnlessTier(t *testing.T, homeDir, proj string) {
	t.Helper()
	r := runMur(t, homeDir, proj, nil, "run", "--explain-scope")
	if strings.Contains(r.Stdout, "floor met: no") {
		t.Skipf("this host cannot deliver the tier:\n%s", r.Stdout)
	}
}

// shellLine is the run's one shell trace line and its log.
func shellLine(t *testing.T, recordsDir string) (trace.Line, string) {
	t.Helper()
	sh := lastOf(traceLines(t, recordsDir), "shell")
	if sh == nil {
		t.Fatalf("no shell line in %s", recordsDir)
	}
	log, err := os.ReadFile(sh.Str("log_path"))
	if err != nil {
		t.Fatal(err)
	}
	return *sh, string(log)
}

// A contained command never reaches the operator's terminal (issue 22 item
// 1). mur runs with a pty the test holds as its controlling terminal; the
// capsule's shell tool (testdata/ttyinject) opens /dev/tty, its descriptors
// and every /dev/pts node it can name, and pushes "echo <marker>\n" with
// TIOCSTI (also with the request's upper bits set, which the kernel ignores).
// At every tier nothing reaches the terminal's input queue, and nothing is
// echoed on the master. The command's own account of each attempt is logged
// (go test -v) as the transcript.
func TestContainedCommandCannotTypeIntoTheTerminal(t *testing.T) {
	binDir := t.TempDir()
	testbin.Plain(t, "./internal/e2e/testdata/ttyinject", binDir)
	for _, tier := range tiers {
		t.Run(tier, func(t *testing.T) {
			homeDir, base := t.TempDir(), t.TempDir()
			marker := "MURMUR_INJECTED_" + strings.ToUpper(tier)
			proj := shellAgent(t, homeDir, base, tier, "ttyinject", marker, "")
			skipUnlessTier(t, homeDir, proj)

			master, slave := openPTY(t)
			defer master.Close()
			defer slave.Close()
			// Non-canonical, echo on: TIOCINQ then counts every byte in the
			// input queue, and an injected byte is echoed to the master.
			tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
			if err != nil {
				t.Fatal(err)
			}
			tio.Lflag &^= unix.ICANON
			if err := unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, tio); err != nil {
				t.Fatal(err)
			}
			shareCompileCache(t, homeDir)
			ctx, cancel := context.WithTimeout(context.Background(), murTimeout)
			defer cancel()
			cmd := e2e.CommandContext(ctx, t, murBin(t), homeDir, proj, []string{"PATH=" + binDir + ":" + os.Getenv("PATH")}, "run", "--json", "--task", "go")
			var stdout bytes.Buffer
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, &stdout, slave
			// mur leads a session whose controlling terminal is the pty,
			// as a run from the operator's shell is.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			// The master is read by poll(2) and raw reads: an os.File of a
			// pty master is not in Go's poller, so a read deadline would not
			// end a blocked read.
			mfd := int(master.Fd())
			var screen bytes.Buffer
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				buf := make([]byte, 4096)
				for {
					fds := []unix.PollFd{{Fd: int32(mfd), Events: unix.POLLIN}}
					if n, _ := unix.Poll(fds, 100); n > 0 && fds[0].Revents&unix.POLLIN != 0 {
						if k, _ := unix.Read(mfd, buf); k > 0 {
							screen.Write(buf[:k])
							continue
						}
					}
					select {
					case <-stop:
						return
					default:
					}
				}
			}()
			runErr := cmd.Run()
			// What the command echoed has reached the master by now; the
			// reader drains it before it stops.
			time.Sleep(300 * time.Millisecond)
			close(stop)
			<-done
			if runErr != nil {
				t.Fatalf("mur run: %v\nstdout %s\nterminal %s", runErr, stdout.String(), screen.String())
			}
			queued, err := unix.IoctlGetInt(int(slave.Fd()), unix.TIOCINQ)
			if err != nil {
				t.Fatal(err)
			}
			rd := parseReady(t, stdout.String())
			sh, log := shellLine(t, rd.RecordsDir)
			t.Logf("%s transcript (the command's own account):\n%s", tier, log)
			if queued != 0 {
				t.Errorf("%s: %d bytes were pushed into the terminal's input", tier, queued)
			}
			if strings.Contains(screen.String(), marker) {
				t.Errorf("%s: the injected line reached the terminal:\n%q", tier, screen.String())
			}
			if strings.Contains(log, "TIOCSTI INJECTED") || sh.Int("exit_code") != 1 {
				t.Errorf("%s: the command injected (exit %d):\n%s", tier, sh.Int("exit_code"), log)
			}
			if !strings.Contains(log, "open /dev/tty: ") {
				t.Errorf("%s: /dev/tty opened:\n%s", tier, log)
			}
		})
	}
}

// cgroupDirsOf lists the command cgroups (murmur-<pid>-<n>) runtime pid made
// under this test's own cgroups, every hierarchy.
func cgroupDirsOf(t *testing.T, pid int) []string {
	t.Helper()
	own := map[string]string{}
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if p := strings.SplitN(l, ":", 3); len(p) == 3 {
				for _, c := range strings.Split(p[1], ",") {
					own[c] = p[2]
				}
			}
		}
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		left, right, ok := strings.Cut(sc.Text(), " - ")
		lf, rf := strings.Fields(left), strings.Fields(right)
		if !ok || len(lf) < 5 || len(rf) < 3 {
			continue
		}
		var rel string
		switch rf[0] {
		case "cgroup2":
			rel = own[""]
		case "cgroup":
			for _, o := range strings.Split(rf[2], ",") {
				if r, ok := own[o]; ok {
					rel = r
				}
			}
		default:
			continue
		}
		m, _ := filepath.Glob(filepath.Join(lf[4], rel, fmt.Sprintf("murmur-%d-*", pid)))
		for _, d := range m {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	return out
}

// processesWith lists the pids whose command line holds arg.
func processesWith(arg string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(b), "\x00") {
			if a == arg {
				out = append(out, pid)
			}
		}
	}
	return out
}

// pollUntil polls cond every 20 ms until it holds or d has passed.
func pollUntil(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}

// When mur is killed outright, its commands' process trees die with it and
// its cgroups do not outlive the next mur ps (issue 22 item 14). A shell
// command forks a long sleeper and waits; the test kills mur with SIGKILL,
// and counts the sleepers and mur's cgroups left, then runs mur ps.
func TestCommandTreeDiesWithTheRuntime(t *testing.T) {
	for _, tier := range tiers {
		t.Run(tier, func(t *testing.T) {
			homeDir, base := t.TempDir(), t.TempDir()
			// A duration no other process on the machine sleeps for.
			mark := fmt.Sprintf("%d.%03d", 4000+os.Getpid()%1000, time.Now().Nanosecond()%1000)
			proj := shellAgent(t, homeDir, base, tier, "bash", "sleep "+mark+" & echo started; wait", "")
			skipUnlessTier(t, homeDir, proj)
			cmd, _, stderr := startMur(t, homeDir, proj, "run", "--task", "go")
			defer cmd.Process.Kill()
			if !pollUntil(30*time.Second, func() bool { return len(processesWith(mark)) > 0 }) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the sleeper never started: %s", stderr)
			}
			pid := cmd.Process.Pid
			during := cgroupDirsOf(t, pid)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			pollUntil(5*time.Second, func() bool { return len(processesWith(mark)) == 0 })
			left := processesWith(mark)
			for _, p := range left {
				syscall.Kill(p, syscall.SIGKILL)
			}
			cgLeft := cgroupDirsOf(t, pid)
			if r := runMur(t, homeDir, proj, nil, "ps"); r.Code != 0 {
				t.Fatalf("mur ps: %+v", r)
			}
			cgAfterPs := cgroupDirsOf(t, pid)
			t.Logf("%s: cgroups while running %d; after kill -9: sleepers left %d, cgroups left %d; after mur ps: cgroups left %d",
				tier, len(during), len(left), len(cgLeft), len(cgAfterPs))
			if len(left) != 0 {
				t.Errorf("%s: %d sleepers outlived the killed runtime", tier, len(left))
			}
			if len(cgAfterPs) != 0 {
				t.Errorf("%s: mur ps left the dead runtime's cgroups %v", tier, cgAfterPs)
			}
		})
	}
}

// At the deadline a sealed command ends as SIGTERM ends it outside
// containment (issue 22 item 22): the shell command is no longer pid 1 of
// its namespace, which ignored SIGTERM and ran on (printing) until SIGKILL
// after the grace. Both a lone sleep and a shell loop that prints end with
// 143 (SIGTERM) at the deadline, with no SIGKILL and nothing printed after.
func TestSealedCommandEndsAtTheDeadline(t *testing.T) {
	cases := []struct{ name, command string }{
		{"sleep", "sleep 100"},
		{"a loop that prints", "for i in $(seq 1 40); do echo tick $i; sleep 0.1; done; echo finished"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			homeDir, base := t.TempDir(), t.TempDir()
			proj := shellAgent(t, homeDir, base, "sealed", "bash", c.command, "  limits:\n    deadline_seconds: 1\n")
			skipUnlessTier(t, homeDir, proj)
			r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "go")
			if r.Code != 0 {
				t.Fatalf("run: %+v", r)
			}
			sh, log := shellLine(t, parseReady(t, r.Stdout).RecordsDir)
			if sh.Int("exit_code") != 143 {
				t.Errorf("exit code %d, want 143 (SIGTERM):\n%s", sh.Int("exit_code"), log)
			}
			if !strings.Contains(log, "ran past its deadline of 1s: its process group got SIGTERM]") || strings.Contains(log, "SIGKILL") {
				t.Errorf("the command did not end at SIGTERM:\n%s", log)
			}
			if strings.Contains(log, "\nfinished\n") {
				t.Errorf("the command ran on after the deadline:\n%s", log)
			}
		})
	}
}
