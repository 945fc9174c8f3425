// Package e2e is the end-to-end harness: the project's real binaries,
// started the one way this package knows, against real stores, real
// components and fake model providers that speak the real wire formats.
//
// A test starts a binary through Command (or RunMur, StartMur, StartRoost,
// which are built on it), sets up a model through FakeProvider with
// ProviderArtifact or FakeModelCapsule, or a replay transcript
// (ReplayCapsule), and publishes what it runs through PublishFixture (a
// committed component) or PublishDir (a project). The delegation and agent
// scenarios live here beside the harness; internal/cli's tests use it for
// the CLI's own commands. Only tests import this package.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/testbin"
)

// MurBin is the real mur binary, built once per test process.
func MurBin(t testing.TB) string { return testbin.Path(t, "./cmd/mur") }

// RoostBin is the real mur-roost binary, built once per test process.
func RoostBin(t testing.TB) string { return testbin.Path(t, "./cmd/mur-roost") }

// ShareCompileCache shares one compiled-component cache between test homes.
func ShareCompileCache(t testing.TB, home string) { testbin.ShareCompileCache(t, home) }

// Command is the one way this harness makes a process: bin with a private
// HOME, the test's PATH and env (later entries win, so env may replace
// PATH), in dir (the test's own directory when empty). It is not started.
func Command(t testing.TB, bin, home, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	return CommandContext(context.Background(), t, bin, home, dir, env, args...)
}

// CommandContext is Command killed when ctx is done.
func CommandContext(ctx context.Context, t testing.TB, bin, home, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}, env...)
	return cmd
}

// MurCmdEnv is the real mur with a private HOME in dir and extra env, not
// started.
func MurCmdEnv(t testing.TB, homeDir, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	return Command(t, MurBin(t), homeDir, dir, env, args...)
}

// Result is one finished mur process.
type Result struct {
	Stdout, Stderr string
	Code           int
	// MaxRSS is the process's peak resident set in bytes: its VmHWM,
	// sampled while it runs. Not its rusage: a child forked from a large
	// test process is charged the parent's pages until it execs.
	MaxRSS int64
}

// MurTimeout bounds one mur process in a test: a hung run fails the test
// with what it printed instead of stalling the whole package.
const MurTimeout = 3 * time.Minute

// RunMur runs mur with a private HOME in dir to its end and returns what it
// printed.
func RunMur(t testing.TB, home, dir string, env []string, args ...string) Result {
	t.Helper()
	if len(args) > 0 && args[0] == "run" {
		// Only a run shares the test process's compile cache: other commands
		// must see HOME untouched (a publish or install compiles into the
		// HOME's own cache, which a later run then uses).
		ShareCompileCache(t, home)
	}
	cmd := MurCmdEnv(t, home, dir, env, args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	var peak atomic.Int64
	var timedOut atomic.Bool
	err := cmd.Start()
	if err == nil {
		kill := time.AfterFunc(MurTimeout, func() { timedOut.Store(true); cmd.Process.Kill() })
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				if v := vmHWM(cmd.Process.Pid); v > peak.Load() {
					peak.Store(v)
				}
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
		err = cmd.Wait()
		kill.Stop()
		close(stop)
		<-sampled
	}
	code := 0
	if timedOut.Load() {
		t.Errorf("mur %v did not end within %v; stdout %q stderr %q", args, MurTimeout, so.String(), se.String())
	}
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running mur %v: %v", args, err)
	}
	return Result{Stdout: so.String(), Stderr: se.String(), Code: code, MaxRSS: peak.Load()}
}

// vmHWM is process pid's peak resident set in bytes from /proc (0 once it
// has exited, or where /proc has no such line).
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kib << 10
		}
	}
	return 0
}

// StartMur starts mur in the background; its stdout is read line by line.
// It is killed when the test ends.
func StartMur(t testing.TB, homeDir, dir string, args ...string) (*exec.Cmd, *bufio.Reader, *bytes.Buffer) {
	t.Helper()
	return StartMurEnv(t, homeDir, dir, nil, args...)
}

// StartMurEnv is StartMur with extra environment variables.
func StartMurEnv(t testing.TB, homeDir, dir string, env []string, args ...string) (*exec.Cmd, *bufio.Reader, *bytes.Buffer) {
	t.Helper()
	ShareCompileCache(t, homeDir)
	cmd := MurCmdEnv(t, homeDir, dir, env, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewReader(out), &stderr
}

// Ready is the --json line mur run prints once its session exists.
type Ready struct {
	URL        *string `json:"url"`
	PID        int     `json:"pid"`
	SessionID  string  `json:"session_id"`
	Name       string  `json:"name"`
	Version    string  `json:"version"`
	Workdir    string  `json:"workdir"`
	RecordsDir string  `json:"records_dir"`
	// FormationID is a formation member's.
	FormationID string `json:"formation_id,omitempty"`
}

// ParseReady reads stdout that must be exactly one --json line.
func ParseReady(t testing.TB, stdout string) Ready {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("--json printed %d lines on stdout, want exactly 1:\n%s", len(lines), stdout)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &raw); err != nil {
		t.Fatalf("--json line %q: %v", lines[0], err)
	}
	for _, k := range []string{"url", "pid", "session_id", "name", "version", "workdir", "records_dir"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("--json line lacks %q: %s", k, lines[0])
		}
	}
	var r Ready
	json.Unmarshal([]byte(lines[0]), &r)
	return r
}

// ReadReady reads the --json line from a started mur's stdout.
func ReadReady(t testing.TB, br *bufio.Reader) Ready {
	t.Helper()
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the --json line: %v", err)
	}
	return ParseReady(t, line)
}

var roostListenRE = regexp.MustCompile(`^mur-roost: listening on (127\.0\.0\.1:\d+)$`)

// StartRoost starts the real mur-roost on a free loopback port under
// homeDir and returns its base URL; it is stopped with the test.
func StartRoost(t testing.TB, homeDir string, args ...string) string {
	t.Helper()
	cmd := Command(t, RoostBin(t), homeDir, "", nil, append([]string{"--port", "0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := roostListenRE.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a
	case <-time.After(20 * time.Second):
		t.Fatal("mur-roost printed no listening line")
	}
	return ""
}
