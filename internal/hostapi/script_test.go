package hostapi

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"

	"github.com/murmur-go/murmur/internal/script"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

// scriptImports is the adapter `mur run` uses (internal/cli): the script
// runtime hands its recorder to Define, which grants this package's
// interfaces recording through it.
type scriptImports struct{ s *Imports }

func (i scriptImports) Define(h *wasmhost.Host, rec *trace.Recorder) error {
	i.s.Register(h, rec)
	return nil
}

// TestScriptRunWithHostInterfaces runs capsule_echo.wat through the script
// runtime itself with its real Recorder: the tool_call line and the
// session's totals come from the same place.
func TestScriptRunWithHostInterfaces(t *testing.T) {
	e := newEnv(t, toolsManifest, publishStandardTools(t))
	rec := trace.NewRecorder(e.tw, nil, e.sess.Started, nil)
	comp, err := testEngine.Compile(componentBytes(t, "capsule_echo"))
	if err != nil {
		t.Fatal(err)
	}
	defer comp.Close()
	res := script.Run(context.Background(), script.Config{
		Engine: testEngine, Component: comp, ComponentName: "capsule.wasm", Session: e.sess,
		Recorder: rec, Limits: e.m.Capabilities.EffLimits(), Lookup: os.LookupEnv,
		Imports: scriptImports{e.api},
	})
	if res.Ending != trace.EndOK {
		t.Fatalf("ending %s: %s", res.Ending, res.Reason)
	}
	if calls, errs := rec.Totals(); calls != 1 || errs != 0 {
		t.Fatalf("totals %d/%d", calls, errs)
	}
	ls := e.lines(t, trace.TypeToolCall)
	if len(ls) != 1 || ls[0].Str("tool_name") != "local/echo" || ls[0].Str("status") != "ok" {
		t.Fatalf("tool_call lines: %v", ls)
	}
}

var (
	probeOnce sync.Once
	probeComp *wasmhost.Component
	probeErr  error
)

// probe compiles the Go-kit capsule-probe fixture once per test process.
func probe(t *testing.T) *wasmhost.Component {
	t.Helper()
	if testing.Short() {
		t.Skip("compiles a 3 MB Go component")
	}
	probeOnce.Do(func() {
		var b []byte
		b, probeErr = os.ReadFile(filepath.Join("..", "..", "testdata", "components", "capsule-probe", "capsule-probe.wasm"))
		if probeErr == nil {
			probeComp, probeErr = testEngine.Compile(b)
		}
	})
	if probeErr != nil {
		t.Fatal(probeErr)
	}
	return probeComp
}

// runProbe runs capsule-probe with task through the script runtime and
// returns its out/result.txt.
func runProbe(t *testing.T, e *env) string {
	t.Helper()
	rec := trace.NewRecorder(e.tw, nil, e.sess.Started, nil)
	res := script.Run(context.Background(), script.Config{
		Engine: testEngine, Component: probe(t), ComponentName: "capsule-probe.wasm", Session: e.sess,
		Recorder: rec, Limits: e.m.Capabilities.EffLimits(), Lookup: os.LookupEnv,
		Imports: scriptImports{e.api},
	})
	if res.Ending != trace.EndOK {
		stderr, _ := os.ReadFile(filepath.Join(e.sess.RecordsDir, "logs", script.StderrLog))
		t.Fatalf("ending %s: %s\n%s", res.Ending, res.Reason, stderr)
	}
	out, err := os.ReadFile(filepath.Join(e.sess.Workdir, "out", "result.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(out, l+"\n") {
			t.Errorf("result.txt lacks %q:\n%s", l, out)
		}
	}
}

// TestGoKitCapsuleArtifacts: the Go guest kit's capsule-probe drives every
// artifact-manager function through the canonical ABI against real stores.
func TestGoKitCapsuleArtifacts(t *testing.T) {
	e := newEnvTask(t, `name: local/probe
version: "0.1.0"
capabilities:
  install:
    tool: [acme/*]
`, "artifacts acme/acme-grep 1.0.0", func(e *env) {
		publishTool(t, e.chain.Global, "acme/acme-grep", "1.0.0", componentBytes(t, "echo_tool"), "description: Search text\ntags: [search, text]\n")
		publishSkill(t, e.chain.Global, "local/notes", "0.1.0", "")
	})
	out := runProbe(t, e)
	g, _ := e.chain.Global.Resolve("acme/acme-grep", "1.0.0", manifest.Options{SkipSecrets: true})
	wantLines(t, out,
		"list: acme/acme-grep 1.0.0 wasm",
		"list: local/notes 0.1.0 native",
		"search: acme/acme-grep 1.0.0 wasm",
		`describe: acme/acme-grep 1.0.0 wasm "Search text" tags=search,text in=none out=none`,
		"pull: acme/acme-grep 1.0.0 wasm",
		"remove: true",
	)
	if !strings.Contains(out, "diagnostics: "+e.sess.ID+" installed=2 capabilities=") {
		t.Errorf("diagnostics line: %s", out)
	}
	pulled := e.lines(t, trace.TypeArtifactPulled)
	if len(pulled) != 1 || pulled[0].Str("sha256") != g.SHA256 || pulled[0].Str("store") != "project" {
		t.Fatalf("artifact_pulled lines: %v", pulled)
	}
	// remove took it out of the project store again; the global copy stays.
	if _, err := e.chain.Project.Resolve("acme/acme-grep", "1.0.0", manifest.Options{}); !store.IsNotFound(err) {
		t.Fatalf("project copy after remove: %v", err)
	}
}

// TestGoKitCapsuleArtifactsRefused: the same calls where the install grant
// does not cover the artifact answer err to the capsule, which goes on.
func TestGoKitCapsuleArtifactsRefused(t *testing.T) {
	e := newEnvTask(t, "name: local/probe\nversion: \"0.1.0\"\n", "artifacts acme/acme-grep 1.0.0", func(e *env) {
		publishTool(t, e.chain.Global, "acme/acme-grep", "1.0.0", componentBytes(t, "echo_tool"), "")
	})
	out := runProbe(t, e)
	wantLines(t, out, "remove: false")
	// (the guest kit prefixes the host's err text with the function's name)
	if !strings.Contains(out, "pull error: murmur:artifact-manager/manage@0.1.0#pull: error[E-RUN-067]: pull acme/acme-grep@1.0.0 refused: capabilities.install.tool does not cover acme/acme-grep\n") {
		t.Errorf("result.txt: %s", out)
	}
	if n := len(e.lines(t, trace.TypeArtifactPulled)); n != 0 {
		t.Fatalf("%d artifact_pulled lines", n)
	}
}

// TestGoKitCapsuleSend: capsule-probe sends to a real a2a-go peer; a peer
// the grant does not cover is refused.
func TestGoKitCapsuleSend(t *testing.T) {
	p := startPeer(t, "task")
	e := newEnvTask(t, msgManifest(p.srv.URL), "send "+p.srv.URL+" hello peer", nil)
	out := runProbe(t, e)
	p.mu.Lock()
	taskID := string(p.taskIDs[0])
	got := p.received[0]
	p.mu.Unlock()
	if got.ID != "msg-capsule-probe-1" || got.ContextID != "ctx-probe" || got.Parts[0].Text() != "hello peer" {
		t.Fatalf("peer received %+v", got)
	}
	if !strings.Contains(out, "send: task="+taskID+" context=ctx-probe state=TASK_STATE_") {
		t.Fatalf("result.txt: %s", out)
	}
	if ls := e.lines(t, trace.TypeA2ASend); len(ls) != 1 || ls[0].Str("task_id") != taskID {
		t.Fatalf("a2a_send lines: %v", ls)
	}

	e = newEnvTask(t, msgManifest("127.0.0.1:1"), "send "+p.srv.URL+" hello peer", nil)
	out = runProbe(t, e)
	if !strings.Contains(out, "send error: murmur:message/send@0.1.0#send: error[E-RUN-070]: message/send to "+p.srv.URL+" refused") {
		t.Fatalf("result.txt: %s", out)
	}
}
