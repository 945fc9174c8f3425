package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/testbin"
)

// murBin is the real mur binary, built once per test process.
func murBin(t testing.TB) string { return testbin.Path(t, "./cmd/mur") }

// shareCompileCache shares one compiled-component cache between test homes.
func shareCompileCache(t testing.TB, home string) { testbin.ShareCompileCache(t, home) }

// murResult is one finished mur process.
type murResult struct {
	Stdout, Stderr string
	Code           int
	// MaxRSS is the process's peak resident set in bytes: its VmHWM,
	// sampled while it runs. Not its rusage: a child forked from a large
	// test process is charged the parent's pages until it execs.
	MaxRSS int64
}

// murTimeout bounds one mur process in a test: a hung run fails the test
// with what it printed instead of stalling the whole package.
const murTimeout = 3 * time.Minute

// runMur runs mur with a private HOME in dir and returns what it printed.
func runMur(t testing.TB, home, dir string, env []string, args ...string) murResult {
	t.Helper()
	if len(args) > 0 && args[0] == "run" {
		shareCompileCache(t, home) // only mur run compiles; other commands must see HOME untouched
	}
	ctx, cancel := context.WithTimeout(context.Background(), murTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, murBin(t), args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}, env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	var peak atomic.Int64
	err := cmd.Start()
	if err == nil {
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
		close(stop)
		<-sampled
	}
	code := 0
	if ctx.Err() != nil {
		t.Errorf("mur %v did not end within %v; stdout %q stderr %q", args, murTimeout, so.String(), se.String())
	}
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running mur %v: %v", args, err)
	}
	return murResult{Stdout: so.String(), Stderr: se.String(), Code: code, MaxRSS: peak.Load()}
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
