package launch

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/trace"
)

// project writes a capsule directory holding manifest and, when wat names a
// script fixture, its component.
func project(t *testing.T, manifest, wat string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "proj")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "murmur.yaml"), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	if wat != "" {
		src, err := os.ReadFile(filepath.Join("..", "script", "testdata", wat))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "capsule.wasm"), src, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadReadsOnceAndDecidesOnce(t *testing.T) {
	yaml := "name: s\nversion: 1.0.0\ncapabilities:\n  env:\n    allow: [A]\n"
	dir := project(t, yaml, "ok.wat")
	p, err := Load(Request{ManifestPath: dir, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if string(p.ManifestYAML) != yaml {
		t.Errorf("kept bytes %q", p.ManifestYAML)
	}
	if p.Kind() != "script capsule" || p.From != filepath.Join(dir, "murmur.yaml") || p.ManifestDir != dir {
		t.Errorf("kind %q from %q dir %q", p.Kind(), p.From, p.ManifestDir)
	}
	if !bytes.Contains(p.GrantsJSON, []byte(`"A"`)) || len(p.Grants.Capsule.EnvAllow) != 1 {
		t.Errorf("grants %s", p.GrantsJSON)
	}
	if p.Component != nil || p.Tools != nil {
		t.Error("Load resolved what only Prepare should")
	}
	if !strings.Contains(p.Containment.Mechanism, "WASM component sandbox") {
		t.Errorf("containment %+v", p.Containment)
	}
}

// weakHost is a probe report of a host that delivers only advisory.
func weakHost() *contain.Report {
	return &contain.Report{OS: "linux", Seccomp: true, LandlockBlocker: "Landlock is not enabled at boot",
		NamespacesBlocker: "user namespaces are denied"}
}

func TestPrepareRefusals(t *testing.T) {
	defer func(p func(string) *contain.Report) { probe = p }(probe)
	probe = func(string) *contain.Report { return weakHost() }
	tests := []struct {
		name, manifest, wat, containment, code string
	}{
		{"agent without a driver", "name: a\nversion: 1.0.0\ninference:\n  model: m\n", "", "", "E-RUN-047"},
		{"agent with an unknown driver", "name: a\nversion: 1.0.0\nartifacts:\n  - name: acme/driver-x\n    version: 1.0.0\n    runtime: driver\ninference:\n  model: m\n  driver:\n    artifact: acme/driver-x\n", "", "", "E-RUN-047"},
		{"tool artifact", "name: t\nversion: 1.0.0\nruntime: tool\n", "ok.wat", "", "E-RUN-002"},
		{"declared floor the host lacks", "name: s\nversion: 1.0.0\ncapabilities:\n  containment: sealed\n", "ok.wat", "", "E-CAP-003"},
		{"requested floor the host lacks", "name: s\nversion: 1.0.0\n", "ok.wat", "scoped", "E-CAP-003"},
		{"floor with workdir_exec", "name: s\nversion: 1.0.0\ncapabilities:\n  containment: scoped\n  filesystem:\n    workdir_exec: true\n", "ok.wat", "", "E-CAP-003"},
		{"no component", "name: s\nversion: 1.0.0\n", "", "", "E-RUN-003"},
		{"missing tool", "name: s\nversion: 1.0.0\nartifacts:\n  - name: acme/echo\n    version: 1.0.0\n    runtime: tool\n", "ok.wat", "", "E-RUN-008"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, tc.manifest, tc.wat)
			p, err := Load(Request{ManifestPath: dir, Home: t.TempDir(), Containment: tc.containment})
			if err == nil {
				err = p.Prepare()
			}
			if diag.Code(err) != tc.code {
				t.Fatalf("got %v, want %s", err, tc.code)
			}
		})
	}
}

// A secret is resolved from the bytes Load kept: rewriting the file between
// Load and Prepare changes nothing.
func TestPrepareResolvesSecretsFromTheKeptBytes(t *testing.T) {
	yaml := "name: s\nversion: 1.0.0\nartifacts:\n  - name: murmur/driver-x\n    version: 1.0.0\n    runtime: driver\n    gateway:\n      api_key: ${TEST_KEY}\n"
	dir := project(t, yaml, "ok.wat")
	p, err := Load(Request{ManifestPath: dir, Home: t.TempDir(),
		LookupEnv: func(k string) (string, bool) { return "sekrit", k == "TEST_KEY" }})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "murmur.yaml"), []byte("name: other\nversion: 9.9.9\n"), 0o600)
	if err := p.Prepare(); err != nil {
		t.Fatal(err)
	}
	if p.Manifest.Name != "local/s" {
		t.Errorf("the manifest changed under the plan: %s", p.Manifest.Name)
	}
	if g := p.Manifest.Artifacts[0].Gateway; g == nil || g.APIKey != "sekrit" {
		t.Errorf("the secret was not resolved: %+v", g)
	}
}

// A signal cancels the run's context and the run ends on its one path:
// session_end {failed, terminated}, the running record and runtime dir
// removed, and no hard exit.
func TestRunEndsOnTheContext(t *testing.T) {
	homeDir := t.TempDir()
	dir := project(t, "name: spin\nversion: 1.0.0\n", "spin.wat")
	p, err := Load(Request{ManifestPath: dir, Home: homeDir})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	exited := make(chan int, 1)
	var ready Ready
	res, err := Run(ctx, p, Options{
		Workdir: filepath.Join(t.TempDir(), "wd"),
		Ready: func(r Ready) {
			ready = r
			cancel(&Signalled{Signal: syscall.SIGTERM})
		},
		Exit: func(code int) { exited <- code },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Signal == nil || res.Signal.ExitCode() != 143 || res.Ending != trace.EndFailed || res.Reason != "terminated" || res.Err != nil {
		t.Fatalf("result %+v", res)
	}
	f, err := trace.ReadFile(filepath.Join(ready.RecordsDir, trace.FileName))
	if err != nil {
		t.Fatal(err)
	}
	end := f.Lines[len(f.Lines)-1]
	if end.EventType != trace.TypeSessionEnd || end.Str("exit_status") != "failed" || end.Str("reason") != "terminated" {
		t.Errorf("last line %v", end.Fields)
	}
	if left, _ := running.Scan(home.Running(homeDir)); len(left) != 0 {
		t.Errorf("running record left: %+v", left)
	}
	if _, err := os.Stat(home.Session(homeDir, ready.SessionID)); !os.IsNotExist(err) {
		t.Errorf("session dir left: %v", err)
	}
	select {
	case code := <-exited:
		t.Errorf("the fallback exited %d although the ordinary path ended the run", code)
	default:
	}
}

func TestRunEndingDiagnostic(t *testing.T) {
	dir := project(t, "name: trap\nversion: 1.0.0\n", "trap.wat")
	p, err := Load(Request{ManifestPath: dir, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), p, Options{Workdir: filepath.Join(t.TempDir(), "wd")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ending != trace.EndTrapped || diag.Code(res.Err) != "E-RUN-010" {
		t.Fatalf("result %+v", res)
	}
}

// The decision over a probe: the strongest tier the host delivers for a
// capsule with native commands, exactly the floor when one is declared, and
// a refusal naming what the host lacks and what it can deliver.
func TestDecideContainment(t *testing.T) {
	defer func(p func(string) *contain.Report) { probe = p }(probe)
	probe = func(string) *contain.Report { return weakHost() }
	dir := project(t, "name: s\nversion: 1.0.0\ncapabilities:\n  shell:\n    allow: [bash]\n", "ok.wat")
	p, err := Load(Request{ManifestPath: dir, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Containment; c.Achieved != "advisory" || !c.FloorMet || c.Mechanism != "seccomp-only" {
		t.Errorf("weak host, no floor: %+v", c)
	}
	p, err = Load(Request{ManifestPath: dir, Home: t.TempDir(), Containment: "sealed"})
	if err != nil {
		t.Fatal(err)
	}
	err = p.Prepare()
	if diag.Code(err) != "E-CAP-003" || !strings.Contains(err.Error(), "user namespaces are denied") || !strings.Contains(err.Error(), "it can deliver advisory") {
		t.Errorf("sealed on a weak host: %v", err)
	}
}

// TestContainmentResources: the declared capabilities.resources.* reach the
// plan every command runs under, and --explain-scope's resources: line.
func TestContainmentResources(t *testing.T) {
	defer func(p func(string) *contain.Report) { probe = p }(probe)
	probe = func(string) *contain.Report { return weakHost() }
	dir := project(t, "name: s\nversion: 1.0.0\ncapabilities:\n  shell:\n    allow: [bash]\n  resources:\n    max_processes: 16\n    cpu_seconds: 5\n", "ok.wat")
	p, err := Load(Request{ManifestPath: dir, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Containment.Resources
	if r.MaxProcesses != 16 || r.CPUSeconds != 5 || r.MaxOpenFiles != 1024 || r.CgroupPidsMax != 256 {
		t.Errorf("resources %+v", r)
	}
	if line := p.Containment.resourcesText(); !strings.Contains(line, "max_processes 16") || !strings.Contains(line, "cpu_seconds 5") {
		t.Errorf("resources: %s", line)
	}
	if contain.DefaultResources != resourcesOf(manifest.Capabilities{}.CommandResources()) {
		t.Errorf("contain's defaults %+v differ from the manifest's", contain.DefaultResources)
	}
}

// A component in the capsule's directory that has settled is named by its
// identity and read only when LoadComponent asks; one rewritten since is
// refused rather than compiled under the old identity's name.
func TestPrepareNamesComponentWithoutReading(t *testing.T) {
	dir := project(t, "name: s\nversion: 1.0.0\n", "ok.wat")
	comp := filepath.Join(dir, "capsule.wasm")
	want, _ := os.ReadFile(comp)
	settle := func() {
		old := time.Now().Add(-time.Hour)
		os.Chtimes(comp, old, old)
		time.Sleep(150 * time.Millisecond) // past the coarse clock's tick
	}
	settle()
	prepare := func() *Plan {
		p, err := Load(Request{ManifestPath: dir, Home: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Prepare(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := prepare()
	if !strings.HasPrefix(p.ComponentDigest, "file-identity:") {
		t.Skipf("no file identity here: digest %q", p.ComponentDigest)
	}
	if p.Component != nil {
		t.Fatal("Prepare read a component it could name by identity")
	}
	got, err := p.LoadComponent()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("LoadComponent: %d bytes, %v", len(got), err)
	}

	p = prepare()
	if err := os.WriteFile(comp, want, 0o600); err != nil { // same bytes, new ctime
		t.Fatal(err)
	}
	settle()
	if _, err := p.LoadComponent(); !diag.Is(err, "E-RUN-003") {
		t.Fatalf("a component rewritten after Prepare loaded: %v", err)
	}
}
