package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/e2e"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/trace"
)

// planTranscript is a replay transcript whose model submits each plan in
// turn (one submit-plan call a turn), then answers.
func planTranscript(t *testing.T, plans ...any) string {
	t.Helper()
	type block struct {
		Type  string `json:"type"`
		ID    string `json:"id,omitempty"`
		Name  string `json:"name,omitempty"`
		Input any    `json:"input,omitempty"`
		Text  string `json:"text,omitempty"`
	}
	type resp struct {
		Content []block `json:"content"`
	}
	var rs []resp
	for i, p := range plans {
		rs = append(rs, resp{Content: []block{{Type: "tool_call", ID: "call_" + string(rune('a'+i)), Name: "submit-plan", Input: p}}})
	}
	rs = append(rs, resp{Content: []block{{Type: "text", Text: "planned"}}})
	b, err := json.Marshal(map[string]any{"version": 1, "responses": rs})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type jsonObj = map[string]any

const planGrant = "capabilities:\n  plan:\n    submit: true\n  shell:\n    allow: [bash]\n"

// stepLines maps step id → its plan_step_start and plan_step lines.
func stepLines(lines []trace.Line, planID string) (starts, ends map[string]trace.Line) {
	starts, ends = map[string]trace.Line{}, map[string]trace.Line{}
	for _, l := range lines {
		if l.Str("plan_id") != planID {
			continue
		}
		switch l.Str("event_type") {
		case "plan_step_start":
			starts[l.Str("step_id")] = l
		case "plan_step":
			ends[l.Str("step_id")] = l
		}
	}
	return starts, ends
}

// One session, three plans: a graph of tool and shell steps (the diamond's
// middle at once, substitution, conditions both ways, on_error continue and
// skip, retries), a plan a fail step stops, and a refused plan; a last plan
// copies the records out of the runtime dir.
func TestPlanRunsAGraph(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	graph := jsonObj{"id": "graph", "steps": []jsonObj{
		{"id": "a", "tool": "echo", "input": jsonObj{"message": "hello"}},
		{"id": "b", "shell": "bash -c 'sleep 0.6; printf left'", "depends_on": []string{"a"}},
		{"id": "c", "shell": "bash -c 'sleep 0.6; printf right'", "depends_on": []string{"a"}},
		{"id": "d", "tool": "acme/echo", "input": jsonObj{"message": "$b.output+$c.output ($a.status)"}, "depends_on": []string{"b", "c"}},
		{"id": "e", "shell": "bash -c 'printf yes'", "depends_on": []string{"d"}, "if": `$d.status == "success" && $d.output != ''`},
		{"id": "f", "shell": "bash -c 'printf no'", "depends_on": []string{"d"}, "if": `$d.status == 'failed'`},
		{"id": "g", "shell": "bash -c 'echo oops >&2; exit 3'", "retries": 1, "on_error": "continue"},
		{"id": "h", "shell": "bash -c 'exit 1'", "on_error": "skip"},
		{"id": "k", "capsule": "worker", "input": jsonObj{"version": "1.0.0", "task": "sum up $d.output"}, "depends_on": []string{"d"}, "on_error": "continue"},
	}}
	stop := jsonObj{"id": "stop", "steps": []jsonObj{
		{"id": "x", "shell": "bash -c 'printf partial; exit 1'"},
		{"id": "y", "tool": "echo", "input": jsonObj{"message": "$x.status"}, "depends_on": []string{"x"}},
	}}
	refused := jsonObj{"id": "bad", "steps": []jsonObj{{"id": "p", "tool": "submit-plan"}, {"id": "q", "shell": "rm -rf /"}}}
	copyOut := jsonObj{"id": "copy", "steps": []jsonObj{{"id": "cp", "shell": `bash -c 'cp -r "$MURMUR_RUNTIME_DIR/plans" ./plans-copy'`}}}
	proj := agentProject(t, homeDir, base, planGrant, planTranscript(t, graph, stop, refused, copyOut))
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "plan")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	if td := string(lines[0].Fields["tools_declared"]); !strings.Contains(td, `"submit-plan"`) {
		t.Errorf("tools_declared %s", td)
	}
	if eg := string(lines[0].Fields["effective_grants"]); !strings.Contains(eg, `"plan":{"submit":true}`) {
		t.Errorf("effective_grants %s", eg)
	}

	// The graph: every step's status, the middle of the diamond at once.
	starts, ends := stepLines(lines, "graph")
	want := map[string]string{"a": "success", "b": "success", "c": "success", "d": "success", "e": "success", "f": "skipped", "g": "failed", "h": "skipped", "k": "failed"}
	for id, st := range want {
		if ends[id].Str("status") != st {
			t.Errorf("step %s: %v", id, ends[id].Fields)
		}
	}
	b0, b1, c0, c1 := starts["b"].Int("timestamp"), ends["b"].Int("timestamp"), starts["c"].Int("timestamp"), ends["c"].Int("timestamp")
	if !(b0 < c1 && c0 < b1) {
		t.Errorf("b [%d,%d] and c [%d,%d] did not overlap", b0, b1, c0, c1)
	}
	t.Logf("diamond: b ran 0..%d ms, c ran %d..%d ms (overlap %d ms)", b1-b0, c0-b0, c1-b0, min(b1, c1)-max(b0, c0))
	if _, ok := starts["f"]; ok || ends["f"].Int("attempts") != 0 || string(ends["f"].Fields["error"]) != "null" {
		t.Errorf("a false if: %v", ends["f"].Fields)
	}
	if g := ends["g"]; g.Int("attempts") != 2 || g.Str("error") != "exit code 3: oops\n" || !strings.Contains(string(g.Fields["call_ids"]), `["call_a.g.1","call_a.g.2"]`) {
		t.Errorf("retried step: %v", g.Fields)
	}
	if h := ends["h"]; h.Str("error") != "exit code 1" || h.Int("attempts") != 1 {
		t.Errorf("skip step: %v", h.Fields)
	}
	// A capsule step in a session without MURMUR_ROOST_URL: the spec's sentence.
	if k := ends["k"]; k.Str("error") != "MURMUR_ROOST_URL is not set; capsule steps require mur-roost" || string(k.Fields["output_bytes"]) != "null" {
		t.Errorf("capsule step: %v", k.Fields)
	}
	// The attempts' own lines under their step, with the plan fields.
	var dLine *trace.Line
	for i, l := range lines {
		if l.Str("tool_call_id") == "call_a.d.1" {
			dLine = &lines[i]
		}
	}
	if dLine == nil || dLine.Str("event_type") != "tool_call" || dLine.Str("parent_id") != starts["d"].Str("event_id") ||
		dLine.Str("plan_id") != "graph" || dLine.Str("step_id") != "d" || dLine.Int("attempt") != 1 {
		t.Fatalf("step d's tool_call: %+v", dLine)
	}
	pe := planEnd(lines, "graph")
	if pe.Str("outcome") != "completed" || pe.Int("steps_succeeded") != 5 || pe.Int("steps_failed") != 2 || pe.Int("steps_skipped") != 2 || string(pe.Fields["failed_step"]) != "null" {
		t.Errorf("plan_end %v", pe.Fields)
	}

	// The stopped plan.
	_, ends = stepLines(lines, "stop")
	if ends["x"].Str("status") != "failed" || ends["y"].Str("status") != "skipped" || ends["y"].Str("error") != "not run: step x failed and stopped the plan" {
		t.Errorf("stop: %v %v", ends["x"].Fields, ends["y"].Fields)
	}
	if pe := planEnd(lines, "stop"); pe.Str("outcome") != "failed" || pe.Str("failed_step") != "x" {
		t.Errorf("plan_end %v", pe.Fields)
	}
	// The refused plan: a lone plan_end, nothing run.
	if pe := planEnd(lines, "bad"); pe.Str("outcome") != "refused" || pe.Str("reason") != "2 validation errors" {
		t.Errorf("refused plan_end %v", pe.Fields)
	}
	if _, ends := stepLines(lines, "bad"); len(ends) != 0 {
		t.Errorf("a refused plan ran steps")
	}
	// The submit-plan calls' own lines: the stopped and the refused plans
	// are error results with their codes.
	calls := map[string]trace.Line{}
	for _, l := range byType(lines, "tool_call") {
		if l.Str("tool_name") == "submit-plan" {
			calls[l.Str("tool_call_id")] = l
		}
	}
	if calls["call_a"].Str("status") != "ok" || calls["call_a"].Str("kind") != "runtime" ||
		!strings.HasPrefix(calls["call_b"].Str("error"), "E-RUN-091 ") || !strings.HasPrefix(calls["call_c"].Str("error"), "E-RUN-090 ") {
		t.Errorf("submit-plan lines: %v", calls)
	}
	// The task's totals count the steps' calls: tool steps a, d, y(none: skipped) and the
	// four submit-plan calls; shell steps b, c, e, g×2, h, x, cp.
	te := lastOf(lines, "task_end")
	if te.Int("tool_calls") != 6 || te.Int("shell_calls") != 8 || te.Int("tool_errors") != 2 {
		t.Errorf("task_end %v", te.Fields)
	}

	// The records, copied out of the runtime dir by the last plan.
	var rec struct {
		Plan   jsonObj `json:"plan"`
		Report struct {
			PlanID     string  `json:"plan_id"`
			File       string  `json:"file"`
			Completed  bool    `json:"completed"`
			FailedStep *string `json:"failed_step"`
			Errors     []string
			Steps      []struct {
				StepID, Kind, Status string
				Attempts             int
				Output, Error        *string
			}
		} `json:"report"`
	}
	b, err := os.ReadFile(filepath.Join(rd.Workdir, "plans-copy", "plan-1.json"))
	if err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("plan-1.json: %v %s", err, b)
	}
	if rec.Plan["id"] != "graph" || rec.Report.File != "plans/plan-1.json" || !rec.Report.Completed || len(rec.Report.Steps) != 9 {
		t.Fatalf("plan-1.json %s", b)
	}
	if d := rec.Report.Steps[3]; d.Output == nil || !strings.Contains(*d.Output, "left+right (success)") {
		t.Errorf("substituted output of d: %+v", d)
	}
	b, _ = os.ReadFile(filepath.Join(rd.Workdir, "plans-copy", "plan-3.json"))
	if err := json.Unmarshal(b, &rec); err != nil || rec.Report.Errors[0] != "step p: a plan cannot submit a plan" ||
		rec.Report.Errors[1] != `step q: "rm" is not in capabilities.shell.allow (bash)` || len(rec.Report.Steps) != 0 {
		t.Errorf("plan-3.json %s", b)
	}
	b, _ = os.ReadFile(filepath.Join(rd.Workdir, "plans-copy", "plan-4.json"))
	if !strings.Contains(string(b), `"report":null`) {
		t.Errorf("a running plan's file: %s", b)
	}

	// mur trace show lists each plan under its task.
	show := runMur(t, homeDir, proj, nil, "trace", "show", rd.SessionID)
	for _, want := range []string{"plan graph: completed", "plan stop: failed", "failed step x", "plan bad: refused"} {
		if !strings.Contains(show.Stdout, want) {
			t.Errorf("trace show lacks %q:\n%s", want, show.Stdout)
		}
	}
}

func planEnd(lines []trace.Line, id string) trace.Line {
	for _, l := range byType(lines, "plan_end") {
		if l.Str("plan_id") == id {
			return l
		}
	}
	return trace.Line{}
}

// 50 plans in one session leave no process and no descriptor behind: after
// 49 more plans the mur process holds as many descriptors and children as
// after its first.
func TestPlanFiftyPlansLeakNothing(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	var calls []string
	for i := 1; i <= 50; i++ {
		steps := []jsonObj{
			{"id": "t", "tool": "echo", "input": jsonObj{"message": "n"}},
			{"id": "s", "shell": "bash -c 'printf %s \"$0\"' $t.output", "depends_on": []string{"t"}},
			{"id": "u", "shell": "bash -c 'exit 1'", "on_error": "continue"},
		}
		b, _ := json.Marshal(jsonObj{"id": "p", "steps": steps})
		calls = append(calls, `{"type":"tool_call","id":"c`+itoa(i)+`","name":"submit-plan","input":`+string(b)+`}`)
	}
	text := `{"content":[{"type":"text","text":"done"}]}`
	// Task 1: one plan. Task 2: 49 plans, 10 a turn.
	turns := []string{`{"content":[` + calls[0] + `]}`, text}
	for i := 1; i < 50; i += 10 {
		turns = append(turns, `{"content":[`+strings.Join(calls[i:min(i+10, 50)], ",")+`]}`)
	}
	turns = append(turns, text)
	proj := agentProject(t, homeDir, base, planGrant+"lifecycle:\n  after_task: sleep\n", `{"version":1,"responses":[`+strings.Join(turns, ",")+`]}`)
	cmd, out, _ := startMur(t, homeDir, proj, "run", "--json")
	rd := readReady(t, out)
	url := "http://" + *rd.URL
	pid := cmd.Process.Pid
	measure := func() (fds, children int) {
		ents, _ := os.ReadDir(filepath.Join("/proc", itoa(pid), "fd"))
		tasks, _ := os.ReadDir(filepath.Join("/proc", itoa(pid), "task"))
		for _, tk := range tasks {
			b, _ := os.ReadFile(filepath.Join("/proc", itoa(pid), "task", tk.Name(), "children"))
			children += len(strings.Fields(string(b)))
		}
		return len(ents), children
	}
	send := func(id string) {
		res := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"`+id+`","role":"ROLE_USER","parts":[{"text":"plan"}]}}}`)
		task, _ := res["result"].(map[string]any)["task"].(map[string]any)
		if task == nil || task["status"].(map[string]any)["state"] != "TASK_STATE_COMPLETED" {
			t.Fatalf("SendMessage: %v", res)
		}
	}
	send("m1")
	fds1, kids1 := measure()
	send("m2")
	fds2, kids2 := measure()
	t.Logf("mur (pid %d): descriptors %d → %d, child processes %d → %d", pid, fds1, fds2, kids1, kids2)
	if fds1 != fds2 || kids1 != kids2 || fds1 == 0 {
		t.Errorf("after 49 more plans: descriptors %d → %d, child processes %d → %d", fds1, fds2, kids1, kids2)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	lines := traceLines(t, rd.RecordsDir)
	ends := byType(lines, "plan_end")
	if len(ends) != 50 {
		t.Fatalf("%d plan_end lines", len(ends))
	}
	for _, e := range ends {
		if e.Str("outcome") != "completed" || e.Int("steps_succeeded") != 2 || e.Int("steps_failed") != 1 {
			t.Fatalf("plan_end %v", e.Fields)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// examples/plan runs offline: a tool step, two shell steps, a tool step fed
// two outputs, and a capsule step whose if is false.
func TestPlanExample(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	copyDir(t, filepath.Join(repoRoot(), "examples", "echo-tool"), filepath.Join(base, "echo-tool"))
	e2e.PublishDir(t, homeDir, filepath.Join(base, "echo-tool"))
	proj := filepath.Join(base, "plan")
	copyDir(t, filepath.Join(repoRoot(), "examples", "plan"), proj)
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "tidy up")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	_, ends := stepLines(lines, "tidy")
	for id, want := range map[string]string{"greet": "success", "system": "success", "check": "success", "report": "success", "escalate": "skipped"} {
		if ends[id].Str("status") != want {
			t.Errorf("step %s: %v", id, ends[id].Fields)
		}
	}
	if pe := planEnd(lines, "tidy"); pe.Str("outcome") != "completed" {
		t.Errorf("plan_end %v", pe.Fields)
	}
	// The report step's input held both outputs: echo-tool's and uname's.
	var report trace.Line
	for _, l := range byType(lines, "tool_call") {
		if l.Str("step_id") == "report" {
			report = l
		}
	}
	if min := len(`{"greeting":"\"HELLO FROM A PLAN\" on Linux\n"}`); report.Int("input_bytes") < int64(min) {
		t.Errorf("report step: %v", report.Fields)
	}
}

// A task cancelled during a plan: the running shell step's command is
// ended, the step settles failed with the cancel's sentence and the one
// after it skipped; plan_end is canceled; task_canceled names phase plan
// and comes first. The plan returns well within a second of the cancel
// beyond the command's SIGTERM.
func TestPlanCanceledTask(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	plan := jsonObj{"id": "slow", "steps": []jsonObj{
		{"id": "wait", "shell": "bash -c 'sleep 30'"},
		{"id": "after", "tool": "echo", "input": jsonObj{"message": "$wait.status"}, "depends_on": []string{"wait"}},
	}}
	proj := agentProject(t, homeDir, base, planGrant+"lifecycle:\n  after_task: sleep\n", planTranscript(t, plan))
	cmd, out, stderr := startMur(t, homeDir, proj, "run", "--json", "--task", "plan slowly")
	rd := readReady(t, out)
	st := waitLines(t, rd.RecordsDir, "plan_step_start", 1, stderr)[0]
	cancelAt := time.Now()
	res := rpc(t, "http://"+*rd.URL, `{"jsonrpc":"2.0","id":3,"method":"CancelTask","params":{"id":"`+lastOf(traceLines(t, rd.RecordsDir), "task_start").Str("task_id")+`"}}`)
	if res["error"] != nil {
		t.Fatalf("CancelTask: %v", res)
	}
	pe := waitLines(t, rd.RecordsDir, "plan_end", 1, stderr)[0]
	took := time.Since(cancelAt)
	t.Logf("plan_end %s after CancelTask (plan_step_start at %d, plan_end at %d)", took, st.Int("timestamp"), pe.Int("timestamp"))
	if took > 3*time.Second {
		t.Errorf("the plan took %s to end after the cancel", took)
	}
	waitLines(t, rd.RecordsDir, "task_end", 1, stderr)
	lines := traceLines(t, rd.RecordsDir)
	if pe.Str("outcome") != "canceled" || pe.Str("reason") != "the task was cancelled" || string(pe.Fields["failed_step"]) != "null" {
		t.Errorf("plan_end %v", pe.Fields)
	}
	_, ends := stepLines(lines, "slow")
	if ends["wait"].Str("status") != "failed" || ends["wait"].Str("error") != "the task was cancelled" ||
		ends["after"].Str("status") != "skipped" || ends["after"].Str("error") != "not run: the task was cancelled" {
		t.Errorf("steps %v %v", ends["wait"].Fields, ends["after"].Fields)
	}
	order := map[string]int{}
	for i, l := range lines {
		if _, seen := order[l.EventType]; !seen {
			order[l.EventType] = i
		}
	}
	tc := lastOf(lines, "task_canceled")
	if tc == nil || tc.Str("phase") != "plan" || !(order["task_canceled"] < order["plan_step"] && order["plan_step"] < order["plan_end"] && order["plan_end"] < order["task_end"]) {
		t.Errorf("task_canceled %v, order %v", tc, order)
	}
	if sh := lastOf(lines, "shell"); sh == nil || sh.Str("step_id") != "wait" || sh.Str("parent_id") != st.Str("event_id") {
		t.Errorf("the step's shell line %v", sh)
	}
	// Nothing of the command is left under mur.
	pid := itoa(cmd.Process.Pid)
	tasks, _ := os.ReadDir(filepath.Join("/proc", pid, "task"))
	for _, tk := range tasks {
		if b, _ := os.ReadFile(filepath.Join("/proc", pid, "task", tk.Name(), "children")); len(strings.TrimSpace(string(b))) > 0 {
			t.Errorf("mur still has children: %s", b)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}

// Capsule steps through a real mur-roost: the answer read with GetTask
// (a worker's, and a 200 KiB one cut at 64 KiB with the whole kept), a
// reference substituted into a capsule step's task, a capsule the daemon
// refuses (its sentence in the step), and no child left once the session ends.
func TestPlanCapsuleSteps(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: sleep\n", workerTranscript)
	big := strings.Repeat("é", 100<<10) // 200 KiB
	bigT, _ := json.Marshal(jsonObj{"version": 1, "responses": []jsonObj{{"content": []jsonObj{{"type": "text", "text": big}}}}})
	replayCapsule(t, homeDir, filepath.Join(base, "big"), "big", "1.0.0", "lifecycle:\n  after_task: sleep\n", string(bigT))
	replayCapsule(t, homeDir, filepath.Join(base, "quick"), "quick", "1.0.0", "", workerTranscript)
	p := jsonObj{"id": "ask", "steps": []jsonObj{
		{"id": "ask", "capsule": "worker", "input": jsonObj{"version": "1.0.0", "task": "find three things"}},
		{"id": "again", "capsule": "local/worker", "input": jsonObj{"version": "1.0.0", "task": "was it $ask.status? $ask.output"}, "depends_on": []string{"ask"}},
		{"id": "big", "capsule": "big", "input": jsonObj{"version": "1.0.0", "task": "say a lot"}},
		{"id": "stranger", "capsule": "stranger", "input": jsonObj{"version": "1.0.0", "task": "hi"}, "on_error": "continue"},
		{"id": "quick", "capsule": "quick", "input": jsonObj{"version": "1.0.0", "task": "hi"}, "on_error": "continue"},
	}}
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  plan:\n    submit: true\n  spawn:\n    allow: [local/worker, local/big, local/quick]\n", planTranscript(t, p))
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "delegate by plan")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	starts, ends := stepLines(lines, "ask")
	for id, want := range map[string]string{"ask": "success", "again": "success", "big": "success", "stranger": "failed"} {
		if ends[id].Str("status") != want {
			t.Errorf("step %s: %v", id, ends[id].Fields)
		}
	}
	if e := ends["stranger"].Str("error"); !strings.Contains(e, "stranger") {
		t.Errorf("refused step's error %q", e)
	}
	// A child that exits after its task cannot be asked: refused before any spawn.
	if q := ends["quick"]; q.Str("status") != "failed" || q.Str("error") != "local/quick@1.0.0 does not declare lifecycle.after_task: sleep; a capsule step reads its answer with GetTask after the task completes, so the sub-capsule has to still be listening" ||
		string(q.Fields["call_ids"]) != "[]" {
		t.Errorf("quick step %v", q.Fields)
	}
	dls := map[string]trace.Line{}
	for _, l := range byType(lines, "delegation") {
		dls[l.Str("step_id")] = l
	}
	if dls["ask"].Str("outcome") != "ok" || dls["stranger"].Str("outcome") != "refused" || dls["ask"].Str("parent_id") != starts["ask"].Str("event_id") ||
		dls["ask"].Str("plan_id") != "ask" || dls["ask"].Int("attempt") != 1 {
		t.Errorf("delegation lines %v", dls)
	}
	if n := ends["big"].Int("output_bytes"); n < 64<<10 || n > 65<<10 {
		t.Errorf("big answer %d bytes", n)
	}
	// The worker's child saw the first answer in its task.
	if ds := byType(lines, "delegation_start"); len(ds) != 3 {
		t.Errorf("%d delegation_start lines", len(ds))
	}
	waitFor(t, "the children to end", func() bool {
		recs, _ := os.ReadDir(filepath.Join(homeDir, ".murmur", "running"))
		return len(recs) == 0
	})
	// mur trace show --tree follows the capsule steps' children.
	tree := runMur(t, homeDir, orch, nil, "trace", "show", "--tree", rd.SessionID)
	for _, d := range byType(lines, "delegation_start") {
		if sid := d.Str("child_session_id"); sid == "" || !strings.Contains(tree.Stdout, sid) {
			t.Errorf("--tree lacks the child %q:\n%s", sid, tree.Stdout)
		}
	}
}

// A capsule step whose child crashes fails crashed; a task cancelled
// during a capsule step returns within about a second, its delegation
// closed terminated with the spec's reason, and the child ended.
func TestPlanCapsuleStepCrashAndCancel(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	slow := `{"version":1,"responses":[{"content":[{"type":"tool_call","id":"w1","name":"bash","input":{"command":"sleep 60"}}]},{"content":[{"type":"text","text":"slept"}]}]}`
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "capabilities:\n  shell:\n    allow: [bash]\nlifecycle:\n  after_task: sleep\n", slow)
	p := jsonObj{"id": "two", "steps": []jsonObj{
		{"id": "crash", "capsule": "worker", "input": jsonObj{"version": "1.0.0", "task": "sleep"}, "on_error": "continue"},
		{"id": "cancel", "capsule": "worker", "input": jsonObj{"version": "1.0.0", "task": "sleep"}, "depends_on": []string{"crash"}},
	}}
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  plan:\n    submit: true\n  shell:\n    allow: [bash]\n  spawn:\n    allow: [local/worker]\nlifecycle:\n  after_task: sleep\n", planTranscript(t, p))
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	cmd, out, stderr := startMurEnv(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "two steps")
	rd := readReady(t, out)

	waitLines(t, rd.RecordsDir, trace.TypeDelegationStart, 1, stderr)
	first := childOf(t, homeDir, rd.SessionID)
	syscall.Kill(first.PID, syscall.SIGKILL)
	sid := waitLines(t, rd.RecordsDir, trace.TypeDelegationStart, 2, stderr)[1].Str("child_session_id")
	var second int
	waitFor(t, "the second child's running record", func() bool {
		recs, _ := running.Scan(home.Running(homeDir))
		for _, r := range recs {
			if r.Record.SessionID == sid {
				second = r.Record.PID
			}
		}
		return second != 0
	})
	task := lastOf(traceLines(t, rd.RecordsDir), "task_start").Str("task_id")
	cancelAt := time.Now()
	if res := rpc(t, "http://"+*rd.URL, `{"jsonrpc":"2.0","id":3,"method":"CancelTask","params":{"id":"`+task+`"}}`); res["error"] != nil {
		t.Fatalf("CancelTask: %v", res)
	}
	waitLines(t, rd.RecordsDir, "plan_end", 1, stderr)
	took := time.Since(cancelAt)
	t.Logf("capsule step: plan_end %s after CancelTask", took)
	if took > 2*time.Second {
		t.Errorf("the capsule step took %s to return after the cancel", took)
	}
	waitFor(t, "the cancelled step's child to end", func() bool { return gone(second) })
	lines := traceLines(t, rd.RecordsDir)
	_, ends := stepLines(lines, "two")
	if c := ends["crash"]; c.Str("status") != "failed" || !strings.HasPrefix(c.Str("error"), "the sub-capsule exited before its answer was read") {
		t.Errorf("crashed step %v", c.Fields)
	}
	if c := ends["cancel"]; c.Str("status") != "failed" || c.Str("error") != "the task was cancelled" {
		t.Errorf("cancelled step %v", c.Fields)
	}
	dls := map[string]trace.Line{}
	for _, l := range byType(lines, "delegation") {
		dls[l.Str("step_id")] = l
	}
	if dls["crash"].Str("outcome") != "crashed" || dls["cancel"].Str("outcome") != "terminated" || dls["cancel"].Str("reason") != "the delegating task was cancelled" {
		t.Errorf("delegation lines %v %v", dls["crash"].Fields, dls["cancel"].Fields)
	}
	if pe := planEnd(lines, "two"); pe.Str("outcome") != "canceled" {
		t.Errorf("plan_end %v", pe.Fields)
	}
	// task_canceled names the step's delegation in flight.
	if tc := lastOf(lines, "task_canceled"); tc == nil || tc.Str("phase") != "plan" || !strings.Contains(string(tc.Fields["delegation_ids"]), dls["cancel"].Str("delegation_id")) {
		t.Errorf("task_canceled %v", tc)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}

// MURMUR_DELEGATION_TIMEOUT_SECS bounds a capsule step's wait: the
// delegation is closed terminated with the deadline's sentence and the
// child ended.
func TestPlanCapsuleStepDeadline(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	slow := `{"version":1,"responses":[{"content":[{"type":"tool_call","id":"w1","name":"bash","input":{"command":"sleep 60"}}]},{"content":[{"type":"text","text":"slept"}]}]}`
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "capabilities:\n  shell:\n    allow: [bash]\nlifecycle:\n  after_task: sleep\n", slow)
	p := jsonObj{"id": "late", "steps": []jsonObj{{"id": "wait", "capsule": "worker", "input": jsonObj{"version": "1.0.0", "task": "sleep"}}}}
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  plan:\n    submit: true\n  shell:\n    allow: [bash]\n  spawn:\n    allow: [local/worker]\n", planTranscript(t, p))
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	start := time.Now()
	r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost, "MURMUR_DELEGATION_TIMEOUT_SECS=2"}, "run", "--json", "--task", "wait")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	t.Logf("session took %s", time.Since(start))
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	_, ends := stepLines(lines, "late")
	dl := lastOf(lines, "delegation")
	if ends["wait"].Str("status") != "failed" || dl == nil || dl.Str("outcome") != "terminated" ||
		dl.Str("reason") != "no answer reached this plan step within 2s (lifecycle.delegation_deadline_secs)" {
		t.Errorf("step %v, delegation %v", ends["wait"].Fields, dl)
	}
	if pe := planEnd(lines, "late"); pe.Str("outcome") != "failed" || pe.Str("failed_step") != "wait" {
		t.Errorf("plan_end %v", pe.Fields)
	}
}
