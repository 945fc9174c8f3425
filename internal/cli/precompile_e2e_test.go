package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/e2e"
)

// mur publish compiles the artifact's component into HOME's compile cache
// (--no-precompile: not), mur doctor says which declared components are not
// compiled, and the first run after publish loads what publish compiled.
func TestPublishPrecompiles(t *testing.T) {
	base := t.TempDir()
	tool := filepath.Join(base, "echo-tool")
	e2e.CopyDir(t, filepath.Join(e2e.RepoRoot(), "examples", "echo-tool"), tool)
	if out, err := e2e.MurCmdEnv(t, t.TempDir(), tool, nil, "build").CombinedOutput(); err != nil {
		t.Fatalf("build: %v %s", err, out)
	}
	entries := func(home string) int {
		n := 0
		es, _ := os.ReadDir(filepath.Join(home, ".murmur", "compiled"))
		for _, e := range es {
			if strings.HasSuffix(e.Name(), ".cwasm") {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"publish"}, 1},
		{[]string{"publish", "--no-precompile"}, 0},
	} {
		home := t.TempDir() // its own cache: what publish compiled is counted
		if out, err := e2e.MurCmdEnv(t, home, tool, nil, tc.args...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", tc.args, err, out)
		}
		if got := entries(home); got != tc.want {
			t.Fatalf("%v: %d compiled entries, want %d", tc.args, got, tc.want)
		}
	}

	// A project declaring the tool: doctor warns until it is compiled.
	home := t.TempDir()
	if out, err := e2e.MurCmdEnv(t, home, tool, nil, "publish", "--no-precompile").CombinedOutput(); err != nil {
		t.Fatalf("publish: %v %s", err, out)
	}
	proj := filepath.Join(base, "proj")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte("name: p\nversion: 0.1.0\nartifacts:\n  - name: local/echo-tool\n    version: 0.1.0\n    runtime: tool\n"), 0o644)
	doctor := func() string {
		out, _ := e2e.MurCmdEnv(t, home, proj, nil, "doctor").CombinedOutput()
		return string(out)
	}
	if out := doctor(); !strings.Contains(out, "local/echo-tool@0.1.0's component is not compiled yet") {
		t.Fatalf("doctor does not say the component is not compiled:\n%s", out)
	}
	if out, err := e2e.MurCmdEnv(t, home, proj, nil, "install", "local/echo-tool@0.1.0").CombinedOutput(); err != nil {
		t.Fatalf("install: %v %s", err, out)
	}
	if out := doctor(); strings.Contains(out, "not compiled yet") {
		t.Fatalf("doctor still warns after install compiled it:\n%s", out)
	}
}

// A component that does not compile is still published, with W-REG-002
// naming it; the exit is 0.
func TestPublishWarnsWhenItCannotPrecompile(t *testing.T) {
	base := t.TempDir()
	zip := bigZip(t, base, "garbage", 1024) // random bytes as its .wasm
	r := runMur(t, t.TempDir(), base, nil, "publish", zip)
	if r.Code != 0 || !strings.Contains(r.Stderr, "warning[W-REG-002]: acme/garbage@1.0.0 is stored, but its component could not be compiled") {
		t.Fatalf("exit %d, stderr:\n%s", r.Code, r.Stderr)
	}
}
