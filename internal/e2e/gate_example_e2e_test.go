package e2e_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/e2e"
	"github.com/murmur-go/murmur/internal/trace"
)

// examples/policy, offline, through the binary and @a2a-js/sdk (a client we
// did not write): its Go-kit policy hook denies the transcript's first bash
// call (a path outside the work folder) before anything runs, and the model
// is told E-RUN-092 with the hook's reason; the second call passes the hook
// and waits for the operator, whom the JS client answers "approve" through
// the door; the command then runs and the task completes.
func TestGateExamplePolicy(t *testing.T) {
	root := repoRoot()
	if _, err := os.Stat(filepath.Join(root, "node_modules", "@a2a-js", "sdk", "package.json")); err != nil {
		t.Skip("node_modules/@a2a-js/sdk is absent: run `npm ci` in the repository root")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	homeDir, base := t.TempDir(), t.TempDir()
	proj := filepath.Join(base, "policy")
	copyDir(t, filepath.Join(root, "examples", "policy"), proj)
	copyDir(t, filepath.Join(root, "examples", "policy", "hook"), filepath.Join(proj, "hook"))
	e2e.PublishDir(t, homeDir, filepath.Join(proj, "hook"))
	cmd, out, stderr := startMur(t, homeDir, proj, "run", "--json")
	rd := readReady(t, out)
	js := exec.Command(node, filepath.Join(root, "internal", "e2e", "testdata", "gate", "approve.mjs"), "http://"+*rd.URL, "approve")
	var jsErr strings.Builder
	js.Stderr = &jsErr
	b, err := js.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s\n(mur: %s)", err, jsErr.String(), stderr)
	}
	type view struct {
		ID, State string
		Parts     []struct {
			Case  string
			Value json.RawMessage
		}
		Artifacts map[string]string
	}
	var v struct{ Waiting, Answered view }
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if v.Waiting.State != "TASK_STATE_INPUT_REQUIRED" || len(v.Waiting.Parts) != 2 || v.Waiting.Parts[0].Case != "text" || v.Waiting.Parts[1].Case != "data" {
		t.Fatalf("waiting: %s", b)
	}
	var text string
	json.Unmarshal(v.Waiting.Parts[0].Value, &text)
	if !strings.HasPrefix(text, "approval required: bash (call call_2)\ninput: {\"command\":\"ls\"}\nruns: ") ||
		!strings.HasSuffix(text, ` -c ls`+"\n"+`reply "approve" to run it, or "deny" and a reason to refuse it; no reply within 900s refuses it`) {
		t.Errorf("the request's text:\n%s", text)
	}
	var data struct {
		Req struct {
			Tool, Kind  string
			ToolCallID  string `json:"tool_call_id"`
			Input       map[string]string
			Argv        []string
			TimeoutSecs int `json:"timeout_secs"`
		} `json:"approval_request"`
	}
	if err := json.Unmarshal(v.Waiting.Parts[1].Value, &data); err != nil || data.Req.ToolCallID != "call_2" || data.Req.Input["command"] != "ls" || data.Req.Tool != "bash" || data.Req.Kind != "shell" ||
		data.Req.TimeoutSecs != 900 || len(data.Req.Argv) != 3 || data.Req.Argv[1] != "-c" {
		t.Errorf("the request's data: %s (%v)", v.Waiting.Parts[1].Value, err)
	}
	if v.Answered.State != "TASK_STATE_COMPLETED" || v.Answered.ID != v.Waiting.ID {
		t.Errorf("answered: %s", b)
	}
	want := "error[E-RUN-092]: bash was not run: the policy hook local/policy-hook denied it: the command names /etc/hostname, which is outside the work folder"
	if got := v.Answered.Artifacts["tool-call_1"]; got != want {
		t.Errorf("the model was told %q, want %q", got, want)
	}
	cmd.Wait()
	lines := traceLines(t, rd.RecordsDir)
	var seq []string
	for _, l := range lines {
		switch l.EventType {
		case trace.TypeCallDenied, trace.TypeApprovalRequested, trace.TypeCallApproved, trace.TypeShell, trace.TypeToolCall:
			seq = append(seq, l.EventType+":"+l.Str("tool_call_id"))
		}
	}
	if got := strings.Join(seq, " "); got != "call_denied:call_1 approval_requested:call_2 call_approved:call_2 shell:call_2" {
		t.Errorf("lines %s", got)
	}
	if end := lastEnd(t, lines); end.Int("calls_denied") != 1 || end.Int("shell_calls") != 1 || end.Str("exit_status") != "ok" {
		t.Errorf("session_end %v", end.Fields)
	}
}
