package e2e_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/murmur-go/murmur/internal/e2e"
	"github.com/murmur-go/murmur/internal/trace"
)

// The policy gate across the other features merged beside it: a plan's
// tool, shell and capsule steps, an MCP server's tools and submit-plan's
// own approval, each through the real binaries (docs/policy.md, docs/plans.md,
// docs/mcp.md). The probe hook's answer is picked by the first "policy:<mode>"
// marker in a call's input, so a plan that must pass submit-plan's own check
// names "policy:ok" before any "policy:deny" of its later steps.

// crossProject writes and publishes an agent capsule driven by the replay
// transcript that declares acme/echo and the probe hooks named, with rest
// (capabilities, tools, lifecycle) at the end.
func crossProject(t *testing.T, homeDir, base, name, transcript, rest string, hooks ...string) string {
	t.Helper()
	publishTool(t, homeDir, filepath.Join(base, "echo"), "tool-echo", "name: acme/echo\nversion: 1.0.0\nruntime: tool\n")
	var hs strings.Builder
	for _, h := range hooks {
		publishProbe(t, homeDir, base, h)
		fmt.Fprintf(&hs, "  - name: local/%s\n    version: 0.1.0\n    runtime: hook\n", h)
	}
	proj := filepath.Join(base, name)
	os.MkdirAll(proj, 0o755)
	tp := filepath.Join(proj, "transcript.yaml")
	os.WriteFile(tp, []byte(transcript), 0o644)
	m := "name: " + name + `
version: 0.1.0
artifacts:
  - name: murmur/driver-replay
    version: 1.0.0
    runtime: driver
    config:
      transcript: ` + tp + `
  - name: acme/echo
    version: 1.0.0
` + hs.String() + `inference:
  model: replay
  driver:
    artifact: murmur/driver-replay
  system_prompt: Work.
` + rest
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte(m), 0o644)
	e2e.PublishDir(t, homeDir, proj)
	return proj
}

// checkCalls counts the hook_call lines of event check-call, by output.
func checkCalls(lines []trace.Line) map[string]int {
	n := map[string]int{}
	for _, l := range byType(lines, trace.TypeHookCall) {
		if l.Str("event") == "check-call" {
			n[l.Str("status")+"/"+l.Str("output")]++
		}
	}
	return n
}

// A plan whose second step a policy hook denies: the step fails with the
// E-RUN-092 text after one attempt (its retries are not spent), one
// call_denied line under its plan_step_start carries plan_id and step_id,
// and the step has no tool_call or shell line (nor a shell log). on_error
// decides what follows: fail stops the plan, continue lets later steps run.
// The denied steps count in calls_denied, not in tool_calls or shell_calls.
func TestCrossPlanStepDeniedByPolicy(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	stop := jsonObj{"id": "stop", "steps": []jsonObj{
		{"id": "a", "tool": "echo", "input": jsonObj{"message": "policy:ok first"}},
		{"id": "b", "tool": "echo", "input": jsonObj{"message": "policy:deny"}, "depends_on": []string{"a"}, "retries": 2},
		{"id": "c", "shell": "bash -c 'printf after'", "depends_on": []string{"b"}},
	}}
	cont := jsonObj{"id": "cont", "steps": []jsonObj{
		{"id": "a", "shell": "bash -c 'printf policy:ok'"},
		{"id": "b", "shell": "bash -c 'echo policy:deny'", "depends_on": []string{"a"}, "on_error": "continue", "retries": 1},
		{"id": "c", "tool": "echo", "input": jsonObj{"message": "b was $b.status"}, "depends_on": []string{"b"}},
	}}
	proj := crossProject(t, homeDir, base, "planner", planTranscript(t, stop, cont), planGrant, "probe")
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "plan")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)

	denied := map[string]trace.Line{}
	for _, l := range byType(lines, trace.TypeCallDenied) {
		denied[l.Str("plan_id")+"."+l.Str("step_id")] = l
	}
	if len(denied) != 2 {
		t.Fatalf("call_denied lines %v\n%s", keys(denied), types(lines))
	}
	ran := map[string]string{}
	for _, l := range lines {
		if (l.EventType == trace.TypeToolCall || l.EventType == trace.TypeShell) && l.Str("plan_id") != "" {
			ran[l.Str("plan_id")+"."+l.Str("step_id")] += l.EventType + " "
		}
	}
	for _, c := range []struct {
		plan, kind, tool, onError, next, nextStatus, outcome string
	}{
		{"stop", "wasm", "echo", "fail", "c", "skipped", "failed"},
		{"cont", "shell", "bash", "continue", "c", "success", "completed"},
	} {
		starts, ends := stepLines(lines, c.plan)
		why := "the policy hook local/probe denied it: probe denies " + c.tool
		b := ends["b"]
		if b.Str("status") != "failed" || b.Int("attempts") != 1 || b.Str("error") != "error[E-RUN-092]: "+c.tool+" was not run: "+why {
			t.Errorf("%s: the denied step (on_error %s) %v", c.plan, c.onError, b.Fields)
		}
		d := denied[c.plan+".b"]
		if d.Str("kind") != c.kind || d.Str("tool_name") != c.tool || d.Str("by") != "hook" || d.Str("hook") != "local/probe" ||
			d.Str("reason") != why || d.Str("tool_call_id") != "call_"+map[string]string{"stop": "a", "cont": "b"}[c.plan]+".b.1" ||
			d.Str("parent_id") != starts["b"].Str("event_id") || d.Str("parent_id") == "" {
			t.Errorf("%s: call_denied %v", c.plan, d.Fields)
		}
		if c.kind == "shell" && !strings.HasSuffix(d.Str("binary"), "/bash") {
			t.Errorf("%s: call_denied.binary %q", c.plan, d.Str("binary"))
		}
		if got := ran[c.plan+".b"]; got != "" {
			t.Errorf("%s: the denied step wrote %s", c.plan, got)
		}
		if ends["a"].Str("status") != "success" || ends[c.next].Str("status") != c.nextStatus {
			t.Errorf("%s: steps a %v, %s %v", c.plan, ends["a"].Fields, c.next, ends[c.next].Fields)
		}
		if pe := planEnd(lines, c.plan); pe.Str("outcome") != c.outcome || pe.Int("steps_failed") != 1 {
			t.Errorf("%s: plan_end %v", c.plan, pe.Fields)
		}
	}
	_, stopEnds := stepLines(lines, "stop")
	if e := stopEnds["c"].Str("error"); e != "not run: step b failed and stopped the plan" {
		t.Errorf("stop.c's error %q", e)
	}
	if pe := planEnd(lines, "stop"); pe.Str("failed_step") != "b" {
		t.Errorf("stop: plan_end %v", pe.Fields)
	}
	if got := ran["cont.c"]; got != "tool_call " {
		t.Errorf("cont.c wrote %q", got)
	}
	for _, l := range byType(lines, trace.TypeToolCall) {
		if l.Str("step_id") == "c" && l.Str("plan_id") == "cont" && l.Str("status") != "ok" {
			t.Errorf("cont.c %v", l.Fields)
		}
	}
	if _, err := os.Stat(filepath.Join(rd.RecordsDir, "logs", "shell", "call_b.b.1.log")); err == nil {
		t.Error("the denied shell step left a shell log")
	}
	// Asked once per attempt that reached the gate: the two submit-plan
	// calls, stop.a and stop.b (not retried), cont.a, cont.b, cont.c.
	if got := checkCalls(lines); got["ok/allow"] != 5 || got["ok/deny"] != 2 || len(got) != 2 {
		t.Errorf("check-call lines %v", got)
	}
	// The task's totals: submit-plan ×2, stop.a and cont.c are tool calls
	// (stop's submit-plan the one tool error: E-RUN-091); cont.a the one
	// shell call; the two denied steps only in calls_denied.
	te := lastOf(lines, trace.TypeTaskEnd)
	if te.Int("calls_denied") != 2 || te.Int("tool_calls") != 4 || te.Int("tool_errors") != 1 || te.Int("shell_calls") != 1 ||
		lastEnd(t, lines).Int("calls_denied") != 2 {
		t.Errorf("task_end %v", te.Fields)
	}
}

// roostRecorder stands in front of a real mur-roost and records each
// request's method and path.
type roostRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *roostRecorder) requests() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.seen, " ")
}

func recordRoost(t *testing.T, roost string) (string, *roostRecorder) {
	t.Helper()
	u, err := url.Parse(roost)
	if err != nil {
		t.Fatal(err)
	}
	rec := &roostRecorder{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rec.mu.Lock()
		rec.seen = append(rec.seen, req.Method+" "+req.URL.Path)
		rec.mu.Unlock()
		proxy.ServeHTTP(w, req)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), rec
}

// A plan's capsule step is gated as delegate-task (kind runtime, input
// {"capsule","version","task"}, with plan-id and step-id): a denied one
// makes no POST /spawn and no delegation_start, fails with the E-RUN-092
// text, and writes a call_denied line under its step; the allowed one in
// the same plan reaches mur-roost and its child.
func TestCrossPlanCapsuleStepDeniedByPolicy(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: sleep\n", workerTranscript)
	p := jsonObj{"id": "dlg", "steps": []jsonObj{
		{"id": "ok", "capsule": "worker", "input": jsonObj{"version": "1.0.0", "task": "policy:ok find three things"}},
		{"id": "no", "capsule": "worker", "input": jsonObj{"version": "1.0.0", "task": "policy:deny this one"}, "depends_on": []string{"ok"}, "retries": 1},
	}}
	proj := crossProject(t, homeDir, base, "orch", planTranscript(t, p),
		"capabilities:\n  plan:\n    submit: true\n  spawn:\n    allow: [local/worker]\n", "probe")
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	front, rec := recordRoost(t, roost)
	r := runMur(t, homeDir, proj, []string{"MURMUR_ROOST_URL=" + front}, "run", "--json", "--task", "delegate by plan")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	starts, ends := stepLines(lines, "dlg")
	why := "the policy hook local/probe denied it: probe denies delegate-task"
	if ok := ends["ok"]; ok.Str("status") != "success" {
		t.Errorf("the allowed capsule step %v", ok.Fields)
	}
	no := ends["no"]
	if no.Str("status") != "failed" || no.Int("attempts") != 1 || no.Str("error") != "error[E-RUN-092]: delegate-task was not run: "+why ||
		string(no.Fields["call_ids"]) != "[]" {
		t.Errorf("the denied capsule step %v", no.Fields)
	}
	d := lastOf(lines, trace.TypeCallDenied)
	if d == nil || len(byType(lines, trace.TypeCallDenied)) != 1 || d.Str("kind") != "runtime" || d.Str("tool_name") != "delegate-task" ||
		d.Str("reason") != why || d.Str("plan_id") != "dlg" || d.Str("step_id") != "no" || d.Str("tool_call_id") != "call_a.no.1" ||
		d.Str("parent_id") != starts["no"].Str("event_id") {
		t.Fatalf("call_denied %v\n%s", d, types(lines))
	}
	ds := byType(lines, trace.TypeDelegationStart)
	if len(ds) != 1 || ds[0].Str("step_id") != "ok" {
		t.Errorf("delegation_start lines %v: the denied step delegated?", ds)
	}
	for _, l := range byType(lines, trace.TypeDelegation) {
		if l.Str("step_id") == "no" {
			t.Errorf("the denied step has a delegation line %v", l.Fields)
		}
	}
	t.Logf("mur-roost was asked: %s", rec.requests())
	if spawns := strings.Count(rec.requests(), "POST /spawn"); spawns != 1 {
		t.Errorf("%d POST /spawn reached mur-roost, want the allowed step's one: %s", spawns, rec.requests())
	}
	if pe := planEnd(lines, "dlg"); pe.Str("outcome") != "failed" || pe.Str("failed_step") != "no" {
		t.Errorf("plan_end %v", pe.Fields)
	}
	if te := lastOf(lines, trace.TypeTaskEnd); te.Int("calls_denied") != 1 {
		t.Errorf("task_end %v", te.Fields)
	}
	waitFor(t, "the child to end", func() bool {
		recs, _ := os.ReadDir(filepath.Join(homeDir, ".murmur", "running"))
		return len(recs) == 0
	})
}

// An MCP tool's call passes the policy hooks as kind mcp: a denied one
// never reaches the server (no tools/call: the server's log and call count
// show only the allowed one), writes call_denied with kind mcp and no
// tool_call line; the allowed one is asked about, allowed and runs.
func TestCrossMCPCallDeniedByPolicy(t *testing.T) {
	dir := mcpbad(t)
	homeDir, base := t.TempDir(), t.TempDir()
	publishProbe(t, homeDir, base, "probe")
	transcript := calls(
		`mcp__bad__probe, input: {path: "/nonexistent/policy:deny"}`,
		`mcp__bad__probe, input: {path: "/nonexistent/allowed-one"}`,
	)
	proj := mcpProject(t, transcript, badEntry(dir, "ok", "probe", "")+"  - name: local/probe\n    version: 0.1.0\n    runtime: hook\n", "")
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "go")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	d := byType(lines, trace.TypeCallDenied)
	if len(d) != 1 || d[0].Str("kind") != "mcp" || d[0].Str("tool_name") != "mcp__bad__probe" || d[0].Str("tool_call_id") != "call_1" ||
		d[0].Str("by") != "hook" || d[0].Str("reason") != "the policy hook local/probe denied it: probe denies mcp__bad__probe" {
		t.Fatalf("call_denied %v\n%s", d, types(lines))
	}
	c := toolCalls(lines)
	if len(c) != 1 || c[0].Str("tool_call_id") != "call_2" || c[0].Str("kind") != "mcp" || c[0].Str("status") != "ok" || c[0].Str("server") != "bad" {
		t.Fatalf("tool_call lines %v", c)
	}
	// The allowed call reached the hook (which the call's kind mcp had to
	// be lowered for) and was allowed.
	if got := checkCalls(lines); got["ok/allow"] != 1 || got["ok/deny"] != 1 || len(got) != 2 {
		t.Errorf("check-call lines %v", got)
	}
	if e := lastOf(lines, trace.TypeMCPServerEnd); e == nil || e.Int("calls") != 1 {
		t.Errorf("mcp_server_end %v: the denied call reached the server?", e)
	}
	if out := probeText(t, rd.RecordsDir); strings.Contains(out, "policy:deny") || !strings.Contains(out, "read /nonexistent/allowed-one: refused") {
		t.Errorf("what the server was asked:\n%s", out)
	}
	if te := lastOf(lines, trace.TypeTaskEnd); te.Int("calls_denied") != 1 || te.Int("tool_calls") != 1 {
		t.Errorf("task_end %v", te.Fields)
	}
}

// tools.submit-plan.approval: required asks the operator once for a plan
// that passed validation, and never for one that did not: the invalid plan
// is refused (E-RUN-090) with no approval_requested and the task does not
// wait; the valid one waits in INPUT_REQUIRED, naming submit-plan, and
// "approve" runs its steps, which are not asked about again.
func TestCrossSubmitPlanApproval(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	bad := jsonObj{"id": "bad", "steps": []jsonObj{{"id": "q", "shell": "rm -rf /"}}}
	good := jsonObj{"id": "good", "steps": []jsonObj{
		{"id": "s", "shell": "bash -c 'printf ran'"},
		{"id": "t", "tool": "echo", "input": jsonObj{"message": "$s.output"}, "depends_on": []string{"s"}},
	}}
	proj := crossProject(t, homeDir, base, "approver", planTranscript(t, bad, good),
		planGrant+"tools:\n  submit-plan: {approval: required}\nlifecycle:\n  after_task: sleep\n")
	cmd, out, stderr := startMur(t, homeDir, proj, "run", "--json")
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	rd := readReady(t, out)
	url := "http://" + *rd.URL
	res := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"plan"}]}}}`)
	task, _ := res["result"].(map[string]any)["task"].(map[string]any)
	if task == nil || task["status"].(map[string]any)["state"] != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("not waiting for approval: %v (stderr %s)", res, stderr)
	}
	parts := task["status"].(map[string]any)["message"].(map[string]any)["parts"].([]any)
	if text := parts[0].(map[string]any)["text"].(string); !strings.HasPrefix(text, "approval required: submit-plan (call call_b)\ninput: {") ||
		!strings.Contains(text, `"id":"good"`) {
		t.Errorf("the question:\n%s", text)
	}
	// By the time the valid plan waits, the invalid one was refused unasked.
	lines := traceLines(t, rd.RecordsDir)
	if pe := planEnd(lines, "bad"); pe.Str("outcome") != "refused" {
		t.Errorf("the invalid plan: %v\n%s", pe.Fields, types(lines))
	}
	res = rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"op-1","taskId":"`+task["id"].(string)+`","role":"ROLE_USER","parts":[{"text":"approve"}]}}}`)
	if fmt.Sprint(res["error"]) != "<nil>" {
		t.Fatalf("approve: %v", res)
	}
	waitLines(t, rd.RecordsDir, trace.TypeTaskEnd, 1, stderr)
	lines = traceLines(t, rd.RecordsDir)
	var seq []string
	for _, l := range lines {
		switch l.EventType {
		case trace.TypeApprovalRequested, trace.TypeCallApproved, trace.TypeCallDenied:
			seq = append(seq, l.EventType+":"+l.Str("tool_name")+":"+l.Str("tool_call_id"))
		case "plan_start", "plan_end":
			seq = append(seq, l.EventType+":"+l.Str("plan_id"))
		}
	}
	if got := strings.Join(seq, " "); got != "plan_end:bad approval_requested:submit-plan:call_b call_approved:submit-plan:call_b plan_start:good plan_end:good" {
		t.Errorf("lines %s", got)
	}
	calls := map[string]trace.Line{}
	for _, l := range byType(lines, trace.TypeToolCall) {
		if l.Str("tool_name") == "submit-plan" {
			calls[l.Str("tool_call_id")] = l
		}
	}
	if !strings.HasPrefix(calls["call_a"].Str("error"), "E-RUN-090 ") || calls["call_b"].Str("status") != "ok" {
		t.Errorf("submit-plan lines %v", calls)
	}
	_, ends := stepLines(lines, "good")
	if ends["s"].Str("status") != "success" || ends["t"].Str("status") != "success" {
		t.Errorf("steps %v %v", ends["s"].Fields, ends["t"].Fields)
	}
	if pe := planEnd(lines, "good"); pe.Str("outcome") != "completed" {
		t.Errorf("plan_end %v", pe.Fields)
	}
}

// A plan step's gate is asked once per step, not per attempt: a retried
// shell step under a policy hook and tools.bash.approval: required is asked
// about and approved once, and its retry runs without a second question
// (with lifecycle.input_timeout_secs a second, unanswered question would
// deny the retry).
func TestCrossPlanRetryAskedOnce(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	p := jsonObj{"id": "p", "steps": []jsonObj{
		{"id": "r", "shell": "bash -c 'exit 1'", "retries": 1, "on_error": "continue"},
	}}
	proj := crossProject(t, homeDir, base, "retrier", planTranscript(t, p),
		planGrant+"tools:\n  bash: {approval: required}\nlifecycle:\n  after_task: sleep\n  input_timeout_secs: 3\n", "probe")
	cmd, out, stderr := startMur(t, homeDir, proj, "run", "--json")
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	rd := readReady(t, out)
	url := "http://" + *rd.URL
	res := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"plan"}]}}}`)
	task, _ := res["result"].(map[string]any)["task"].(map[string]any)
	if task == nil || task["status"].(map[string]any)["state"] != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("not waiting for approval: %v (stderr %s)", res, stderr)
	}
	parts := task["status"].(map[string]any)["message"].(map[string]any)["parts"].([]any)
	if text := parts[0].(map[string]any)["text"].(string); !strings.HasPrefix(text, "approval required: bash (call call_a.r.1)\nplan p, step r\n") {
		t.Errorf("the question:\n%s", text)
	}
	rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"op-1","taskId":"`+task["id"].(string)+`","role":"ROLE_USER","parts":[{"text":"approve"}]}}}`)
	waitLines(t, rd.RecordsDir, trace.TypeTaskEnd, 1, stderr)
	lines := traceLines(t, rd.RecordsDir)
	_, ends := stepLines(lines, "p")
	if r := ends["r"]; r.Str("status") != "failed" || r.Int("attempts") != 2 || r.Str("error") != "exit code 1" {
		t.Errorf("step r %v", r.Fields)
	}
	var seq []string
	for _, l := range lines {
		switch l.EventType {
		case trace.TypeApprovalRequested, trace.TypeCallApproved, trace.TypeCallDenied, trace.TypeShell:
			seq = append(seq, l.EventType+":"+l.Str("tool_call_id"))
		}
	}
	if got := strings.Join(seq, " "); got != "approval_requested:call_a.r.1 call_approved:call_a.r.1 shell:call_a.r.1 shell:call_a.r.2" {
		t.Errorf("lines %s", got)
	}
	// The hook: asked about submit-plan and the step, once each.
	if got := checkCalls(lines); got["ok/allow"] != 2 || len(got) != 1 {
		t.Errorf("check-call lines %v", got)
	}
}
