package cli_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// The end-to-end tests run the real mur binary, built once per test process.
// It is built lazily (not in TestMain) so this package's tests from other
// commands can keep their own setup; it lands at a fixed path, replaced
// atomically, so repeated runs do not pile binaries up in /tmp.
var (
	murOnce sync.Once
	murPath string
	murErr  error
)

func murBin(t testing.TB) string {
	t.Helper()
	murOnce.Do(func() {
		dir := filepath.Join(os.TempDir(), "murmur-e2e-run")
		if murErr = os.MkdirAll(dir, 0o755); murErr != nil {
			return
		}
		tmp, err := os.CreateTemp(dir, "mur-*.tmp")
		if err != nil {
			murErr = err
			return
		}
		tmp.Close()
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		cmd := exec.Command("go", "build", "-o", tmp.Name(), "./cmd/mur")
		cmd.Dir = root
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			os.Remove(tmp.Name())
			murErr = &buildError{err, out.String()}
			return
		}
		murPath = filepath.Join(dir, "mur")
		murErr = os.Rename(tmp.Name(), murPath)
	})
	if murErr != nil {
		t.Fatalf("building mur: %v", murErr)
	}
	return murPath
}

// shareCompileCache points home's compiled-component cache at one directory
// shared by every test home, so each test does not recompile the same
// multi-megabyte fixtures (a cached run is what the spec's figures are about).
func shareCompileCache(t testing.TB, home string) {
	t.Helper()
	link := filepath.Join(home, ".murmur", "compiled")
	if _, err := os.Lstat(link); err == nil {
		return
	}
	shared := filepath.Join(os.TempDir(), "murmur-e2e-run", "compiled")
	if err := os.MkdirAll(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(shared, link); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// murResult is one finished mur process.
type murResult struct {
	Stdout, Stderr string
	Code           int
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
	return murResult{so.String(), se.String(), code}
}
