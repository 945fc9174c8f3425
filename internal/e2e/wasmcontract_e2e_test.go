package e2e_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/e2e"
	"github.com/murmur-go/murmur/internal/trace"
)

// publishStoredDriver builds and publishes the committed driver component
// testdata/components/<fixture> as acme/<fixture>@1.0.0 and returns the path
// of its .mur.zip in home's global store.
func publishStoredDriver(t *testing.T, homeDir, base, fixture string) string {
	t.Helper()
	publishTool(t, homeDir, filepath.Join(base, fixture), fixture, "name: acme/"+fixture+"\nversion: 1.0.0\nruntime: driver\n")
	return filepath.Join(homeDir, ".murmur", "artifacts", "acme", fixture, "1.0.0", fixture+"-1.0.0.mur.zip")
}

// driverProject writes an agent capsule whose driver is driverName at the
// fake provider's URL; extra is more YAML (artifacts entries first).
func driverProject(t *testing.T, base, driverName, endpoint, artifacts, extra string) string {
	t.Helper()
	proj := filepath.Join(base, "agent")
	os.MkdirAll(proj, 0o755)
	manifest := fmt.Sprintf("name: asker\nversion: 1.0.0\nartifacts:\n%[2]s%[3]s"+`inference:
  model: test-model
  driver:
    artifact: %[1]s
  max_tokens: 256
%[4]s`, driverName, e2e.ProviderArtifact(driverName, endpoint, "${PROVIDER_TEST_KEY}"), artifacts, extra)
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte(manifest), 0o644)
	return proj
}

// A WASM tool's manifest input_schema is the schema the model is offered
// (docs/manifest.md); a tool that declares none is offered {"type":"object"}.
// Issue 22 item 21: every tool was offered {"type":"object"}.
func TestWASMToolInputSchemaOffered(t *testing.T) {
	fake := fakeProvider(t, fakeprovider.Anthropic)
	fake.Push(fakeprovider.Reply{Text: []string{"done"}})
	homeDir, base := t.TempDir(), t.TempDir()
	publishTool(t, homeDir, filepath.Join(base, "typed"), "tool-echo", `name: acme/typed-echo
version: 1.0.0
runtime: tool
description: Echoes a message.
input_schema:
  type: object
  properties:
    message: {type: string, description: what to echo}
  required: [message]
`)
	publishTool(t, homeDir, filepath.Join(base, "plain"), "tool-echo", "name: acme/plain-echo\nversion: 1.0.0\nruntime: tool\n")
	proj := driverProject(t, base, "murmur/driver-anthropic", fake.URL,
		"  - name: acme/typed-echo\n    version: 1.0.0\n  - name: acme/plain-echo\n    version: 1.0.0\n", "")
	r := runMur(t, homeDir, proj, []string{"PROVIDER_TEST_KEY=k"}, "run", "--json", "--task", "hi")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	var body struct {
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	schemas := map[string]string{}
	for _, tl := range body.Tools {
		b, _ := json.Marshal(tl.InputSchema)
		schemas[tl.Name] = string(b)
	}
	typed := schemas["typed-echo"]
	if !strings.Contains(typed, `"message":{"description":"what to echo","type":"string"}`) || !strings.Contains(typed, `"required":["message"]`) {
		t.Errorf("typed-echo was offered %s", typed)
	}
	if plain := schemas["plain-echo"]; strings.Contains(plain, "message") || !strings.Contains(plain, `"type":"object"`) {
		t.Errorf("plain-echo was offered %s", plain)
	}
}

// session_start.driver.sha256 of a stored driver is the artifact's digest,
// the SHA-256 of its .mur.zip (docs/stores.md), not the component's.
func TestStoredDriverSHA256IsTheArtifacts(t *testing.T) {
	fake := fakeProvider(t, fakeprovider.Anthropic)
	fake.Push(fakeprovider.Reply{Text: []string{"ok"}})
	homeDir, base := t.TempDir(), t.TempDir()
	zipPath := publishStoredDriver(t, homeDir, base, "driver-anthropic-c")
	zip, err := os.ReadFile(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(zip)
	proj := driverProject(t, base, "acme/driver-anthropic-c", fake.URL, "", "")
	r := runMur(t, homeDir, proj, []string{"PROVIDER_TEST_KEY=k"}, "run", "--json", "--task", "hi")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	lines := traceLines(t, parseReady(t, r.Stdout).RecordsDir)
	var drv map[string]any
	json.Unmarshal(lines[0].Fields["driver"], &drv)
	if drv["sha256"] != hex.EncodeToString(sum[:]) || drv["implementation"] != "wasm" {
		t.Errorf("session_start.driver %v, want sha256 %x (the .mur.zip's)", drv, sum)
	}
}

// A stored driver waiting on its provider past the call deadline is stopped
// at the deadline plus the 2 s grace and leaves a call_deadline line naming
// the component and the call (docs/running-capsules.md "Endings"). It used to be
// cut at the bare deadline by the loop's own timer, recorded as nothing.
func TestStoredDriverWaitingPastTheDeadline(t *testing.T) {
	fake := fakeProvider(t, fakeprovider.Anthropic)
	fake.Push(fakeprovider.Reply{Hang: true}, fakeprovider.Reply{Hang: true}, fakeprovider.Reply{Hang: true})
	homeDir, base := t.TempDir(), t.TempDir()
	publishStoredDriver(t, homeDir, base, "driver-anthropic-c")
	proj := driverProject(t, base, "acme/driver-anthropic-c", fake.URL, "", "capabilities:\n  limits:\n    deadline_seconds: 1\n")
	start := time.Now()
	r := runMur(t, homeDir, proj, []string{"PROVIDER_TEST_KEY=k"}, "run", "--json", "--task", "hi")
	took := time.Since(start)
	if r.Code != 1 {
		t.Fatalf("run: %+v", r)
	}
	lines := traceLines(t, parseReady(t, r.Stdout).RecordsDir)
	cd := lastOf(lines, trace.TypeCallDeadline)
	if cd == nil || cd.Str("component") != "acme/driver-anthropic-c" || cd.Str("call") != "murmur:tool/run@0.1.0#run" || cd.Int("deadline_ms") != 1000 {
		t.Fatalf("no call_deadline line naming the driver and its call: %s", types(lines))
	}
	// A lower bound only: the call may end later under load, never sooner
	// than the deadline plus the grace.
	if took < 3*time.Second {
		t.Errorf("the run took %s: the driver's call was stopped before its deadline (1 s) plus the 2 s grace", took)
	}
	if end := lastEnd(t, lines); end.Str("exit_status") != "failed" {
		t.Errorf("session_end %v", end.Fields)
	}
}
