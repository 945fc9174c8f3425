package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/trace"
)

// scriptCapsule writes and publishes a script capsule from a committed
// Go-kit component.
func scriptCapsule(t *testing.T, homeDir, dir, manifest, wasmPath string) string {
	t.Helper()
	wasm, err := os.ReadFile(filepath.Join(repoRoot(), wasmPath))
	if err != nil {
		t.Fatal(err)
	}
	capsule(t, dir, manifest, wasm)
	for _, c := range []string{"build", "publish"} {
		if r := runMur(t, homeDir, dir, nil, c); r.Code != 0 {
			t.Fatalf("%s %s: %+v", c, dir, r)
		}
	}
	return dir
}

const (
	workerWasm = "examples/delegation/worker/delegation-worker.wasm"

	probeWasm = "testdata/components/capsule-probe/capsule-probe.wasm"
)

// childRecordsIn finds a child's records dir from its parent's child_workdir.
func childRecordsIn(t *testing.T, homeDir, childWorkdir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(homeDir, ".murmur", "records", strings.TrimPrefix(childWorkdir, "/"), "ses_*"))
	if len(m) != 1 {
		t.Fatalf("child records under %s: %v", childWorkdir, m)
	}
	return m[0]
}

func readJSON(t *testing.T, p string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return m
}

// TestDelegateToAScriptCapsule: an agent delegates to a Go script capsule;
// the child takes its task from standard input into its task.md, is
// started once its --json line is printed, and its answer is its work
// folder's out/result.txt.
func TestDelegateToAScriptCapsule(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	scriptCapsule(t, homeDir, filepath.Join(base, "worker"), "name: worker\nversion: 1.0.0\n", workerWasm)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", orchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")

	r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "delegate it")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	ds := byType(lines, trace.TypeDelegationStart)
	dl := byType(lines, trace.TypeDelegation)
	if len(ds) != 1 || len(dl) != 1 || dl[0].Str("outcome") != "ok" {
		t.Fatalf("delegation lines %v %v\n%s", ds, dl, types(lines))
	}
	wd := ds[0].Str("child_workdir")
	crec := childRecordsIn(t, homeDir, wd)
	comp := readJSON(t, filepath.Join(crec, "completion.json"))
	if comp["status"] != "ok" || comp["reported_by"] != "child" || comp["delivered"] != true ||
		comp["result_path"] != filepath.Join(wd, "out", "result.txt") || comp["capsule_name"] != "local/worker" {
		t.Errorf("completion.json %v", comp)
	}
	res, _ := os.ReadFile(filepath.Join(wd, "out", "result.txt"))
	if !strings.HasPrefix(string(res), "task: find three things\n") {
		t.Errorf("the child's result %q", res)
	}
	clines := traceLines(t, crec)
	if clines[0].Str("kind") != "script" || clines[0].Str("spawned_by") != rd.SessionID ||
		clines[0].Str("delegation_id") != ds[0].Str("delegation_id") {
		t.Errorf("child session_start %v", clines[0].Fields)
	}
}

// TestScriptCapsuleDelegates: a script capsule's invoke("delegate-task", …)
// returns at start; it delegates to a script child and to an agent child at
// once, and each outcome block arrives in
// murmur-runtime/delegations/<delegation_id>.outcome.txt, which the script
// waits for; a refused call is the daemon's sentence as the invoke error.
// A second run returns while its child still runs: the child is ended with
// the spec's reason.
func TestScriptCapsuleDelegates(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	scriptCapsule(t, homeDir, filepath.Join(base, "worker"), "name: worker\nversion: 1.0.0\n", workerWasm)
	scriptCapsule(t, homeDir, filepath.Join(base, "sleeper"), "name: sleeper\nversion: 1.0.0\ncapabilities:\n  limits:\n    deadline_seconds: 120\n", probeWasm)
	replayCapsule(t, homeDir, filepath.Join(base, "reviewer"), "reviewer", "1.0.0", "lifecycle:\n  after_task: exit\n", workerTranscript)
	deleg := scriptCapsule(t, homeDir, filepath.Join(base, "deleg"), `name: deleg
version: 0.1.0
capabilities:
  limits:
    deadline_seconds: 120
  spawn:
    allow: [local/worker, local/reviewer, local/sleeper]
`, delegatorWasm)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/deleg", "--max-concurrent", "3")
	env := []string{"MURMUR_ROOST_URL=" + roost}

	t.Run("waits for both outcomes", func(t *testing.T) {
		task := "wait\n" +
			`{"capsule":"worker","version":"1.0.0","task":"count the words"}` + "\n" +
			`{"capsule":"reviewer","version":"1.0.0","task":"review it"}` + "\n" +
			`{"capsule":"reviewer","version":"9.9.9","task":"no such version"}` + "\n"
		r := runMur(t, homeDir, deleg, env, "run", "--json", "--task", task)
		if r.Code != 0 {
			t.Fatalf("run: %+v", r)
		}
		rd := parseReady(t, r.Stdout)
		got, _ := os.ReadFile(filepath.Join(rd.Workdir, "out", "result.txt"))
		out := string(got)
		if strings.Count(out, "call: passed ") != 2 || !strings.Contains(out, `"status":"started"`) {
			t.Errorf("the calls did not return at start:\n%s", out)
		}
		if !strings.Contains(out, "call error: ") || strings.Contains(out, "call error: error:") {
			t.Errorf("the refused call is not the daemon's plain sentence:\n%s", out)
		}
		for _, want := range []string{" to worker@1.0.0 ended ok:", "result:\ntask: count the words\n",
			" to reviewer@1.0.0 ended ok:", "result:\nThe report has three findings.", "<untrusted-content source=delegation:worker>"} {
			if !strings.Contains(out, want) {
				t.Errorf("outcome blocks lack %q:\n%s", want, out)
			}
		}
		lines := traceLines(t, rd.RecordsDir)
		if !strings.Contains(string(lines[0].Fields["tools_declared"]), `"delegate-task"`) {
			t.Errorf("tools_declared %s", lines[0].Fields["tools_declared"])
		}
		dl := byType(lines, trace.TypeDelegation)
		outcomes := map[string]int{}
		for _, l := range dl {
			outcomes[l.Str("outcome")]++
		}
		if outcomes["ok"] != 2 || outcomes["refused"] != 1 || len(byType(lines, trace.TypeDelegationStart)) != 2 {
			t.Errorf("delegation lines %v\n%s", outcomes, types(lines))
		}
		if tc := byType(lines, "tool_call"); len(tc) != 3 || tc[0].Str("tool_name") != "delegate-task" {
			t.Errorf("tool_call lines %v", tc)
		}
		for _, l := range byType(lines, trace.TypeDelegationStart) {
			crec := childRecordsIn(t, homeDir, l.Str("child_workdir"))
			c := readJSON(t, filepath.Join(crec, "completion.json"))
			if c["reported_by"] != "child" || c["delivered"] != true || c["status"] != "ok" {
				t.Errorf("%s completion.json %v", l.Str("capsule"), c)
			}
		}
	})

	t.Run("run returns first", func(t *testing.T) {
		task := `{"capsule":"sleeper","version":"1.0.0","task":"sleep 60s"}` + "\n"
		r := runMur(t, homeDir, deleg, env, "run", "--json", "--task", task)
		if r.Code != 0 {
			t.Fatalf("run: %+v", r)
		}
		rd := parseReady(t, r.Stdout)
		lines := traceLines(t, rd.RecordsDir)
		dl := byType(lines, trace.TypeDelegation)
		if len(dl) != 1 || dl[0].Str("outcome") != "terminated" ||
			dl[0].Str("reason") != "the delegating task ended ok before this sub-capsule finished" {
			t.Fatalf("delegation %v\n%s", dl, types(lines))
		}
		if lines[len(lines)-1].EventType != trace.TypeSessionEnd || lines[len(lines)-2].EventType != trace.TypeDelegation {
			t.Errorf("the delegation line is not before session_end: %s", types(lines))
		}
		crec := childRecordsIn(t, homeDir, byType(lines, trace.TypeDelegationStart)[0].Str("child_workdir"))
		c := readJSON(t, filepath.Join(crec, "completion.json"))
		if c["reported_by"] != "launcher" || c["status"] != "terminated" ||
			!strings.HasPrefix(c["detail"].(string), "the parent ended this delegation") {
			t.Errorf("completion.json %v", c)
		}
	})
}

// TestDelegationTreeAndPs: an agent delegates to a script capsule that
// delegates in turn to a script and an agent worker. While it runs, mur ps
// shows which session spawned which; once it has ended, mur trace show
// lists the root's delegation and mur trace show --tree prints all four
// sessions, nested, each with its outcome.
func TestDelegationTreeAndPs(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	scriptCapsule(t, homeDir, filepath.Join(base, "worker"), "name: worker\nversion: 1.0.0\n", workerWasm)
	scriptCapsule(t, homeDir, filepath.Join(base, "sleeper"), "name: sleeper\nversion: 1.0.0\n", probeWasm)
	replayCapsule(t, homeDir, filepath.Join(base, "reviewer"), "reviewer", "1.0.0", "lifecycle:\n  after_task: exit\n", workerTranscript)
	scriptCapsule(t, homeDir, filepath.Join(base, "deleg"), `name: deleg
version: 0.1.0
capabilities:
  limits:
    deadline_seconds: 120
  spawn:
    allow: [local/worker, local/reviewer, local/sleeper]
`, delegatorWasm)
	task := `wait\n{\"capsule\":\"worker\",\"version\":\"1.0.0\",\"task\":\"count\"}\n{\"capsule\":\"reviewer\",\"version\":\"1.0.0\",\"task\":\"review\"}\n{\"capsule\":\"sleeper\",\"version\":\"1.0.0\",\"task\":\"sleep 3s\"}`
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/deleg, local/worker, local/reviewer, local/sleeper]\n", `version: 1
responses:
  - content:
      - {type: tool_call, id: call_1, name: delegate-task, input: {capsule: deleg, version: 0.1.0, task: "`+task+`"}}
  - content:
      - {type: text, text: "Waiting."}
  - content:
      - {type: text, text: "All done."}
`)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch", "--max-concurrent", "4")

	cmd, br, stderr := startMurEnv(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "go")
	rd := readReady(t, br)
	// While the sleeper runs, all three levels are live.
	var rows []struct {
		SessionID string  `json:"session_id"`
		Capsule   string  `json:"capsule"`
		SpawnedBy *string `json:"spawned_by"`
	}
	for i := 0; i < 200; i++ {
		r := runMur(t, homeDir, homeDir, nil, "ps", "--json")
		json.Unmarshal([]byte(r.Stdout), &rows)
		if strings.Contains(r.Stdout, "local/sleeper@1.0.0") && strings.Contains(r.Stdout, "local/deleg@0.1.0") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	by := map[string]string{}
	ses := map[string]string{}
	for _, r := range rows {
		ses[r.Capsule] = r.SessionID
		if r.SpawnedBy != nil {
			by[r.Capsule] = *r.SpawnedBy
		}
	}
	if by["local/orch@0.1.0"] != "" || by["local/deleg@0.1.0"] != rd.SessionID || by["local/sleeper@1.0.0"] != ses["local/deleg@0.1.0"] {
		t.Errorf("mur ps --json spawned_by: %+v", rows)
	}
	table := runMur(t, homeDir, homeDir, nil, "ps").Stdout
	if i, j := strings.Index(table, rd.SessionID+"  local/orch"), strings.Index(table, "  "+rd.SessionID+"\n"); i < 0 || j < i {
		t.Errorf("mur ps does not list the child after its parent with SPAWNED_BY:\n%s", table)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}

	show := runMur(t, homeDir, orch, nil, "trace", "show", rd.SessionID)
	if !strings.Contains(show.Stdout, "delegated: 1") || !strings.Contains(show.Stdout, "deleg@0.1.0") {
		t.Errorf("trace show:\n%s", show.Stdout)
	}
	tree := runMur(t, homeDir, orch, nil, "trace", "show", "--tree", rd.SessionID)
	if tree.Code != 0 {
		t.Fatalf("trace show --tree: %+v", tree)
	}
	lines := strings.Split(strings.TrimRight(tree.Stdout, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("tree of %d lines, want 5:\n%s", len(lines), tree.Stdout)
	}
	wants := []string{
		"^local/orch@0.1.0 \\(agent\\)  " + rd.SessionID + "  ok  ",
		"^└─ deleg@0.1.0 \\(script\\)  ses_[0-9a-f]{32}  ok  ",
		"^   ├─ worker@1.0.0 \\(script\\)  ses_[0-9a-f]{32}  ok  ",
		"^   ├─ reviewer@1.0.0 \\(agent\\)  ses_[0-9a-f]{32}  ok  ",
		"^   └─ sleeper@1.0.0 \\(script\\)  ses_[0-9a-f]{32}  ok  ",
	}
	for i, w := range wants {
		if !regexp.MustCompile(w).MatchString(lines[i]) {
			t.Errorf("tree line %d %q does not match %s\n%s", i, lines[i], w, tree.Stdout)
		}
	}
	if r := runMur(t, homeDir, orch, nil, "trace", "show", "--tree", "--json", rd.SessionID); r.Code != 2 {
		t.Errorf("--tree --json: %+v", r)
	}
}

// TestDelegationExample runs examples/delegation as the README's command
// does: mur-roost allowing the orchestrator, the three capsules published,
// the orchestrator run on a work folder holding notes.md. Both delegations
// start in the same turn and end ok; the task continues once with both;
// the worker starts with a copy of the work folder when workdir snapshots
// are built (with none yet, its folder is empty and it says so).
func TestDelegationExample(t *testing.T) {
	homeDir, work := t.TempDir(), t.TempDir()
	ex := filepath.Join(repoRoot(), "examples", "delegation")
	for _, c := range []string{"worker", "reviewer", "."} {
		zip := filepath.Join(work, filepath.Base(filepath.Join(ex, c))+".mur.zip")
		if r := runMur(t, homeDir, filepath.Join(ex, c), nil, "build", "-o", zip); r.Code != 0 {
			t.Fatalf("build %s: %+v", c, r)
		}
		if r := runMur(t, homeDir, work, nil, "publish", zip); r.Code != 0 {
			t.Fatalf("publish %s: %+v", c, r)
		}
	}
	scope := runMur(t, homeDir, ex, nil, "run", "--explain-scope")
	if !strings.Contains(scope.Stdout, "spawn workdir snapshot: local/delegation-worker") {
		t.Errorf("--explain-scope:\n%s%s", scope.Stdout, scope.Stderr)
	}
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orchestrator")
	wd := filepath.Join(work, "orchestrator")
	os.MkdirAll(wd, 0o755)
	notes, _ := os.ReadFile(filepath.Join(ex, "notes.md"))
	os.WriteFile(filepath.Join(wd, "notes.md"), notes, 0o644)
	r := runMur(t, homeDir, ex, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "report", "--workdir", wd)
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	ds := byType(lines, trace.TypeDelegationStart)
	dl := byType(lines, trace.TypeDelegation)
	if len(ds) != 2 || len(dl) != 2 || dl[0].Str("outcome") != "ok" || dl[1].Str("outcome") != "ok" {
		t.Fatalf("delegations %v %v\n%s", ds, dl, types(lines))
	}
	// Both started before the task waited: in parallel, one turn.
	if w := byType(lines, trace.TypeTaskWaiting); len(w) != 1 || w[0].Int("outstanding") < 1 {
		t.Errorf("task_waiting %v", w)
	}
	if c := byType(lines, trace.TypeTaskContinued); len(c) != 1 ||
		!strings.Contains(string(c[0].Fields["delegations"]), ds[0].Str("delegation_id")) ||
		!strings.Contains(string(c[0].Fields["delegations"]), ds[1].Str("delegation_id")) {
		t.Errorf("task_continued %v", c)
	}
	res, _ := os.ReadFile(filepath.Join(ds[0].Str("child_workdir"), "out", "result.txt"))
	switch s := string(res); {
	case strings.Contains(s, "file: notes.md: 6 lines, "):
	case ds[0].Fields["workdir_snapshot"] == nil && strings.Contains(s, "files: none"):
		t.Log("no workdir snapshot was made (not built yet): the worker's folder was empty")
	default:
		t.Errorf("the worker's result %q (snapshot %s)", s, ds[0].Fields["workdir_snapshot"])
	}
	report, _ := os.ReadFile(filepath.Join(rd.RecordsDir, "out", "result.txt"))
	if !strings.HasPrefix(string(report), "Report: 2 delegations, both ended ok.") {
		t.Errorf("report %q", report)
	}
}

// TestScriptLifeline: kill -9 of a script parent while its script child
// sleeps closes the child's lifeline; the child writes spawner_ended, stops
// at once as on SIGTERM (session_end failed, terminated) and exits.
func TestScriptLifeline(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	scriptCapsule(t, homeDir, filepath.Join(base, "sleeper"), "name: sleeper\nversion: 1.0.0\ncapabilities:\n  limits:\n    deadline_seconds: 120\n", probeWasm)
	deleg := scriptCapsule(t, homeDir, filepath.Join(base, "deleg"), `name: deleg
version: 0.1.0
capabilities:
  limits:
    deadline_seconds: 120
  spawn:
    allow: [local/sleeper]
`, delegatorWasm)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/deleg")
	task := "wait\n" + `{"capsule":"sleeper","version":"1.0.0","task":"sleep 60s"}`
	cmd, out, stderr := startMurEnv(t, homeDir, deleg, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", task)
	rd := readReady(t, out)
	var child running.Record
	for i := 0; child.PID == 0; i++ {
		recs, _ := running.Scan(home.Running(homeDir))
		for _, r := range recs {
			if r.Record.SpawnedBy == rd.SessionID {
				child = r.Record
			}
		}
		if i > 600 {
			t.Fatalf("no child record; parent stderr %s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	for i := 0; !gone(child.PID); i++ {
		if i > 600 {
			t.Fatalf("the child %d outlived its parent", child.PID)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cl := traceLines(t, child.RecordsDir)
	end := cl[len(cl)-1]
	if !strings.Contains(types(cl), "spawner_ended") || end.EventType != trace.TypeSessionEnd ||
		end.Str("exit_status") != trace.EndFailed || end.Str("reason") != "terminated" {
		t.Errorf("child trace: %s; end %v", types(cl), end.Fields)
	}
}
