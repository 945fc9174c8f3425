package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/murmur-go/murmur/internal/testbin"
)

// Published fixtures: the committed components and capsule projects a test
// runs, written into its temp dirs and published with the real binary.

// Fixture returns the bytes of a WAT fixture of internal/script or of the
// Go-kit capsule-probe component.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	p := filepath.Join(RepoRoot(), "internal", "script", "testdata", name)
	if name == "capsule-probe.wasm" {
		p = filepath.Join(RepoRoot(), "testdata", "components", "capsule-probe", name)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Capsule writes a script capsule project: murmur.yaml and its component.
func Capsule(t testing.TB, dir, manifest string, wasm []byte) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "murmur.yaml"), []byte(manifest), 0o644)
	if wasm != nil {
		os.WriteFile(filepath.Join(dir, "capsule.wasm"), wasm, 0o644)
	}
	return dir
}

// CopyDir copies the regular files of src into dst (no recursion needed for
// the examples).
func CopyDir(t testing.TB, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(dst, 0o755)
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644)
	}
}

// AgentTranscript has the model call the echo tool, then answer.
const AgentTranscript = `version: 1
responses:
  - chunks: ["Let me ", "echo that."]
    content:
      - {type: text, text: "Let me echo that."}
      - {type: tool_call, id: call_1, name: echo, input: {message: "hello, agent"}}
  - content:
      - {type: text, text: "The echo tool said hello."}
`

// PublishEchoTool builds the Go-kit tool-echo fixture as acme/echo@1.0.0
// and publishes it into home's global store with the real binary.
func PublishEchoTool(t testing.TB, homeDir, base string) {
	t.Helper()
	PublishFixture(t, homeDir, filepath.Join(base, "echo"), "tool-echo",
		"name: acme/echo\nversion: 1.0.0\nruntime: tool\ndescription: Echoes its input.\n")
}

// PublishFixture is the one way a test publishes a committed component: it
// writes manifest and testdata/components/<fixture>/<fixture>.wasm into dir,
// then builds and publishes dir into home's global store with the real
// binary (PublishDir). Tools and drivers alike go through it.
func PublishFixture(t testing.TB, homeDir, dir, fixture, manifest string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "murmur.yaml"), []byte(manifest), 0o644)
	wasm, err := os.ReadFile(filepath.Join(RepoRoot(), "testdata", "components", fixture, fixture+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, fixture+".wasm"), wasm, 0o644)
	PublishDir(t, homeDir, dir)
}

// AgentProject writes an agent capsule driven by murmur/driver-replay that
// declares the published tool acme/echo; lifecycle is extra YAML.
func AgentProject(t testing.TB, homeDir, base, lifecycle, transcript string) string {
	t.Helper()
	PublishEchoTool(t, homeDir, base)
	proj := filepath.Join(base, "agent")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "transcript.yaml"), []byte(transcript), 0o644)
	manifest := `name: greeter
version: 0.2.0
artifacts:
  - name: murmur/driver-replay
    version: 1.0.0
    runtime: driver
    config:
      transcript: transcript.yaml
  - name: acme/echo
    version: 1.0.0
inference:
  model: replay
  driver:
    artifact: murmur/driver-replay
  system_prompt: Greet people.
` + lifecycle
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte(manifest), 0o644)
	return proj
}

// ReplayCapsule writes and publishes an agent capsule driven by
// murmur/driver-replay (its transcript at an absolute path, so an installed
// copy finds it).
func ReplayCapsule(t testing.TB, homeDir, dir, name, version, extra, transcript string) string {
	t.Helper()
	return ReplayCapsuleInference(t, homeDir, dir, name, version, "", extra, transcript)
}

// ReplayCapsuleInference is ReplayCapsule with more lines (indented by
// two spaces) under inference:.
func ReplayCapsuleInference(t testing.TB, homeDir, dir, name, version, inference, extra, transcript string) string {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	tp := filepath.Join(dir, "transcript.yaml")
	os.WriteFile(tp, []byte(transcript), 0o644)
	m := "name: " + name + "\nversion: " + version + `
artifacts:
  - name: murmur/driver-replay
    version: 1.0.0
    runtime: driver
    config:
      transcript: ` + tp + `
inference:
  model: replay
  driver:
    artifact: murmur/driver-replay
  system_prompt: Work.
` + inference + extra
	os.WriteFile(filepath.Join(dir, "murmur.yaml"), []byte(m), 0o644)
	PublishDir(t, homeDir, dir)
	return dir
}

// WorkerTranscript is a worker that answers at once.
const WorkerTranscript = `version: 1
responses:
  - content:
      - {type: text, text: "The report has three findings."}
`

// OrchTranscript delegates one task to local/worker@1.0.0, then answers
// twice (before and after the worker's completion).
const OrchTranscript = `version: 1
responses:
  - content:
      - {type: tool_call, id: call_1, name: delegate-task, input: {capsule: worker, version: 1.0.0, task: "find three things"}}
  - content:
      - {type: text, text: "Waiting for the worker."}
  - content:
      - {type: text, text: "The worker reported back."}
`

// PublishDir builds and publishes the capsule in dir with the real mur.
func PublishDir(t testing.TB, homeDir, dir string) {
	t.Helper()
	for _, c := range []string{"build", "publish"} {
		if r := RunMur(t, homeDir, dir, nil, c); r.Code != 0 {
			t.Fatalf("%s %s: %+v", c, dir, r)
		}
	}
}

// RepoRoot is the module's root directory.
func RepoRoot() string { return testbin.Root() }

// DelegatorWasm is the Go-kit capsule that delegates (testdata/components),
// relative to the module root.
const DelegatorWasm = "testdata/components/capsule-delegator/capsule-delegator.wasm"
