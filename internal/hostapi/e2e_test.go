package hostapi

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/testbin"
	"github.com/murmur-go/murmur/internal/trace"
)

// The black-box tests drive the real mur binary (built once per test
// process): `mur run` of the Go-kit capsule-probe, whose task makes it call
// the artifact manager and message/send, proves the interfaces are granted
// to a real run and leave their trace lines.

func murBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the mur binary")
	}
	return testbin.Path(t, "./cmd/mur")
}

// sharedCompiled shares one compiled-component cache between test homes:
// the 3 MB probe is compiled once, not per test.
func sharedCompiled(t *testing.T, home string) { testbin.ShareCompileCache(t, home) }

type ready struct {
	SessionID  string `json:"session_id"`
	Workdir    string `json:"workdir"`
	RecordsDir string `json:"records_dir"`
}

// murRunProbe writes a project holding capsule-probe and manifestYAML, runs
// `mur run --json --task task` in it with HOME=home, and returns the ready
// line and the probe's out/result.txt.
func murRunProbe(t *testing.T, home, manifestYAML, task string) (ready, string) {
	t.Helper()
	bin := murBin(t)
	proj := filepath.Join(t.TempDir(), "probe")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "components", "capsule-probe", "capsule-probe.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "capsule-probe.wasm"), wasm, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte(manifestYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--json", "--task", task)
	cmd.Dir = proj
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("mur run: %v\nstdout %s\nstderr %s", err, so.String(), se.String())
	}
	var r ready
	if err := json.Unmarshal(bytes.TrimSpace(so.Bytes()), &r); err != nil {
		t.Fatalf("ready line %q: %v", so.String(), err)
	}
	out, err := os.ReadFile(filepath.Join(r.Workdir, "out", "result.txt"))
	if err != nil {
		t.Fatalf("result: %v (stderr %s)", err, se.String())
	}
	return r, string(out)
}

func traceLines(t *testing.T, r ready, typ string) []trace.Line {
	t.Helper()
	f, err := trace.ReadFile(filepath.Join(r.RecordsDir, trace.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var out []trace.Line
	for _, l := range f.Lines {
		if l.EventType == typ {
			out = append(out, l)
		}
	}
	return out
}

func TestMurRunArtifactManager(t *testing.T) {
	home := t.TempDir()
	murBin(t)
	sharedCompiled(t, home)
	g := publishTool(t, store.Global(home), "acme/acme-grep", "1.0.0", componentBytes(t, "echo_tool"), "description: Search text\n")

	r, out := murRunProbe(t, home, "name: probe\nversion: \"0.1.0\"\ncapabilities:\n  install:\n    tool: [\"acme/*\"]\n",
		"artifacts acme/acme-grep 1.0.0")
	wantLines(t, out, "list: acme/acme-grep 1.0.0 wasm", "pull: acme/acme-grep 1.0.0 wasm", "remove: true",
		`describe: acme/acme-grep 1.0.0 wasm "Search text" tags= in=none out=none`)
	if !strings.Contains(out, "diagnostics: "+r.SessionID+" installed=1 capabilities=") {
		t.Errorf("diagnostics: %s", out)
	}
	ls := traceLines(t, r, trace.TypeArtifactPulled)
	if len(ls) != 1 || ls[0].Str("name") != "acme/acme-grep" || ls[0].Str("sha256") != g.SHA256 || ls[0].Str("store") != "project" {
		t.Fatalf("artifact_pulled: %v", ls)
	}

	// Without the install grant the pull is refused and the run still ends ok.
	r, out = murRunProbe(t, home, "name: probe\nversion: \"0.1.0\"\n", "artifacts acme/acme-grep 1.0.0")
	if !strings.Contains(out, "error[E-RUN-067]: pull acme/acme-grep@1.0.0 refused: capabilities.install.tool does not cover acme/acme-grep") {
		t.Fatalf("result: %s", out)
	}
	if n := len(traceLines(t, r, trace.TypeArtifactPulled)); n != 0 {
		t.Fatalf("%d artifact_pulled lines after a refused pull", n)
	}
	if _, err := store.Global(home).Resolve("acme/acme-grep", "1.0.0", manifest.Options{}); err != nil {
		t.Fatalf("the global copy: %v", err)
	}
}

func TestMurRunMessageSend(t *testing.T) {
	home := t.TempDir()
	murBin(t)
	sharedCompiled(t, home)
	p := startPeer(t, "task")
	r, out := murRunProbe(t, home, msgManifest(p.srv.URL), "send "+p.srv.URL+" hello from mur run")
	p.mu.Lock()
	if len(p.received) != 1 || p.received[0].Parts[0].Text() != "hello from mur run" {
		p.mu.Unlock()
		t.Fatalf("peer received %v", p.received)
	}
	taskID := string(p.taskIDs[0])
	p.mu.Unlock()
	if !strings.Contains(out, "send: task="+taskID+" context=ctx-probe state=TASK_STATE_") {
		t.Fatalf("result: %s", out)
	}
	ls := traceLines(t, r, trace.TypeA2ASend)
	if len(ls) != 1 || ls[0].Str("peer_url") != p.srv.URL || ls[0].Str("message_id") != "msg-capsule-probe-1" ||
		ls[0].Str("task_id") != taskID || ls[0].Str("context_id") != "ctx-probe" {
		t.Fatalf("a2a_send: %v", ls)
	}

	_, out = murRunProbe(t, home, msgManifest("example.com"), "send "+p.srv.URL+" hello")
	if !strings.Contains(out, "error[E-RUN-070]: message/send to "+p.srv.URL+" refused: capabilities.network.allow does not cover") {
		t.Fatalf("result: %s", out)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.received) != 1 {
		t.Fatal("a refused send reached the peer")
	}
}
