package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/e2e"
	"github.com/murmur-go/murmur/internal/testbin"
	"github.com/murmur-go/murmur/internal/trace"
)

// providerProject writes an agent capsule whose driver is a built-in
// provider driver pointed at a fake provider on loopback, with its key in
// ${PROVIDER_TEST_KEY}; it declares the published tool acme/echo.
func providerProject(t *testing.T, homeDir, base, driverName, endpoint string, extra ...string) string {
	t.Helper()
	// agentProject publishes acme/echo; its replay project is not used.
	agentProject(t, homeDir, base, "", agentTranscript)
	proj := filepath.Join(base, "provider")
	os.MkdirAll(proj, 0o755)
	manifest := fmt.Sprintf("name: asker\nversion: 1.0.0\nartifacts:\n%[2]s"+`  - name: acme/echo
    version: 1.0.0
inference:
  model: test-model
  driver:
    artifact: %[1]s
  max_tokens: 256
%[3]s`, driverName, e2e.ProviderArtifact(driverName, endpoint, "${PROVIDER_TEST_KEY}"), strings.Join(extra, ""))
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte(manifest), 0o644)
	return proj
}

// The built-in provider drivers run through the real mur binary against
// fake providers speaking the real wire formats: streamed text, a tool call
// streamed in pieces, usage; the key reaches the endpoint only, and host
// ANTHROPIC_*/OPENAI_* variables are never read.
func TestProviderDriversEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		name, driver string
		protocol     fakeprovider.Protocol
	}{
		{"anthropic", "murmur/driver-anthropic", fakeprovider.Anthropic},
		{"openai", "murmur/driver-openai", fakeprovider.OpenAI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakeProvider(t, tc.protocol)
			fake.Push(
				fakeprovider.Reply{Text: []string{"Let me ", "echo."}, InputTokens: 40, OutputTokens: 7,
					ToolCalls: []fakeprovider.ToolCall{{ID: "call_a", Name: "echo", Pieces: []string{`{"mess`, `age":"hi"}`}}}},
				fakeprovider.Reply{Text: []string{"Echo said ", "HI."}, InputTokens: 60, OutputTokens: 4},
			)
			homeDir, base := t.TempDir(), t.TempDir()
			proj := providerProject(t, homeDir, base, tc.driver, fake.URL)
			env := []string{"PROVIDER_TEST_KEY=sk-test-right",
				"ANTHROPIC_API_KEY=sk-trap", "ANTHROPIC_BASE_URL=http://127.0.0.1:1", "OPENAI_API_KEY=sk-trap",
				"OPENAI_BASE_URL=http://127.0.0.1:1", "HTTPS_PROXY=http://127.0.0.1:1", "HTTP_PROXY=http://127.0.0.1:1"}
			r := runMur(t, homeDir, proj, env, "run", "--json", "--task", "echo hi")
			if r.Code != 0 {
				t.Fatalf("run: %+v", r)
			}
			rd := parseReady(t, r.Stdout)
			got, _ := os.ReadFile(filepath.Join(rd.RecordsDir, "out", "result.txt"))
			if string(got) != "Echo said HI." {
				t.Errorf("result.txt %q", got)
			}
			reqs := fake.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests reached the provider", len(reqs))
			}
			for _, q := range reqs {
				if k := fakeprovider.Key(q); k != "sk-test-right" {
					t.Errorf("the provider saw the key %q", k)
				}
			}
			// The second request carries the tool's result (tool-echo echoes
			// its input), fenced; every tool has an input schema.
			if b := string(reqs[1].Body); !strings.Contains(b, "untrusted-content source=") || !strings.Contains(b, `\"message\":\"hi\"`) {
				t.Errorf("second request lacks the fenced tool result: %s", reqs[1].Body)
			}
			if b := string(reqs[0].Body); !strings.Contains(b, `"input_schema":{`) && !strings.Contains(b, `"parameters":{`) {
				t.Errorf("second request lacks the fenced tool result: %s", reqs[1].Body)
			}
			lines := traceLines(t, rd.RecordsDir)
			var inf []int64
			for _, l := range lines {
				if l.EventType == "inference" {
					inf = append(inf, l.Int("input_tokens"), l.Int("output_tokens"))
				}
			}
			if fmt.Sprint(inf) != "[40 7 60 4]" {
				t.Errorf("inference tokens %v", inf)
			}
			end := lastEnd(t, lines)
			if end.Int("input_tokens") != 100 || end.Int("output_tokens") != 11 || end.Int("tool_calls") != 1 {
				t.Errorf("session_end %v", end.Fields)
			}
		})
	}
}

// A provider that refuses the key fails the task saying so, naming the
// variable; the session ends failed (E-RUN-040) with everything recorded.
func TestProviderRefusesTheKey(t *testing.T) {
	fake := fakeProvider(t, fakeprovider.Anthropic)
	fake.Push(fakeprovider.Reply{Status: 401, Message: "invalid x-api-key"})
	homeDir, base := t.TempDir(), t.TempDir()
	proj := providerProject(t, homeDir, base, "murmur/driver-anthropic", fake.URL)
	r := runMur(t, homeDir, proj, []string{"PROVIDER_TEST_KEY=sk-wrong"}, "run", "--json", "--task", "hi")
	if r.Code != 1 || !strings.Contains(r.Stderr, "error[E-RUN-040]: the session ended failed") ||
		!strings.Contains(r.Stderr, "refused the key in PROVIDER_TEST_KEY") {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	if types(lines) != "session_start task_start inference task_end session_end" {
		t.Fatalf("trace %s", types(lines))
	}
	if lines[2].Str("stop_reason") != "error" || lines[3].Str("exit_status") != "failed" {
		t.Errorf("inference %v task_end %v", lines[2].Fields, lines[3].Fields)
	}
}

// An unset key variable is E-MAN-003 before anything starts.
func TestProviderKeyUnset(t *testing.T) {
	fake := fakeProvider(t, fakeprovider.OpenAI)
	homeDir, base := t.TempDir(), t.TempDir()
	proj := providerProject(t, homeDir, base, "murmur/driver-openai", fake.URL)
	r := runMur(t, homeDir, proj, nil, "run", "--task", "hi")
	if r.Code != 1 || !strings.Contains(r.Stderr, "error[E-MAN-003]") || !strings.Contains(r.Stderr, "PROVIDER_TEST_KEY") {
		t.Fatalf("run: %+v", r)
	}
	if len(fake.Requests()) != 0 {
		t.Error("a request reached the provider")
	}
}

// A provider that never answers is cut off at the call deadline: a
// call_deadline line names the driver, and the task fails.
func TestProviderPastTheDeadline(t *testing.T) {
	fake := fakeProvider(t, fakeprovider.Anthropic)
	fake.Push(fakeprovider.Reply{Hang: true}, fakeprovider.Reply{Hang: true}, fakeprovider.Reply{Hang: true})
	homeDir, base := t.TempDir(), t.TempDir()
	proj := providerProject(t, homeDir, base, "murmur/driver-anthropic", fake.URL,
		"capabilities:\n  limits:\n    deadline_seconds: 1\n")
	r := runMur(t, homeDir, proj, []string{"PROVIDER_TEST_KEY=k"}, "run", "--json", "--task", "hi")
	if r.Code != 1 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	var cd *int
	for i, l := range lines {
		if l.EventType == trace.TypeCallDeadline {
			cd = &i
		}
	}
	if cd == nil || lines[*cd].Str("component") != "murmur/driver-anthropic" || lines[*cd].Int("deadline_ms") != 1000 {
		t.Fatalf("no call_deadline line naming the driver: %s", types(lines))
	}
	if end := lastEnd(t, lines); end.Str("exit_status") != "failed" {
		t.Errorf("session_end %v", end.Fields)
	}
}

// SIGTERM while the model is answering: the live task ends canceled in the
// inference phase, session_end says canceled, exit 143.
func TestProviderSIGTERMMidInference(t *testing.T) {
	fake := fakeProvider(t, fakeprovider.OpenAI)
	fake.Push(fakeprovider.Reply{Text: []string{"thinking", " more"}, HangAfter: 1})
	homeDir, base := t.TempDir(), t.TempDir()
	proj := providerProject(t, homeDir, base, "murmur/driver-openai", fake.URL)
	cmd, out, stderr := startMurEnv(t, homeDir, proj, []string{"PROVIDER_TEST_KEY=k"}, "run", "--json", "--task", "hi")
	rd := readReady(t, out)
	for i := 0; i < 200 && len(fake.Requests()) == 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 143 {
		t.Fatalf("exit after SIGTERM: %v (stderr %s)", err, stderr)
	}
	lines := traceLines(t, rd.RecordsDir)
	canceled := lastOf(lines, trace.TypeTaskCanceled)
	if canceled == nil || canceled.Str("phase") != "inference" {
		t.Errorf("task_canceled: %v in %s", canceled, types(lines))
	}
	end := lastEnd(t, lines)
	if end.Str("exit_status") != "canceled" || end.Str("reason") != "terminated" {
		t.Errorf("session_end %v", end.Fields)
	}
}

// A split-build mur (-tags murdriver, as testbin builds it) with no
// mur-driver beside it refuses a provider built-in with
// E-RUN-059 before any session exists, naming where it looked, and doctor
// fails the driver the same way; the replay built-in, which runs in mur
// itself, still passes.
func TestProviderWithoutTheHelper(t *testing.T) {
	fake := fakeProvider(t, fakeprovider.Anthropic)
	homeDir, base := t.TempDir(), t.TempDir()
	proj := providerProject(t, homeDir, base, "murmur/driver-anthropic", fake.URL)
	alone := filepath.Join(t.TempDir(), "mur")
	src, err := os.ReadFile(murBin(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, src, 0o755); err != nil {
		t.Fatal(err)
	}
	mur := func(args ...string) (string, int) {
		cmd := e2e.Command(t, alone, homeDir, proj, []string{"PROVIDER_TEST_KEY=k"}, args...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	want := filepath.Join(filepath.Dir(alone), "mur-driver")
	out, code := mur("run", "--task", "hi")
	if code != 1 || !strings.Contains(out, "error[E-RUN-059]") || !strings.Contains(out, want) {
		t.Errorf("run: %d %s", code, out)
	}
	if len(fake.Requests()) != 0 {
		t.Error("a request reached the provider")
	}
	if ents, _ := os.ReadDir(filepath.Join(homeDir, ".murmur", "sessions")); len(ents) != 0 {
		t.Errorf("a session was started: %v", ents)
	}
	out, code = mur("doctor")
	if code != 1 || !strings.Contains(out, "E-RUN-059") || !strings.Contains(out, "murmur/driver-anthropic") ||
		!strings.Contains(out, "build     murdriver: ") {
		t.Errorf("doctor: %d %s", code, out)
	}
}

// mur alone: a plain `go build ./cmd/mur` (no murdriver tag) links the
// provider built-ins and runs one in its own process, with no mur-driver
// beside it or on PATH, and doctor passes the driver as built into mur.
func TestPlainMurRunsProviderAlone(t *testing.T) {
	fake := fakeProvider(t, fakeprovider.Anthropic)
	fake.Push(fakeprovider.Reply{Text: []string{"Hello ", "alone."}, InputTokens: 12, OutputTokens: 3})
	homeDir, base := t.TempDir(), t.TempDir()
	proj := providerProject(t, homeDir, base, "murmur/driver-anthropic", fake.URL)
	dir := t.TempDir()
	alone := testbin.Plain(t, "./cmd/mur", dir)
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("the plain build's directory holds %v", ents)
	}
	if p, err := exec.LookPath("mur-driver"); err == nil {
		t.Fatalf("mur-driver is on PATH (%s): the test would not show mur alone", p)
	}
	shareCompileCache(t, homeDir)
	mur := func(args ...string) (string, string, int) {
		cmd := e2e.Command(t, alone, homeDir, proj, []string{"PROVIDER_TEST_KEY=sk-alone"}, args...)
		var so, se strings.Builder
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return so.String(), se.String(), code
	}
	out, errOut, code := mur("doctor")
	if code != 0 || !strings.Contains(out, "build     in-process: ") ||
		!strings.Contains(out, "ok    murmur/driver-anthropic@1.0.0 (driver) not installed: built into mur") {
		t.Errorf("doctor: %d %s %s", code, out, errOut)
	}
	out, errOut, code = mur("run", "--json", "--task", "say hi")
	if code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errOut)
	}
	rd := parseReady(t, out)
	if got, _ := os.ReadFile(filepath.Join(rd.RecordsDir, "out", "result.txt")); string(got) != "Hello alone." {
		t.Errorf("result.txt %q", got)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || fakeprovider.Key(reqs[0]) != "sk-alone" {
		t.Errorf("the provider saw %d request(s)", len(reqs))
	}
}
