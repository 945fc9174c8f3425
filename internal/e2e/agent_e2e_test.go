package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/trace"
)

// An agent capsule with --task runs the task through the loop (the replay
// driver calls the real echo tool component) and exits when it ends.
func TestAgentRunsItsTask(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := agentProject(t, homeDir, base, "", agentTranscript)
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "say hello")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	if rd.URL == nil || !strings.HasPrefix(*rd.URL, "127.0.0.1:") || rd.Name != "local/greeter" {
		t.Fatalf("ready line %+v", rd)
	}
	if !strings.Contains(r.Stderr, rd.SessionID+": ok") {
		t.Errorf("stderr %q", r.Stderr)
	}
	got, _ := os.ReadFile(filepath.Join(rd.RecordsDir, "out", "result.txt"))
	if string(got) != "The echo tool said hello." {
		t.Errorf("result.txt %q", got)
	}
	lines := traceLines(t, rd.RecordsDir)
	// --task is no door message: no a2a_task_received.
	want := "session_start task_start inference tool_call inference task_end session_end"
	if types(lines) != want {
		t.Fatalf("trace:\n%s\nwant:\n%s", types(lines), want)
	}
	start := lines[0]
	if start.Str("kind") != "agent" || start.Str("url") != "http://"+*rd.URL || start.Str("model") != "replay" {
		t.Errorf("session_start %v", start.Fields)
	}
	tc := lines[3]
	if tc.Str("tool_name") != "acme/echo" || tc.Str("kind") != "wasm" || tc.Str("ending") != "ok" || tc.Str("status") != "ok" ||
		tc.Str("tool_call_id") != "call_1" || tc.Str("parent_id") != lines[2].Str("event_id") {
		t.Errorf("tool_call %v", tc.Fields)
	}
	end := lastEnd(t, lines)
	if end.Str("exit_status") != "ok" || end.Int("tasks") != 1 || end.Int("total_turns") != 2 || end.Int("tool_calls") != 1 {
		t.Errorf("session_end %v", end.Fields)
	}
	if left, _ := running.Scan(home.Running(homeDir)); len(left) != 0 {
		t.Errorf("running record left: %+v", left)
	}
}

// A task that fails (the transcript runs out) ends the session failed:
// exit 1 with E-RUN-040.
func TestAgentFailedTask(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := agentProject(t, homeDir, base, "", "version: 1\nresponses:\n  - content: [{type: tool_call, name: echo, input: {message: x}}]\n")
	r := runMur(t, homeDir, proj, nil, "run", "--task", "go")
	if r.Code != 1 || !strings.Contains(r.Stderr, "error[E-RUN-040]: the session ended failed") {
		t.Fatalf("run: %+v", r)
	}
}

// An after_task: sleep session serves its door until SIGTERM: the card, a
// blocking SendMessage answered by the loop, GetTask; SIGTERM ends it with
// exit 143 and session_end written.
func TestAgentServesItsDoorUntilSIGTERM(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := agentProject(t, homeDir, base, "lifecycle:\n  after_task: sleep\n", agentTranscript)
	cmd, out, stderr := startMur(t, homeDir, proj, "run", "--json")
	rd := readReady(t, out)
	url := "http://" + *rd.URL

	resp, err := http.Get(url + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var card map[string]any
	json.NewDecoder(resp.Body).Decode(&card)
	resp.Body.Close()
	if card["name"] != "local/greeter" || card["description"] != "Murmur capsule local/greeter 0.2.0" {
		t.Errorf("card %v", card)
	}

	res := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"say hello"}]}}}`)
	task, _ := res["result"].(map[string]any)["task"].(map[string]any)
	if task == nil {
		t.Fatalf("SendMessage: %v", res)
	}
	status := task["status"].(map[string]any)
	if status["state"] != "TASK_STATE_COMPLETED" {
		t.Fatalf("task %v", task)
	}
	got := rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"`+task["id"].(string)+`"}}`)
	if got["result"].(map[string]any)["id"] != task["id"] {
		t.Errorf("GetTask %v", got)
	}
	if r := rpc(t, url, `{"jsonrpc":"2.0","id":3,"method":"Nope"}`); r["error"].(map[string]any)["code"].(float64) != -32601 {
		t.Errorf("unknown method %v", r)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 143 {
		t.Fatalf("exit after SIGTERM: %v (stderr %s)", err, stderr)
	}
	lines := traceLines(t, rd.RecordsDir)
	end := lastEnd(t, lines)
	if end.Str("exit_status") != "ok" || end.Str("reason") != "terminated" || end.Int("tasks") != 1 {
		t.Errorf("session_end %v", end.Fields)
	}
	if left, _ := running.Scan(home.Running(homeDir)); len(left) != 0 {
		t.Errorf("running record left: %+v", left)
	}
}

// The README's main command, scripts/demo.sh, runs end to end on a fresh
// HOME: the script capsule, the offline agent, and the sleeping agent talked
// to with curl and stopped with mur stop.
func TestDemoScript(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed; the demo talks to the door with it")
	}
	homeDir, work := t.TempDir(), t.TempDir()
	cmd := exec.Command("bash", filepath.Join(repoRoot(), "scripts", "demo.sh"))
	port := strconv.Itoa(freePort(t)) // --with-roost's daemon: never a user's 7700
	cmd.Env = append(os.Environ(), "HOME="+homeDir, "MURMUR_DEMO_DIR="+work, "MURMUR_DEMO_BIN="+filepath.Join(work, "bin"),
		"MURMUR_DEMO_ROOST_PORT="+port)
	cmd.Env = append(cmd.Env, goCaches()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, out)
	}
	for _, want := range []string{"echo-tool: HELLO, MURMUR", "\necho-tool answered; hello from hello-agent!\n",
		"\n  echo-tool answered; hello from hello-agent!\n", // trace show's answer row
		"SendMessage \"hello, door\": task tsk_", "TASK_STATE_COMPLETED", "\nanswer: Hello from a sleeping hello-agent.\n",
		"stopped: ses_", "ending:    ok (stopped)", "\n== summary\n", "\nNext: ",
		"\nlocal/orchestrator@0.1.0 (agent)  ses_", "\n├─ delegation-worker@0.1.0 (script)  ses_", "\n└─ delegation-reviewer@0.1.0 (agent)  ses_",
		"task: Count the lines and words of the notes in your work folder.\n", "report: Report: 2 delegations, both ended ok.",
		"mur-roost: listening on 127.0.0.1:" + port + "\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	// The door step prints the state and the answer, not the JSON it got.
	if strings.Contains(string(out), `"jsonrpc"`) {
		t.Errorf("demo output holds raw JSON-RPC:\n%s", out)
	}
}

// A shell tool through the loop: bash runs the model's command in the work
// folder with the cleared environment (no host secret reaches it), the
// result comes back fenced, a shell line is written and counted in
// shell_calls.
func TestAgentShellTool(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	transcript := `version: 1
responses:
  - content:
      - {type: tool_call, id: call_sh, name: bash, input: {command: "echo hi from bash; echo key=$ANTHROPIC_API_KEY; pwd; exit 3"}}
  - content:
      - {type: text, text: "ran it"}
`
	proj := agentProject(t, homeDir, base, "capabilities:\n  shell:\n    allow: [bash]\n", transcript)
	r := runMur(t, homeDir, proj, []string{"ANTHROPIC_API_KEY=sk-must-not-leak"}, "run", "--json", "--task", "run bash")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	if types(lines) != "session_start task_start inference shell inference task_end session_end" {
		t.Fatalf("trace %s", types(lines))
	}
	sh := lines[3]
	if sh.Int("exit_code") != 3 || !strings.HasSuffix(sh.Str("binary"), "/bash") || sh.Str("parent_id") != lines[2].Str("event_id") {
		t.Errorf("shell line %v", sh.Fields)
	}
	log, err := os.ReadFile(sh.Str("log_path"))
	if err != nil || !strings.Contains(string(log), "hi from bash") || strings.Contains(string(log), "sk-must-not-leak") ||
		!strings.Contains(string(log), "key=\n") || !strings.Contains(string(log), rd.Workdir) {
		t.Errorf("shell log %q, %v", log, err)
	}
	end := lastEnd(t, lines)
	if end.Int("shell_calls") != 1 || end.Int("tool_calls") != 0 {
		t.Errorf("session_end %v", end.Fields)
	}
}

// With observability.otel_endpoint, an agent session exports
// capsule.session → capsule.task → capsule.inference / capsule.tool_call.
func TestAgentSpans(t *testing.T) {
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	homeDir, base := t.TempDir(), t.TempDir()
	proj := agentProject(t, homeDir, base, "observability:\n  otel_endpoint: "+srv.URL+"\n", agentTranscript)
	if r := runMur(t, homeDir, proj, nil, "run", "--task", "say hello"); r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	recv.Mu.Lock()
	defer recv.Mu.Unlock()
	byName := map[string][]string{}
	ids := map[string]string{}
	for _, s := range recv.Spans {
		byName[s.Name] = append(byName[s.Name], string(s.ParentSpanId))
		ids[string(s.SpanId)] = s.Name
	}
	if len(byName["capsule.session"]) != 1 || len(byName["capsule.task"]) != 1 || len(byName["capsule.inference"]) != 2 ||
		len(byName["capsule.tool_call"]) != 1 {
		t.Fatalf("spans %v", byName)
	}
	if ids[byName["capsule.task"][0]] != "capsule.session" || ids[byName["capsule.inference"][0]] != "capsule.task" ||
		ids[byName["capsule.tool_call"][0]] != "capsule.task" {
		t.Errorf("span tree %v / %v", byName, ids)
	}
}

// A tool that asks for input (murmur:task/task#request-input, the Go-kit
// tool-echo) puts the task in INPUT_REQUIRED; a SendMessage naming the task
// answers it, the tool returns the reply and the task completes.
func TestAgentInputRequired(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	transcript := `version: 1
responses:
  - content:
      - {type: tool_call, id: call_ask, name: echo, input: {ask: "what is your name?"}}
  - content:
      - {type: text, text: "Hello, whoever you are."}
`
	proj := agentProject(t, homeDir, base, "lifecycle:\n  after_task: sleep\n", transcript)
	cmd, out, stderr := startMur(t, homeDir, proj, "run", "--json")
	rd := readReady(t, out)
	url := "http://" + *rd.URL
	res := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"ask me"}]}}}`)
	task, _ := res["result"].(map[string]any)["task"].(map[string]any)
	if task == nil || task["status"].(map[string]any)["state"] != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("first SendMessage: %v", res)
	}
	if msg := fmt.Sprint(task["status"]); !strings.Contains(msg, "what is your name?") {
		t.Errorf("the input request does not carry the prompt: %v", task["status"])
	}
	id := task["id"].(string)
	res = rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m2","taskId":"`+id+`","role":"ROLE_USER","parts":[{"text":"Ada"}]}}}`)
	task, _ = res["result"].(map[string]any)["task"].(map[string]any)
	if task == nil || task["status"].(map[string]any)["state"] != "TASK_STATE_COMPLETED" {
		t.Fatalf("the reply: %v", res)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	lines := traceLines(t, rd.RecordsDir)
	tc := lastOf(lines, trace.TypeToolCall)
	if tc == nil || tc.Str("status") != "ok" || tc.Int("output_bytes") != 3 {
		t.Errorf("tool_call %v (stderr %s)", tc, stderr)
	}
}

// A lifecycle hook (the Go-kit examples/hook-log) bound to every event but
// on-stage: a hook_call line per event with its output, the hook named in
// session_start.
func TestAgentHooks(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	hook := filepath.Join(base, "hook-log")
	copyDir(t, filepath.Join(repoRoot(), "examples", "hook-log"), hook)
	for _, cmd := range []string{"build", "publish"} {
		if r := runMur(t, homeDir, hook, nil, cmd); r.Code != 0 {
			t.Fatalf("%s the hook: %+v", cmd, r)
		}
	}
	proj := agentProject(t, homeDir, base, "", agentTranscript)
	m, _ := os.ReadFile(filepath.Join(proj, "murmur.yaml"))
	m = []byte(strings.Replace(string(m), "inference:", "  - name: local/hook-log\n    version: 0.1.0\n    runtime: hook\ninference:", 1))
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), m, 0o644)
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "say hello")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	if hs := string(lines[0].Fields["hooks"]); hs != `["local/hook-log"]` {
		t.Errorf("session_start.hooks %v", hs)
	}
	var events []string
	for _, l := range lines {
		if l.EventType == "hook_call" {
			if l.Str("status") != "ok" || l.Str("hook") != "local/hook-log" {
				t.Errorf("hook_call %v", l.Fields)
			}
			events = append(events, l.Str("event"))
		}
	}
	want := "on-session-start on-task-start on-inference on-tool-call on-inference on-task-end on-session-end"
	if strings.Join(events, " ") != want {
		t.Errorf("hook events %v, want %s", events, want)
	}
}

// Twenty agent sessions at once, each with its own door: every one ends ok
// with its own trace, and no running record is left.
func TestAgentTwentyAtOnce(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := agentProject(t, homeDir, base, "", agentTranscript)
	type out struct {
		r  murResult
		rd ready
	}
	results := make(chan out, 20)
	for i := 0; i < 20; i++ {
		go func() {
			cmd := murCmdEnv(t, homeDir, proj, nil, "run", "--json", "--task", "hi")
			var so, se strings.Builder
			cmd.Stdout, cmd.Stderr = &so, &se
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			var rd ready
			json.Unmarshal([]byte(strings.TrimSpace(so.String())), &rd)
			results <- out{murResult{Stdout: so.String(), Stderr: se.String(), Code: code}, rd}
		}()
	}
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		o := <-results
		if o.r.Code != 0 || o.rd.SessionID == "" {
			t.Errorf("run %d: %+v", i, o.r)
			continue
		}
		if seen[*o.rd.URL] {
			t.Errorf("two sessions shared the door %s", *o.rd.URL)
		}
		seen[*o.rd.URL] = true
		if end := lastEnd(t, traceLines(t, o.rd.RecordsDir)); end.Str("exit_status") != "ok" {
			t.Errorf("%s: session_end %v", o.rd.SessionID, end.Fields)
		}
	}
	if left, _ := running.Scan(home.Running(homeDir)); len(left) != 0 {
		t.Errorf("running records left: %d", len(left))
	}
}

// SIGKILL leaves the trace as it was (no session_end); mur ps prunes the
// record and trace show says how the session ended.
func TestAgentSIGKILL(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := agentProject(t, homeDir, base, "lifecycle:\n  after_task: sleep\n", agentTranscript)
	cmd, out, _ := startMur(t, homeDir, proj, "run", "--json")
	rd := readReady(t, out)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	r := runMur(t, homeDir, proj, nil, "ps")
	if !strings.Contains(r.Stderr, "pruned: "+rd.SessionID) {
		t.Errorf("ps after SIGKILL: %+v", r)
	}
	r = runMur(t, homeDir, proj, nil, "trace", "show", rd.SessionID)
	if !strings.Contains(r.Stdout, "ended without a session_end; its last event is session_start") {
		t.Errorf("trace show after SIGKILL: %+v", r)
	}
}

// A tool result over 64 KiB (a skill's 100 KB skill.md) is cut for the
// model on a character boundary, the whole kept under logs/tools/ and named
// in what the model sees; the tool_call line records the full size.
func TestAgentCutsALargeToolResult(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	skill := filepath.Join(base, "big-skill")
	os.MkdirAll(skill, 0o755)
	os.WriteFile(filepath.Join(skill, "murmur.yaml"), []byte("name: acme/big\nversion: 1.0.0\nruntime: skill\n"), 0o644)
	body := strings.Repeat("é", 50_000) // 100,000 bytes of two-byte characters
	os.WriteFile(filepath.Join(skill, "skill.md"), []byte(body), 0o644)
	for _, c := range []string{"build", "publish"} {
		if r := runMur(t, homeDir, skill, nil, c); r.Code != 0 {
			t.Fatalf("%s the skill: %+v", c, r)
		}
	}
	transcript := "version: 1\nresponses:\n  - content: [{type: tool_call, id: call_big, name: big, input: {}}]\n  - content: [{type: text, text: done}]\n"
	proj := agentProject(t, homeDir, base, "", transcript)
	m, _ := os.ReadFile(filepath.Join(proj, "murmur.yaml"))
	m = []byte(strings.Replace(string(m), "inference:", "  - name: acme/big\n    version: 1.0.0\n    runtime: skill\ninference:", 1))
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), m, 0o644)
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "read it")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	var tc *trace.Line
	lines := traceLines(t, rd.RecordsDir)
	for i := range lines {
		if lines[i].EventType == trace.TypeToolCall {
			tc = &lines[i]
		}
	}
	if tc == nil || tc.Int("output_bytes") != 100_000 || tc.Str("kind") != "skill" {
		t.Fatalf("tool_call %v", tc)
	}
	kept, err := os.ReadFile(filepath.Join(rd.RecordsDir, "logs", "tools", "call_big.out"))
	if err != nil || string(kept) != body {
		t.Errorf("the whole result was not kept: %d bytes, %v", len(kept), err)
	}
}

// SIGTERM while a shell tool runs: the command's process group is ended, the
// task is canceled in the tool phase, session_end says canceled, exit 143.
func TestAgentSIGTERMMidTool(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	transcript := "version: 1\nresponses:\n  - content: [{type: tool_call, id: call_sleep, name: bash, input: {command: \"touch started; sleep 60\"}}]\n  - content: [{type: text, text: never}]\n"
	proj := agentProject(t, homeDir, base, "capabilities:\n  shell:\n    allow: [bash]\n", transcript)
	cmd, out, stderr := startMur(t, homeDir, proj, "run", "--json", "--task", "sleep")
	rd := readReady(t, out)
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(filepath.Join(rd.Workdir, "started")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 143 {
		t.Fatalf("exit after SIGTERM: %v (stderr %s)", err, stderr)
	}
	lines := traceLines(t, rd.RecordsDir)
	canceled := lastOf(lines, trace.TypeTaskCanceled)
	if canceled == nil || canceled.Str("phase") != "tool" {
		t.Errorf("task_canceled %v in %s", canceled, types(lines))
	}
	if end := lastEnd(t, lines); end.Str("exit_status") != "canceled" {
		t.Errorf("session_end %v", end.Fields)
	}
}

// capabilities.resources.workdir_max_bytes holds for an agent too: a
// command that fills the work folder past it winds the session down,
// resource_limit, exit 1 with E-RUN-040 saying why.
func TestAgentWorkdirLimit(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	transcript := "version: 1\nresponses:\n  - content: [{type: tool_call, id: call_fill, name: bash, input: {command: \"yes 0123456789 | head -c 200000 > big; sleep 30\"}}]\n  - content: [{type: text, text: never}]\n"
	proj := agentProject(t, homeDir, base, "capabilities:\n  shell:\n    allow: [bash]\n  resources:\n    workdir_max_bytes: 65536\n", transcript)
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "fill")
	if r.Code != 1 || !strings.Contains(r.Stderr, "error[E-RUN-040]: the session ended resource_limit") || !strings.Contains(r.Stderr, "E-RUN-017") {
		rd := parseReady(t, r.Stdout)
		for _, l := range traceLines(t, rd.RecordsDir) {
			if l.EventType == "shell" {
				b, _ := os.ReadFile(l.Str("log_path"))
				t.Logf("shell log: %s", b)
			}
		}
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	if end := lastEnd(t, traceLines(t, rd.RecordsDir)); end.Str("exit_status") != "resource_limit" {
		t.Errorf("session_end %v", end.Fields)
	}
}

// session_start.effective_grants carries the containment decision, and
// --explain-scope of a capsule with shell tools names the resources, the
// network namespace and what the tier leaves open.
func TestAgentContainmentReported(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := agentProject(t, homeDir, base, "capabilities:\n  shell:\n    allow: [bash]\n", agentTranscript)
	r := runMur(t, homeDir, proj, nil, "run", "--explain-scope")
	for _, want := range []string{"declared: none\n", "achieved: ", "floor met: yes\n", "resources: rlimits", "network: commands run in a network namespace", "not protected here: "} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("--explain-scope lacks %q:\n%s", want, r.Stdout)
		}
	}
	r = runMur(t, homeDir, proj, nil, "run", "--json", "--task", "hi")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	var g struct {
		Containment struct{ Declared, Achieved, Mechanism string }
	}
	if err := json.Unmarshal(traceLines(t, rd.RecordsDir)[0].Fields["effective_grants"], &g); err != nil || g.Containment.Declared != "none" ||
		g.Containment.Achieved == "" || g.Containment.Mechanism == "" {
		t.Errorf("effective_grants.containment %+v, %v", g.Containment, err)
	}
}

// scripts/install.sh installs both binaries at one version into a fresh
// prefix, mur as the murdriver split build with mur-driver beside it; a build
// that fails leaves what was there, saying why.
func TestInstallScript(t *testing.T) {
	prefix := t.TempDir()
	script := filepath.Join(repoRoot(), "scripts", "install.sh")
	out, err := exec.Command("bash", script, prefix).CombinedOutput()
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	for _, b := range []string{"mur", "mur-roost", "mur-driver"} {
		v, err := exec.Command(filepath.Join(prefix, "bin", b), "--version").Output()
		if err != nil || !strings.HasPrefix(string(v), b+" ") {
			t.Errorf("%s --version: %q, %v", b, v, err)
		}
	}
	if info, err := exec.Command("go", "version", "-m", filepath.Join(prefix, "bin", "mur")).Output(); err != nil ||
		!strings.Contains(string(info), "-tags=murdriver") {
		t.Errorf("the installed mur is not the murdriver build: %v\n%s", err, info)
	}
	// A new mur that cannot start (here a go on PATH that builds broken
	// binaries) changes nothing, and the script says why.
	fake := t.TempDir()
	os.WriteFile(filepath.Join(fake, "go"), []byte(fakeGo), 0o755)
	before, _ := os.ReadFile(filepath.Join(prefix, "bin", "mur"))
	cmd := exec.Command("bash", script, prefix)
	cmd.Env = append(os.Environ(), "PATH="+fake+":"+os.Getenv("PATH"))
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the new mur cannot start") ||
		!strings.Contains(string(out), "nothing in "+filepath.Join(prefix, "bin")+" was changed") {
		t.Fatalf("a failing install: %v\n%s", err, out)
	}
	if got, _ := os.ReadFile(filepath.Join(prefix, "bin", "mur")); !bytes.Equal(got, before) {
		t.Errorf("a failing install replaced mur (%d bytes, was %d)", len(got), len(before))
	}
}

// fakeGo stands in for go: "go build -o DIR/ ..." writes a mur and a
// mur-roost that cannot start.
const fakeGo = `#!/bin/sh
for b in mur mur-roost; do
  printf '#!/bin/sh\necho "cannot start" >&2\nexit 126\n' > "$3$b"
  chmod +x "$3$b"
done
`

// An agent whose trace cannot be written is ended, as a script capsule is
// (E-IO-056): it does not serve tasks unrecorded.
func TestAgentTraceOnFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	homeDir, base := t.TempDir(), t.TempDir()
	proj := agentProject(t, homeDir, base, "lifecycle:\n  after_task: sleep\n", agentTranscript)
	recs := filepath.Join(homeDir, ".murmur", "records")
	os.RemoveAll(recs)
	os.MkdirAll(recs, 0o700)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", recs).CombinedOutput(); err != nil {
		t.Skipf("mount refused (%v: %s): cannot test a full disk here", err, bytes.TrimSpace(out))
	}
	defer exec.Command("umount", recs).Run()
	f, _ := os.Create(filepath.Join(recs, "filler"))
	f.Write(make([]byte, 1<<20))
	f.Close()
	r := runMur(t, homeDir, proj, nil, "run", "--json")
	if r.Code != 1 || !strings.Contains(r.Stderr, "warning[W-IO-050]") || !strings.Contains(r.Stderr, "error[E-IO-056]") {
		t.Fatalf("agent on a full disk: %+v", r)
	}
}

// docs/guest-kit.md's "A capsule in your own module" passes word for word:
// its command block runs as it stands, /path/to/murmur being this checkout.
func TestGuestKitWalkthrough(t *testing.T) {
	if _, err := os.Stat(filepath.Join(repoRoot(), "node_modules", "@bytecodealliance", "jco")); err != nil {
		t.Skip("the pinned jco is not installed (npm ci): cannot build a component here")
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "guest-kit.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "### A capsule in your own module")
	var block []string
	in := false
	for _, l := range strings.Split(rest, "\n") {
		if strings.HasPrefix(l, "    ") {
			in = true
			block = append(block, strings.TrimPrefix(l, "    "))
		} else if in && l != "" {
			break
		} else if in {
			block = append(block, "")
		}
	}
	script := strings.ReplaceAll(strings.Join(block, "\n"), "/path/to/murmur", repoRoot())
	homeDir, work := t.TempDir(), t.TempDir()
	shareCompileCache(t, homeDir)
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = work
	cmd.Env = append(append(os.Environ(), "HOME="+homeDir), goCaches()...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), ": ok") {
		t.Fatalf("the walkthrough: %v\n%s", err, out)
	}
}

// goCaches keeps this user's Go module and build caches for a go command run
// under a test's fresh HOME: with that HOME alone it would fetch and compile
// everything again (wasmtime's bindings included), minutes per test.
func goCaches() []string {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		return nil
	}
	v := strings.Fields(string(out))
	if len(v) != 2 {
		return nil
	}
	return []string{"GOCACHE=" + v[0], "GOMODCACHE=" + v[1]}
}
