package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/murmur-go/murmur/internal/e2e"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/trace"
)

// publishProbe publishes the committed policy-probe component (a Go-kit
// policy hook whose answer the call's input picks) as the hook local/<name>.
func publishProbe(t *testing.T, homeDir, base, name string) {
	t.Helper()
	dir := filepath.Join(base, name)
	copyDir(t, filepath.Join(repoRoot(), "testdata", "components", "policy-probe"), dir)
	os.WriteFile(filepath.Join(dir, "murmur.yaml"), []byte("name: "+name+"\nversion: 0.1.0\nruntime: hook\n"), 0o644)
	e2e.PublishDir(t, homeDir, dir)
}

// gatedCapsule writes an agent capsule that declares the echo tool, a skill,
// bash, delegate-task and the given hooks, with extra YAML at the end.
func gatedCapsule(t *testing.T, homeDir, base, transcript, extra string, hooks ...string) string {
	t.Helper()
	publishTool(t, homeDir, filepath.Join(base, "echo"), "tool-echo", "name: acme/echo\nversion: 1.0.0\nruntime: tool\n")
	skill := filepath.Join(base, "notes-skill")
	os.MkdirAll(skill, 0o755)
	os.WriteFile(filepath.Join(skill, "murmur.yaml"), []byte("name: acme/notes\nversion: 1.0.0\nruntime: skill\n"), 0o644)
	os.WriteFile(filepath.Join(skill, "skill.md"), []byte("# Notes\nKeep notes short.\n"), 0o644)
	e2e.PublishDir(t, homeDir, skill)
	proj := filepath.Join(base, "gated")
	os.MkdirAll(proj, 0o755)
	tp := filepath.Join(proj, "transcript.yaml")
	os.WriteFile(tp, []byte(transcript), 0o644)
	var hs strings.Builder
	for _, h := range hooks {
		fmt.Fprintf(&hs, "  - name: local/%s\n    version: 0.1.0\n    runtime: hook\n    deadline_seconds: 1\n"+
			"    capabilities:\n      limits:\n        memory_bytes: 67108864\n", h)
	}
	m := `name: gated
version: 0.1.0
artifacts:
  - name: murmur/driver-replay
    version: 1.0.0
    runtime: driver
    config:
      transcript: ` + tp + `
  - name: acme/echo
    version: 1.0.0
  - name: acme/notes
    version: 1.0.0
    runtime: skill
` + hs.String() + `capabilities:
  shell:
    allow: [bash]
  spawn:
    allow: [local/worker]
inference:
  model: replay
  driver:
    artifact: murmur/driver-replay
  system_prompt: Work.
` + extra
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte(m), 0o644)
	e2e.PublishDir(t, homeDir, proj)
	return proj
}

const gateTranscript = `version: 1
responses:
  - content:
      - {type: tool_call, id: call_w1, name: echo, input: {message: "policy:deny"}}
      - {type: tool_call, id: call_w2, name: echo, input: {message: "hi"}}
      - {type: tool_call, id: call_s1, name: notes, input: {q: "policy:deny"}}
      - {type: tool_call, id: call_s2, name: notes, input: {}}
      - {type: tool_call, id: call_b1, name: bash, input: {command: "echo policy:deny"}}
      - {type: tool_call, id: call_b2, name: bash, input: {command: "echo fine"}}
      - {type: tool_call, id: call_d1, name: delegate-task, input: {capsule: worker, version: 1.0.0, task: "policy:deny"}}
      - {type: tool_call, id: call_d2, name: delegate-task, input: {capsule: worker, version: 1.0.0, task: "find three things"}}
      - {type: tool_call, id: call_t1, name: echo, input: {message: "policy:trap"}}
      - {type: tool_call, id: call_x1, name: echo, input: {message: "policy:blank"}}
      - {type: tool_call, id: call_v1, name: bash, input: {}}
      - {type: tool_call, id: call_f1, name: echo, input: {message: "policy:fail"}}
      - {type: tool_call, id: call_h1, name: echo, input: {message: "policy:hang"}}
      - {type: tool_call, id: call_m1, name: echo, input: {message: "policy:hog"}}
  - content:
      - {type: text, text: "Waiting for the worker."}
  - content:
      - {type: text, text: "Done."}
`

// Policy hooks through the binary, for every call kind there is: a call a
// hook allows runs with its own line; one it denies (or cannot answer
// about: an error, a trap, its deadline, its memory limit, a blank reason) runs nothing — no tool_call, no shell line, no process, no
// delegation — and writes one call_denied line; with two hooks the second
// is asked only about calls the first allowed. A call that fails its own
// checks (bash without a command) never reaches the hooks.
func TestGatePolicyHooksEveryKind(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	publishProbe(t, homeDir, base, "probe")
	publishProbe(t, homeDir, base, "probe2")
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: exit\n", workerTranscript)
	proj := gatedCapsule(t, homeDir, base, gateTranscript, "", "probe", "probe2")
	roost := startRoost(t, homeDir, "--spawn-allow", "local/gated")
	r := runMur(t, homeDir, proj, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "go")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	if got := string(lines[0].Fields["policy_hooks"]); got != `["local/probe","local/probe2"]` {
		t.Errorf("session_start.policy_hooks %s", got)
	}
	denied := map[string]trace.Line{}
	for _, l := range byType(lines, trace.TypeCallDenied) {
		denied[l.Str("tool_call_id")] = l
		if l.Str("by") != "hook" || l.Str("hook") != "local/probe" || l.Str("parent_id") != lines[2].Str("event_id") {
			t.Errorf("call_denied %v", l.Fields)
		}
	}
	want := map[string]string{
		"call_w1": "wasm the policy hook local/probe denied it: probe denies echo",
		"call_s1": "skill the policy hook local/probe denied it: probe denies notes",
		"call_b1": "shell the policy hook local/probe denied it: probe denies bash",
		"call_d1": "runtime the policy hook local/probe denied it: probe denies delegate-task",
		"call_t1": "wasm the policy hook local/probe trapped (",
		"call_x1": "wasm the policy hook local/probe denied it without giving a reason",
		"call_f1": "wasm the policy hook local/probe failed (probe failed on purpose), and a policy hook that cannot answer denies",
		"call_h1": "wasm the policy hook local/probe did not answer within its deadline of 1s, and a policy hook that cannot answer denies",
		"call_m1": "wasm the policy hook local/probe hit a resource limit (",
	}
	if len(denied) != len(want) {
		t.Errorf("call_denied for %v, want %v\n%s", keys(denied), want, types(lines))
	}
	for id, w := range want {
		l, ok := denied[id]
		if got := l.Str("kind") + " " + l.Str("reason"); !ok || !strings.HasPrefix(got, w) {
			t.Errorf("%s: call_denied %q, want %q", id, got, w)
		}
	}
	if b := denied["call_b1"].Str("binary"); !strings.HasSuffix(b, "/bash") {
		t.Errorf("call_denied.binary %q", b)
	}
	ran, delegations := map[string]string{}, 0
	for _, l := range lines {
		switch l.EventType {
		case trace.TypeToolCall, trace.TypeShell:
			ran[l.Str("tool_call_id")] = l.EventType + " " + l.Str("status")
		case trace.TypeDelegationStart:
			delegations++
		}
	}
	if delegations != 1 {
		t.Errorf("%d delegation_start lines, want the allowed call's one: a denied delegate-task reached mur-roost?", delegations)
	}
	if got := fmt.Sprint(ran); got != "map[call_b2:shell  call_d2:tool_call ok call_s2:tool_call ok call_v1:tool_call error call_w2:tool_call ok]" {
		t.Errorf("calls that ran: %s", got)
	}
	if _, err := os.Stat(filepath.Join(rd.RecordsDir, "logs", "shell", "call_b1.log")); err == nil {
		t.Error("a denied shell command left a shell log")
	}
	asked := map[string]int{}
	for _, l := range byType(lines, trace.TypeHookCall) {
		if l.Str("event") == "check-call" {
			asked[l.Str("hook")]++
		}
	}
	// probe: thirteen calls passed their own checks; probe2 only the four probe allowed.
	if asked["local/probe"] != 13 || asked["local/probe2"] != 4 {
		t.Errorf("check-call lines %v", asked)
	}
	show := runMur(t, homeDir, proj, nil, "trace", "show", rd.SessionID)
	if show.Code != 0 || !strings.Contains(show.Stdout, "denied:    9\n") ||
		!regexpMatch(`\n  bash +denied by hook local/probe +the policy hook local/probe denied it: probe denies bash\n`, show.Stdout) {
		t.Errorf("mur trace show: %+v", show)
	}
	te := lastOf(lines, trace.TypeTaskEnd)
	end := lastEnd(t, lines)
	if te.Int("calls_denied") != 9 || te.Int("tool_calls") != 4 || te.Int("tool_errors") != 1 || te.Int("shell_calls") != 1 ||
		end.Int("calls_denied") != 9 {
		t.Errorf("task_end %v\nsession_end %v", te.Fields, end.Fields)
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

func keys(m map[string]trace.Line) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Operator approval through the door, from plain HTTP: the task waits in
// INPUT_REQUIRED with the text and data parts of the request; "approve" runs
// the call, "deny <reason>" refuses it with the reason, and a cancel while
// waiting ends the wait with no call_denied.
func TestGateApprovalOverHTTP(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	transcript := `version: 1
responses:
  - content:
      - {type: tool_call, id: call_1, name: bash, input: {command: "echo one"}}
  - content:
      - {type: tool_call, id: call_2, name: bash, input: {command: "echo 'two words'"}}
  - content:
      - {type: tool_call, id: call_3, name: bash, input: {command: "echo three"}}
  - content:
      - {type: text, text: "Done."}
`
	proj := gatedCapsule(t, homeDir, base, transcript, "tools:\n  bash: {approval: required}\nlifecycle:\n  after_task: sleep\n")
	roost := startRoost(t, homeDir, "--spawn-allow", "local/gated")
	scope := runMur(t, homeDir, proj, nil, "run", "--explain-scope")
	if scope.Code != 0 || !strings.Contains(scope.Stdout, "\npolicy hooks: none\noperator approval: bash\n") {
		t.Errorf("--explain-scope: %+v", scope)
	}
	cmd, out, stderr := startMurEnv(t, homeDir, proj, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json")
	rd := readReady(t, out)
	url := "http://" + *rd.URL
	waiting := func(res map[string]any) (string, map[string]any) {
		t.Helper()
		task, _ := res["result"].(map[string]any)["task"].(map[string]any)
		if task == nil || task["status"].(map[string]any)["state"] != "TASK_STATE_INPUT_REQUIRED" {
			t.Fatalf("not waiting for approval: %v (stderr %s)", res, stderr)
		}
		return task["id"].(string), task["status"].(map[string]any)["message"].(map[string]any)
	}
	id, msg := waiting(rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"go"}]}}}`))
	if md, _ := os.ReadFile(filepath.Join(home.Runtime(homeDir, rd.SessionID), "MURMUR.md")); !regexpMatch(`(?m)^.*\bbash\b.*\(operator approval\)$`, string(md)) {
		t.Errorf("MURMUR.md does not mark bash:\n%s", md)
	}
	parts := msg["parts"].([]any)
	text := parts[0].(map[string]any)["text"].(string)
	wantText := "approval required: bash (call call_1)\ninput: {\"command\":\"echo one\"}\nruns: "
	if !strings.HasPrefix(text, wantText) || !strings.HasSuffix(text, " -c 'echo one'\nreply \"approve\" to run it, or \"deny\" and a reason to refuse it") {
		t.Errorf("the text part:\n%s", text)
	}
	data := fmt.Sprint(parts[1].(map[string]any)["data"])
	if !strings.Contains(data, "approval_request:map[argv:[") || !strings.Contains(data, "tool:bash") || !strings.Contains(data, "input:map[command:echo one]") ||
		!strings.Contains(data, "timeout_secs:<nil>") || !strings.Contains(data, "kind:shell") {
		t.Errorf("the data part: %s", data)
	}
	_, _ = waiting(rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"op-1","taskId":"`+id+`","role":"ROLE_USER","parts":[{"text":" Approve "}]}}}`))
	_, _ = waiting(rpc(t, url, `{"jsonrpc":"2.0","id":3,"method":"SendMessage","params":{"message":{"messageId":"op-2","taskId":"`+id+`","role":"ROLE_USER","parts":[{"text":"deny: not today"}]}}}`))
	res := rpc(t, url, `{"jsonrpc":"2.0","id":4,"method":"CancelTask","params":{"id":"`+id+`"}}`)
	if !strings.Contains(fmt.Sprint(res), "TASK_STATE_CANCELED") {
		t.Errorf("CancelTask: %v", res)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	lines := traceLines(t, rd.RecordsDir)
	if got := string(lines[0].Fields["approval_required"]); got != `["bash"]` {
		t.Errorf("session_start.approval_required %s", got)
	}
	var seq []string
	for _, l := range lines {
		switch l.EventType {
		case trace.TypeApprovalRequested, trace.TypeCallApproved, trace.TypeCallDenied, trace.TypeShell, trace.TypeTaskCanceled:
			seq = append(seq, l.EventType+":"+l.Str("tool_call_id")+l.Str("phase"))
		}
	}
	wantSeq := "approval_requested:call_1 call_approved:call_1 shell:call_1 approval_requested:call_2 call_denied:call_2 approval_requested:call_3 task_canceled:input"
	if strings.Join(seq, " ") != wantSeq {
		t.Errorf("lines %s\nwant  %s", strings.Join(seq, " "), wantSeq)
	}
	if a := lastOf(lines, trace.TypeCallApproved); a == nil || a.Str("message_id") != "op-1" {
		t.Errorf("call_approved %v", a)
	}
	if d := lastOf(lines, trace.TypeCallDenied); d == nil || d.Str("by") != "operator" || d.Str("reason") != "the operator denied it: not today" || d.Fields["hook"] != nil && string(d.Fields["hook"]) != "null" {
		t.Errorf("call_denied %v", d)
	}
}

// No operator answer within lifecycle.input_timeout_secs refuses the call
// (call_denied by timeout) and the task goes on to its end.
func TestGateApprovalTimesOut(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	transcript := `version: 1
responses:
  - content:
      - {type: tool_call, id: call_1, name: bash, input: {command: "echo late"}}
  - content:
      - {type: text, text: "Done."}
`
	proj := gatedCapsule(t, homeDir, base, transcript, "tools:\n  bash: {approval: required}\nlifecycle:\n  input_timeout_secs: 1\n")
	roost := startRoost(t, homeDir, "--spawn-allow", "local/gated")
	r := runMur(t, homeDir, proj, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "go")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	lines := traceLines(t, parseReady(t, r.Stdout).RecordsDir)
	if got := string(lines[0].Fields["input_timeout_secs"]); got != "1" {
		t.Errorf("session_start.input_timeout_secs %s", got)
	}
	d := lastOf(lines, trace.TypeCallDenied)
	if d == nil || d.Str("by") != "timeout" || d.Str("reason") != "no operator answered within lifecycle.input_timeout_secs (1s)" {
		t.Fatalf("call_denied %v\n%s", d, types(lines))
	}
	if lastOf(lines, trace.TypeShell) != nil || lastEnd(t, lines).Str("exit_status") != "ok" || lastEnd(t, lines).Int("calls_denied") != 1 {
		t.Errorf("trace %s, session_end %v", types(lines), lastEnd(t, lines).Fields)
	}
}

// request-input is bounded by lifecycle.input_timeout_secs too: with no
// reply in time the waiting tool's call ends with E-RUN-064 and the task
// goes on to its end.
func TestGateRequestInputTimesOut(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	transcript := `version: 1
responses:
  - content:
      - {type: tool_call, id: call_ask, name: echo, input: {ask: "what is your name?"}}
  - content:
      - {type: text, text: "Nobody answered."}
`
	proj := agentProject(t, homeDir, base, "lifecycle:\n  input_timeout_secs: 1\n", transcript)
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "ask")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	lines := traceLines(t, parseReady(t, r.Stdout).RecordsDir)
	tc := lastOf(lines, trace.TypeToolCall)
	want := "error[E-RUN-064]: tool acme/echo: no reply to request-input within lifecycle.input_timeout_secs (1s)"
	if tc == nil || tc.Str("status") != "error" || tc.Str("error") != want {
		t.Errorf("tool_call %v\nwant the error %q", tc, want)
	}
	if end := lastEnd(t, lines); end.Str("exit_status") != "ok" {
		t.Errorf("session_end %v", end.Fields)
	}
}
