package cli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"syscall"
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
	// MaxRSS is the process's peak resident set in bytes (its rusage).
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
	err := cmd.Run()
	code := 0
	if ctx.Err() != nil {
		t.Errorf("mur %v did not end within %v; stdout %q stderr %q", args, murTimeout, so.String(), se.String())
	}
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running mur %v: %v", args, err)
	}
	res := murResult{Stdout: so.String(), Stderr: se.String(), Code: code}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.MaxRSS = ru.Maxrss << 10 // Linux reports KiB
	}
	return res
}
