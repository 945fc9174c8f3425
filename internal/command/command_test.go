package command_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/command"
	"github.com/murmur-go/murmur/internal/contain"
)

// helperArg makes the test binary a helper program (the first argument
// names what it does).
const helperArg = "__command-helper"

func TestMain(m *testing.M) {
	// The test binary is also containment's init helper (TestWrapContained).
	contain.MaybeInit()
	if len(os.Args) > 2 && os.Args[1] == helperArg {
		os.Exit(helper(os.Args[2], os.Args[3:]))
	}
	os.Exit(m.Run())
}

func helper(mode string, args []string) int {
	switch mode {
	case "trapterm":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return 0
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	case "daemon":
		// Start a child in the same group that outlives this process,
		// holding no stream, and say its pid.
		c := exec.Command(os.Args[0], helperArg, "sleep")
		if err := c.Start(); err != nil {
			return 3
		}
		fmt.Println(c.Process.Pid)
		return 0
	case "spew":
		n, _ := strconv.Atoi(args[0])
		buf := bytes.Repeat([]byte("0123456789abcdef"), 4096)
		for n > 0 {
			k := min(n, len(buf))
			if _, err := os.Stdout.Write(buf[:k]); err != nil {
				return 3
			}
			n -= k
		}
		return 0
	case "stdin":
		b, err := io.ReadAll(os.Stdin)
		fmt.Printf("%d %v\n", len(b), err)
		return 0
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		return 0
	}
	return 2
}

func self(t testing.TB) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func spec(t testing.TB, mode string, args ...string) command.Spec {
	return command.Spec{Path: self(t), Args: append([]string{helperArg, mode}, args...), Limit: 16 << 10}
}

func bash(t testing.TB, script string) command.Spec {
	t.Helper()
	p, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	return command.Spec{Path: p, Args: []string{"-c", script}, Env: []string{"PATH=" + os.Getenv("PATH")}, Limit: 16 << 10}
}

func run(t testing.TB, s command.Spec) command.Result {
	t.Helper()
	r, err := command.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// alive reports whether pid is a live process (a zombie is not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func TestExitCodesAndStreams(t *testing.T) {
	cases := []struct {
		name, script   string
		code           int
		signal         string
		stdout, stderr string
	}{
		{"ok", "echo hi", 0, "", "hi\n", ""},
		{"non-zero", "echo out; echo err >&2; exit 7", 7, "", "out\n", "err\n"},
		{"cd and variables", "cd /; X=abc; echo \"$PWD $X\"; false", 1, "", "/ abc\n", ""},
		{"signal", "kill -USR1 $$", 128 + int(syscall.SIGUSR1), "SIGUSR1", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, bash(t, c.script))
			if r.ExitCode != c.code || r.Signal != c.signal || string(r.Stdout) != c.stdout || string(r.Stderr) != c.stderr {
				t.Fatalf("got exit %d signal %q stdout %q stderr %q", r.ExitCode, r.Signal, r.Stdout, r.Stderr)
			}
			if r.TimedOut || r.Canceled || r.Killed || r.Truncated() {
				t.Fatalf("unexpected ending %+v", r)
			}
		})
	}
}

func TestDirAndEnvExactly(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GITHUB_TOKEN", "ghp_secret")
	s := spec(t, "env")
	s.Env, s.Dir = []string{"A=1", "B=two"}, dir
	r := run(t, s)
	if got := strings.Fields(string(r.Stdout)); !slices.Equal(got, []string{"A=1", "B=two"}) {
		t.Fatalf("environment %q, want exactly A=1 B=two", got)
	}
	s.Env = nil
	if r := run(t, s); len(r.Stdout) != 0 {
		t.Fatalf("a nil Env leaked the caller's environment: %q", r.Stdout)
	}
	b := bash(t, "pwd")
	b.Dir = dir
	if r := run(t, b); strings.TrimSpace(string(r.Stdout)) != dir {
		t.Fatalf("pwd %q, want %s", r.Stdout, dir)
	}
}

func TestStdinIsDevNull(t *testing.T) {
	r := run(t, spec(t, "stdin"))
	if got := string(r.Stdout); got != "0 <nil>\n" {
		t.Fatalf("stdin read %q, want an immediate EOF", got)
	}
}

func TestOnlyStandardDescriptors(t *testing.T) {
	// A descriptor opened without close-on-exec, as one inherited from a
	// spawner would be.
	fd, err := syscall.Open(filepath.Join(t.TempDir(), "leak"), syscall.O_CREAT|syscall.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	// ls's own descriptor is the directory it lists; every other one
	// must be a standard stream.
	ls, err := exec.LookPath("ls")
	if err != nil {
		t.Skip("no ls")
	}
	r := run(t, command.Spec{Path: ls, Args: []string{"-l", "/proc/self/fd"}, Limit: 16 << 10})
	var fds []string
	for _, line := range strings.Split(string(r.Stdout), "\n") {
		name, target, ok := strings.Cut(line, " -> ")
		if !ok || strings.HasSuffix(target, "/fd") {
			continue
		}
		f := strings.Fields(name)
		fds = append(fds, f[len(f)-1])
	}
	if got := strings.Join(fds, " "); got != "0 1 2" {
		t.Fatalf("descriptors %s, want 0 1 2 (fd %d leaked?)\n%s", got, fd, r.Stdout)
	}
}

func TestBoundedCaptureAndWholeLog(t *testing.T) {
	const total = 100 << 20
	var log countWriter
	s := spec(t, "spew", strconv.Itoa(total))
	s.Log = &log
	r := run(t, s)
	if r.StdoutBytes != total || log.n != total {
		t.Fatalf("stdout %d bytes, log %d, want %d", r.StdoutBytes, log.n, total)
	}
	if len(r.Stdout) != 16<<10 || !r.Truncated() {
		t.Fatalf("kept %d bytes (truncated %v), want 16 KiB", len(r.Stdout), r.Truncated())
	}
}

type countWriter struct {
	mu sync.Mutex
	n  int64
}

func (w *countWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n += int64(len(p))
	return len(p), nil
}

func TestDeadlineSIGTERM(t *testing.T) {
	s := bash(t, "echo started; exec sleep 60")
	s.Deadline = 100 * time.Millisecond
	r := run(t, s)
	if !r.TimedOut || r.Killed || r.Signal != "SIGTERM" || r.ExitCode != 143 {
		t.Fatalf("got %+v, want ended by SIGTERM at the deadline", r)
	}
	if string(r.Stdout) != "started\n" {
		t.Fatalf("stdout %q", r.Stdout)
	}
}

func TestDeadlineSIGKILLAfterGrace(t *testing.T) {
	// The shell ignores SIGTERM before it execs the helper, which inherits
	// that: a helper slow to start under load (a -race binary) ignores a
	// SIGTERM that comes before its own signal.Ignore.
	s := bash(t, "trap '' TERM; exec \"$0\" "+helperArg+" trapterm")
	s.Args = append(s.Args, self(t))
	s.Deadline, s.KillGrace = time.Second, 200*time.Millisecond
	r := run(t, s)
	if !r.TimedOut || !r.Killed || r.Signal != "SIGKILL" || r.ExitCode != 137 {
		t.Fatalf("got %+v, want SIGKILL after the grace", r)
	}
}

func TestContextEndsCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := bash(t, "sleep 60")
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	r, err := command.Run(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Canceled || r.TimedOut {
		t.Fatalf("got %+v, want canceled", r)
	}
}

func TestNoDescendantSurvives(t *testing.T) {
	t.Run("a child left by a leader that exits", func(t *testing.T) {
		r := run(t, spec(t, "daemon"))
		pid, err := strconv.Atoi(strings.TrimSpace(string(r.Stdout)))
		if err != nil || r.ExitCode != 0 {
			t.Fatalf("helper said %q (exit %d)", r.Stdout, r.ExitCode)
		}
		waitGone(t, pid)
	})
	t.Run("a background child holding stdout, past the deadline", func(t *testing.T) {
		s := bash(t, "sleep 60 & echo $!; wait")
		s.Deadline, s.KillGrace = 100*time.Millisecond, 100*time.Millisecond
		r := run(t, s)
		pid, err := strconv.Atoi(strings.TrimSpace(string(r.Stdout)))
		if err != nil || !r.TimedOut {
			t.Fatalf("got %+v", r)
		}
		waitGone(t, pid)
	})
	t.Run("a background child that traps SIGTERM, leader exits at once", func(t *testing.T) {
		s := bash(t, "(trap '' TERM; exec sleep 60) >/dev/null 2>&1 & echo $!")
		r := run(t, s)
		pid, err := strconv.Atoi(strings.TrimSpace(string(r.Stdout)))
		if err != nil || r.ExitCode != 0 || r.TimedOut {
			t.Fatalf("got %+v", r)
		}
		waitGone(t, pid)
	})
}

// waitGone waits for pid to be reaped by whoever its parent is now; the
// kill was already sent, so this waits on the kernel, not on a guess.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 500 && alive(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("process %d survived its command", pid)
	}
}

func TestStartFailure(t *testing.T) {
	_, err := command.Run(context.Background(), command.Spec{Path: "/nonexistent/binary"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/binary") {
		t.Fatalf("err %v, want one naming the path", err)
	}
}

func TestWrapHook(t *testing.T) {
	s := bash(t, "echo $0 $1")
	// The wrapper runs the command through env(1), as containment runs it
	// through its helper.
	envPath, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env")
	}
	var saw []string
	s.Wrap = func(c *exec.Cmd) error {
		saw = c.Args
		c.Args = append([]string{envPath, "WRAPPED=1"}, c.Args...)
		c.Path = envPath
		return nil
	}
	s.Args = []string{"-c", "echo $WRAPPED"}
	r := run(t, s)
	if string(r.Stdout) != "1\n" || len(saw) != 3 {
		t.Fatalf("stdout %q, wrapper saw %q", r.Stdout, saw)
	}
	s.Wrap = func(*exec.Cmd) error { return fmt.Errorf("no containment") }
	if _, err := command.Run(context.Background(), s); err == nil || !strings.Contains(err.Error(), "no containment") {
		t.Fatalf("err %v", err)
	}
}

func TestManyCommands(t *testing.T) {
	for i := range 50 {
		r := run(t, bash(t, fmt.Sprintf("echo %d", i)))
		if string(r.Stdout) != fmt.Sprintf("%d\n", i) {
			t.Fatalf("command %d said %q", i, r.Stdout)
		}
	}
}

func BenchmarkRunTrue(b *testing.B) {
	p, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true")
	}
	b.Run("command.Run", func(b *testing.B) {
		for b.Loop() {
			if _, err := command.Run(context.Background(), command.Spec{Path: p, Limit: 16 << 10}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("exec.Command", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command(p).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// containWrap is how a session wraps its commands in containment: the
// helper replaces the command, and its plan descriptor is one of the
// ExtraFiles Run closes once the helper started.
func TestWrapContained(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "records", "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	p, err := contain.NewPlan(contain.Input{Class: contain.Advisory, WorkFolder: dir, Home: home, RuntimeDir: dir, RecordsDir: filepath.Join(dir, "records")})
	if err != nil {
		t.Fatal(err)
	}
	s := bash(t, "echo contained; sleep 60")
	s.Dir, s.Wrap = dir, contain.Wrap(p)
	// Ended once it has spoken, however long the helper took to start.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Log = writerFunc(func(b []byte) (int, error) {
		if strings.Contains(string(b), "contained") {
			cancel()
		}
		return len(b), nil
	})
	r, err := command.Run(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(r.Stdout), "contained\n") || !r.Canceled || r.ExitCode == 0 {
		t.Fatalf("got %+v stdout %q stderr %q", r, r.Stdout, r.Stderr)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
