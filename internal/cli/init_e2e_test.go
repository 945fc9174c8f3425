package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/cli"
)

// Issue 24 item 4: mur init --agent writes a project that answers at once,
// offline; mur init never overwrites.
func TestInitAgentRunsAndRefusesToOverwrite(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	r := runMur(t, homeDir, base, nil, "init", "--agent", "My Agent")
	dir := filepath.Join(base, "My Agent")
	if r.Code != 0 || !strings.Contains(r.Stdout, "wrote an agent project my-agent in "+dir+": murmur.yaml, transcript.yaml\n") {
		t.Fatalf("mur init --agent: %+v", r)
	}
	if !strings.Contains(r.Stdout, "next: cd 'My Agent' && mur run --task hi") {
		t.Errorf("no next step: %q", r.Stdout)
	}
	r = runMur(t, homeDir, dir, nil, "run", "--task", "hi", "--json")
	if r.Code != 0 {
		t.Fatalf("mur run in the new project: %+v", r)
	}
	var rd ready
	if err := json.Unmarshal([]byte(strings.SplitN(r.Stdout, "\n", 2)[0]), &rd); err != nil {
		t.Fatalf("ready line: %v %+v", err, r)
	}
	answer, err := os.ReadFile(filepath.Join(rd.RecordsDir, "out", "result.txt"))
	if err != nil || !strings.Contains(string(answer), "Hello from my-agent!") {
		t.Fatalf("the answer: %q %v (%+v)", answer, err, r)
	}
	if rd.Name != "local/my-agent" {
		t.Errorf("name %q", rd.Name)
	}
	// The project is one mur build packs as it stands.
	if r := runMur(t, homeDir, dir, nil, "build"); r.Code != 0 {
		t.Fatalf("mur build of the new project: %+v", r)
	}

	// Again into the same directory: refused, nothing written.
	os.WriteFile(filepath.Join(dir, "transcript.yaml"), []byte("mine\n"), 0o644)
	r = runMur(t, homeDir, dir, nil, "init")
	if r.Code != 1 || !strings.Contains(r.Stderr, "error[E-RUN-205]") || !strings.Contains(r.Stderr, "murmur.yaml, transcript.yaml") {
		t.Fatalf("init over a project: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "transcript.yaml")); string(b) != "mine\n" {
		t.Fatalf("init overwrote transcript.yaml: %q", b)
	}
	// One file already there is enough to write none of the others.
	other := filepath.Join(base, "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "main.go"), []byte("package main\n"), 0o644)
	if r := runMur(t, homeDir, base, nil, "init", "--tool", "other"); r.Code != 1 || !strings.Contains(r.Stderr, "error[E-RUN-205]") {
		t.Fatalf("init --tool over main.go: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(other, "go.mod")); !os.IsNotExist(err) {
		t.Fatalf("a refused init wrote go.mod: %v", err)
	}
	if r := runMur(t, homeDir, base, nil, "init", "--agent", "--script", "x"); r.Code != 2 || !strings.Contains(r.Stderr, "E-CFG-001") {
		t.Fatalf("two kinds: %+v", r)
	}
}

// mur init --script and --tool write a Go module whose main.go builds
// against the guest kit of --kit for wasip1, and whose manifest is read
// without a warning; the build line names the kit's script.
func TestInitGoProjects(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain on PATH")
	}
	homeDir, base := t.TempDir(), t.TempDir()
	for _, kind := range []string{"script", "tool"} {
		t.Run(kind, func(t *testing.T) {
			r := runMur(t, homeDir, base, nil, "init", "--"+kind, "--kit", repoRoot(), "new-"+kind)
			dir := filepath.Join(base, "new-"+kind)
			if r.Code != 0 {
				t.Fatalf("mur init --%s: %+v", kind, r)
			}
			world := map[string]string{"script": "capsule", "tool": "tool"}[kind]
			if want := filepath.Join(repoRoot(), "scripts", "build-component.sh") + " . " + world + " new-" + kind + ".wasm"; !strings.Contains(r.Stdout, want) {
				t.Errorf("the build line %q is not in %q", want, r.Stdout)
			}
			gomod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
			if !strings.Contains(string(gomod), "replace github.com/murmur-go/murmur => "+repoRoot()+"\n") {
				t.Errorf("go.mod: %s", gomod)
			}
			cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", filepath.Join(t.TempDir(), "c.wasm"), ".")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=-buildvcs=false", "GOWORK=off")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go build of the new %s: %v\n%s", kind, err, out)
			}
			// Its manifest reads clean: no unknown key, no warning.
			if r := runMur(t, homeDir, dir, nil, "doctor"); r.Code != 0 || strings.Contains(r.Stderr, "warning[") {
				t.Fatalf("mur doctor in the new %s: %+v", kind, r)
			}
		})
	}
	// Without --kit: a placeholder, and mur init says to replace it.
	r := runMur(t, homeDir, base, nil, "init", "--script", "nokit")
	if r.Code != 0 || !strings.Contains(r.Stdout, "first replace /path/to/murmur in go.mod") {
		t.Fatalf("init --script without --kit: %+v", r)
	}
}

// The go line mur init writes is the kit module's own.
func TestInitGoLine(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(b)
	if m == nil || string(m[1]) != cli.GuestKitGoVersion {
		t.Fatalf("go.mod's go line %q, mur init writes %q", m, cli.GuestKitGoVersion)
	}
}
