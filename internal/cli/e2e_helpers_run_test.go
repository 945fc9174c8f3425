package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
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

// runMur runs mur with a private HOME in dir and returns what it printed.
func runMur(t testing.TB, home, dir string, env []string, args ...string) murResult {
	t.Helper()
	cmd := exec.Command(murBin(t), args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}, env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running mur %v: %v", args, err)
	}
	return murResult{so.String(), se.String(), code}
}
