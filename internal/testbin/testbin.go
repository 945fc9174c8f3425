// Package testbin builds the project's real binaries once per test process
// for black-box tests, and shares one compiled-component cache between test
// homes. Only tests import it; an architecture test keeps it that way.
package testbin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	mu     sync.Mutex
	builds = map[string]*build{}
)

type build struct {
	once sync.Once
	path string
	err  error
}

// Root is the module's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Path returns the binary of pkg (a path relative to the module root, such
// as "./cmd/mur"), building it on first use. The binary lands at a fixed
// path under the temp dir, replaced atomically, so repeated test runs do not
// pile binaries up. A failed build fails the test with the compiler's output.
func Path(t testing.TB, pkg string) string {
	t.Helper()
	mu.Lock()
	b := builds[pkg]
	if b == nil {
		b = &build{}
		builds[pkg] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.path, b.err = buildPkg(pkg) })
	if b.err != nil {
		t.Fatalf("building %s: %v", pkg, b.err)
	}
	return b.path
}

// MustPath is Path for TestMain, which has no testing.TB: it panics on a
// failed build.
func MustPath(pkg string) string {
	p, err := buildPkg(pkg)
	if err != nil {
		panic(fmt.Sprintf("building %s: %v", pkg, err))
	}
	return p
}

// companions are built with a binary and land beside it, and tags are the
// build tags a binary is built with: the tests run what scripts/install.sh
// ships, mur built with the murdriver tag (no provider SDK linked) and the
// mur-driver helper it runs them in, looked for next to itself.
var (
	companions = map[string][]string{"./cmd/mur": {"./cmd/mur-driver"}}
	tags       = map[string]string{"./cmd/mur": "murdriver"}
)

func buildPkg(pkg string) (string, error) {
	for _, c := range companions[pkg] {
		if _, err := buildOne(c); err != nil {
			return "", err
		}
	}
	return buildOne(pkg)
}

func buildOne(pkg string) (string, error) {
	// One directory per checkout: two clones testing at once (or a clone and
	// a worktree) must not run each other's binaries.
	sum := sha256.Sum256([]byte(Root()))
	dir := filepath.Join(os.TempDir(), "murmur-testbin", "bin-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(pkg)+"-*.tmp")
	if err != nil {
		return "", err
	}
	tmp.Close()
	if err := goBuild(tmp.Name(), pkg, tags[pkg]); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	// Test processes building at once each rename a whole binary of the
	// same source into place; a process already running the old file keeps
	// its inode.
	final := filepath.Join(dir, filepath.Base(pkg))
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", err
	}
	return final, nil
}

// Plain builds pkg with no build tags and no companions into dir (a test's
// own temp dir) and returns the binary's path: what a bare
// `go build ./cmd/mur` makes, for a test of that configuration. A failed
// build fails the test with the compiler's output.
func Plain(t testing.TB, pkg, dir string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	if err := goBuild(out, pkg, ""); err != nil {
		t.Fatalf("building %s: %v", pkg, err)
	}
	return out
}

func goBuild(out, pkg, tags string) error {
	// -buildvcs=false: a test binary is never VCS-stamped (its revision is
	// "devel"), and helpers such as mur-driver must say the same revision as
	// the code that checks their stamp, in the test binary or in a mur built
	// here. Given on the command line, it wins over any GOFLAGS.
	args := []string{"build", "-buildvcs=false", "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = Root()
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v\n%s", err, b.String())
	}
	return nil
}

// ShareCompileCache points home's compiled-component cache at one directory
// shared by every test home of every test process, so each test does not
// recompile the same multi-megabyte fixtures (a cached run is what the
// spec's figures are about). The cache verifies every entry, so sharing it
// is safe.
func ShareCompileCache(t testing.TB, home string) {
	t.Helper()
	// The cache and its MAC key (kept apart from it) are shared together:
	// entries MACed under one home's key would fail another's.
	for _, d := range []string{"compiled", "keys"} {
		link := filepath.Join(home, ".murmur", d)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		shared := filepath.Join(os.TempDir(), "murmur-testbin", d)
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
}
