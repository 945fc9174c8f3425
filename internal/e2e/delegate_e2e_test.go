package e2e_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/trace"
)

// TestDelegateTaskEndToEnd: an orchestrator registers at the real
// mur-roost, its model calls delegate-task, the worker runs as a child mur
// process that registers with the approval, answers, reports its
// completion to the parent's door, and the parent's task continues once
// with the fenced outcome block.
func TestDelegateTaskEndToEnd(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: exit\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", orchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")

	r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "delegate it")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	start := lines[0]
	if !strings.Contains(string(start.Fields["tools_declared"]), `"delegate-task"`) {
		t.Errorf("tools_declared %s", start.Fields["tools_declared"])
	}
	tc := byType(lines, "tool_call")
	if len(tc) != 1 || tc[0].Str("kind") != "runtime" || tc[0].Str("status") != "ok" {
		t.Fatalf("tool_call lines %v\n%s", tc, types(lines))
	}
	ds := byType(lines, trace.TypeDelegationStart)
	if len(ds) != 1 {
		t.Fatalf("delegation_start: %s", types(lines))
	}
	dlg, child := ds[0].Str("delegation_id"), ds[0].Str("child_session_id")
	if !strings.HasPrefix(dlg, "dlg_") || ds[0].Str("capsule") != "worker" || !strings.HasPrefix(child, "ses_") {
		t.Errorf("delegation_start %v", ds[0].Fields)
	}
	wd := ds[0].Str("child_workdir")
	if !strings.HasPrefix(wd, filepath.Join(rd.RecordsDir, "children", "worker-")) || len(filepath.Base(wd)) != len("worker-")+16 {
		t.Errorf("child_workdir %s", wd)
	}
	if st, err := os.Stat(wd); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("child dir %v %v", st, err)
	}
	dl := byType(lines, trace.TypeDelegation)
	if len(dl) != 1 || dl[0].Str("outcome") != "ok" || dl[0].Str("delegation_id") != dlg {
		t.Errorf("delegation %v", dl)
	}
	if w := byType(lines, trace.TypeTaskWaiting); len(w) != 1 || w[0].Int("outstanding") != 1 {
		t.Errorf("task_waiting %v", w)
	}
	cont := byType(lines, trace.TypeTaskContinued)
	if len(cont) != 1 || !strings.Contains(string(cont[0].Fields["delegations"]), dlg) {
		t.Errorf("task_continued %v", cont)
	}
	got, _ := os.ReadFile(filepath.Join(rd.RecordsDir, "out", "result.txt"))
	if string(got) != "The worker reported back." {
		t.Errorf("result.txt %q", got)
	}

	// The child: its records under children/, spawned_by and its completion.
	var rec map[string]any
	matches, _ := filepath.Glob(filepath.Join(homeDir, ".murmur", "records", strings.TrimPrefix(wd, "/"), "ses_*", "completion.json"))
	if len(matches) != 1 {
		t.Fatalf("child completion.json: %v", matches)
	}
	b, _ := os.ReadFile(matches[0])
	json.Unmarshal(b, &rec)
	if rec["status"] != "ok" || rec["reported_by"] != "child" || rec["delivered"] != true || rec["delegation_id"] != dlg ||
		rec["capsule_name"] != "local/worker" || rec["session_id"] != child {
		t.Errorf("completion.json %s", b)
	}
	clines := traceLines(t, filepath.Dir(matches[0]))
	if clines[0].Str("spawned_by") != rd.SessionID || clines[0].Str("delegation_id") != dlg {
		t.Errorf("child session_start %v", clines[0].Fields)
	}
	if got, _ := os.ReadFile(filepath.Join(filepath.Dir(matches[0]), "out", "result.txt")); string(got) != "The report has three findings." {
		t.Errorf("child result %q", got)
	}
}

// TestDelegateRegistrationErrors: spawn.allow with no MURMUR_ROOST_URL is
// E-RUN-019; a daemon that refuses the registration is E-RUN-042; one that
// is not there is E-RUN-043.
func TestDelegateRegistrationErrors(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", orchTranscript)
	r := runMur(t, homeDir, orch, nil, "run", "--task", "x")
	if r.Code == 0 || !strings.Contains(r.Stderr, "E-RUN-019") ||
		!strings.Contains(r.Stderr, "this capsule declares capabilities.spawn.allow and MURMUR_ROOST_URL is not set; delegation requires mur-roost") {
		t.Errorf("no roost: %+v", r)
	}
	roost := startRoost(t, homeDir) // no --spawn-allow: the top-level path is refused
	r = runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--task", "x")
	if r.Code == 0 || !strings.Contains(r.Stderr, "E-RUN-042") || !strings.Contains(r.Stderr, "is not in --spawn-allow") {
		t.Errorf("refused: %+v", r)
	}
	r = runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=http://127.0.0.1:1"}, "run", "--task", "x")
	if r.Code == 0 || !strings.Contains(r.Stderr, "E-RUN-043") || !strings.Contains(r.Stderr, "http://127.0.0.1:1") {
		t.Errorf("unreachable: %+v", r)
	}
}

// TestDelegateLifeline: kill -9 of a parent whose child is running closes
// the child's lifeline; the child appends spawner_ended, winds down as on
// SIGTERM (session_end written) and exits.
func TestDelegateLifeline(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: sleep\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", orchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	cmd, out, stderr := startMurEnv(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "delegate it")
	rd := readReady(t, out)
	var child running.Record
	for i := 0; ; i++ {
		recs, _ := running.Scan(home.Running(homeDir))
		for _, r := range recs {
			if r.Record.SpawnedBy == rd.SessionID {
				child = r.Record
			}
		}
		if child.PID != 0 {
			break
		}
		if i > 600 {
			t.Fatalf("no child record; parent stderr %s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The parent is waiting on its delegation when it is killed.
	for i := 0; len(byType(traceLines(t, rd.RecordsDir), trace.TypeTaskWaiting)) == 0; i++ {
		if i > 600 {
			t.Fatalf("the parent never waited: %s", types(traceLines(t, rd.RecordsDir)))
		}
		time.Sleep(100 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	for i := 0; !gone(child.PID); i++ {
		if i > 600 {
			t.Fatalf("the child %d outlived its parent", child.PID)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cl := traceLines(t, child.RecordsDir)
	ty := types(cl)
	if !strings.Contains(ty, "spawner_ended") || cl[len(cl)-1].EventType != "session_end" {
		t.Errorf("child trace: %s", ty)
	}
}

func completion(t *testing.T, url, session, dlg string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"{}"}]}}}`))
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-murmur-task-origin", "completion")
	req.Header.Set("x-murmur-completion-session", session)
	if dlg != "" {
		req.Header.Set("x-murmur-delegation-id", dlg)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return out
}

// TestDelegateCompletionAnswersAndWindDown: a parent waiting on a child
// answers completions sent by hand with the spec's results and errors; its
// SIGTERM wind-down ends the child, which the launcher records terminated.
func TestDelegateCompletionAnswersAndWindDown(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: sleep\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", orchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	cmd, out, stderr := startMurEnv(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "delegate it")
	rd := readReady(t, out)
	var dlg string
	for i := 0; dlg == ""; i++ {
		if w := byType(traceLines(t, rd.RecordsDir), trace.TypeDelegationStart); len(w) == 1 {
			dlg = w[0].Str("delegation_id")
		}
		if i > 600 {
			t.Fatalf("no delegation_start; stderr %s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	url := "http://" + *rd.URL
	errOf := func(m map[string]any) (float64, string, string) {
		e, _ := m["error"].(map[string]any)
		if e == nil {
			return 0, "", ""
		}
		code, _ := e["code"].(float64)
		msg, _ := e["message"].(string)
		b, _ := json.Marshal(e["data"])
		return code, msg, string(b)
	}
	cases := []struct {
		name, session, dlg string
		code               float64
		msg, reason        string
	}{
		{"misaddressed", "ses_0000000000000000000000000000dead", dlg, -31001,
			"completion is addressed to session ses_0000000000000000000000000000dead, which is not the session running here", "COMPLETION_MISADDRESSED"},
		{"no delegation", rd.SessionID, "", -31002,
			"completion names no delegation in x-murmur-delegation-id, so no task in this session is waiting for it", "COMPLETION_NOT_AWAITED"},
		{"forged", rd.SessionID, "dlg_00000000000000000000000000000000", -31002,
			"no task in this session is waiting for delegation dlg_00000000000000000000000000000000", "COMPLETION_NOT_AWAITED"},
	}
	for _, c := range cases {
		code, msg, data := errOf(completion(t, url, c.session, c.dlg))
		if code != c.code || msg != c.msg || !strings.Contains(data, c.reason) || !strings.Contains(data, "murmur.nexus") {
			t.Errorf("%s: %v %q %s", c.name, code, msg, data)
		}
	}
	res := completion(t, url, rd.SessionID, dlg)
	if r, _ := res["result"].(map[string]any); r["delegation_id"] != dlg || r["received"] != true {
		t.Errorf("awaited: %v", res)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 143 {
		t.Errorf("parent exit %v; stderr %s", err, stderr.String())
	}
	lines := traceLines(t, rd.RecordsDir)
	dl := byType(lines, trace.TypeDelegation)
	if len(dl) != 1 || dl[0].Str("outcome") != "terminated" || dl[0].Str("reason") != "the delegating task was cancelled" {
		t.Errorf("delegation lines %v", dl)
	}
	if c := byType(lines, trace.TypeTaskCanceled); len(c) != 1 || !strings.Contains(string(c[0].Fields["delegation_ids"]), dlg) {
		t.Errorf("task_canceled %v", c)
	}
	wd := byType(lines, trace.TypeDelegationStart)[0].Str("child_workdir")
	matches, _ := filepath.Glob(filepath.Join(homeDir, ".murmur", "records", strings.TrimPrefix(wd, "/"), "ses_*", "completion.json"))
	if len(matches) != 1 {
		t.Fatalf("child completion.json: %v", matches)
	}
	var rec map[string]any
	b, _ := os.ReadFile(matches[0])
	json.Unmarshal(b, &rec)
	if rec["status"] != "terminated" || rec["reported_by"] != "launcher" ||
		!strings.HasPrefix(rec["detail"].(string), "the parent ended this delegation") {
		t.Errorf("completion.json %s", b)
	}
}

// waitLines waits for at least n trace lines of type typ in recordsDir.
func waitLines(t *testing.T, recordsDir, typ string, n int, stderr any) []trace.Line {
	t.Helper()
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(recordsDir, trace.FileName)); err == nil {
			if l := byType(traceLines(t, recordsDir), typ); len(l) >= n {
				return l
			}
		}
		if i > 1200 {
			t.Fatalf("no %d %s line(s) in %s; stderr %s", n, typ, recordsDir, stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// childOf waits for the running record of a session spawned by parent.
func childOf(t testing.TB, homeDir, parent string) running.Record {
	t.Helper()
	for i := 0; ; i++ {
		recs, _ := running.Scan(home.Running(homeDir))
		for _, r := range recs {
			if r.Record.SpawnedBy == parent {
				return r.Record
			}
		}
		if i > 1200 {
			t.Fatalf("no child of %s is running", parent)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// childRecords is the records dir of the one session that ran in a child's
// work folder.
func childRecords(t testing.TB, homeDir, childWorkdir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(homeDir, ".murmur", "records", strings.TrimPrefix(childWorkdir, "/"), "ses_*"))
	if len(m) != 1 {
		t.Fatalf("records of the child in %s: %v", childWorkdir, m)
	}
	return m[0]
}

// readCompletion reads a child's completion.json.
func readCompletion(t *testing.T, recordsDir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(recordsDir, "completion.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("completion.json %s: %v", b, err)
	}
	return rec
}

// readTrace reads a trace that may not exist yet.
func readTrace(recordsDir string) ([]trace.Line, error) {
	f, err := trace.ReadFile(filepath.Join(recordsDir, trace.FileName))
	if err != nil {
		return nil, err
	}
	return f.Lines, nil
}
