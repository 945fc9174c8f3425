package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/e2e"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/trace"
)

// waitExit waits for a mur started with startMur and returns its status.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("waiting for mur run: %v", err)
	}
	return 0
}

func noRecordsLeft(t *testing.T, homeDir string) {
	t.Helper()
	if left, _ := running.Scan(home.Running(homeDir)); len(left) != 0 {
		t.Errorf("running record left: %+v", left)
	}
}

// An after_task: sleep agent session, listed by mur ps with its URL, is
// stopped by a suffix of its id through murmur.StopSession: mur stop exits
// 0 once the session is gone, and the session, idle and so ended ok, exits 0
// (not 143, which scripts read as a kill) with session_end.
func TestStopAgentSession(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := agentProject(t, homeDir, base, "lifecycle:\n  after_task: sleep\n", agentTranscript)
	cmd, out, stderr := startMur(t, homeDir, proj, "run", "--json")
	rd := readReady(t, out)

	ps := runMur(t, homeDir, proj, nil, "ps")
	row := regexp.MustCompile(`(?m)^` + rd.SessionID + `\s+local/greeter@0\.2\.0\s+running\s+\S+\s+` + regexp.QuoteMeta(*rd.URL) + `\s+-$`)
	if ps.Code != 0 || !row.MatchString(ps.Stdout) {
		t.Fatalf("mur ps does not show the agent session with its URL %s:\n%+v", *rd.URL, ps)
	}

	res := rpc(t, "http://"+*rd.URL, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"say hello"}]}}}`)
	task, _ := res["result"].(map[string]any)["task"].(map[string]any)
	if task == nil {
		t.Fatalf("SendMessage: %v", res)
	}
	taskID, _ := task["id"].(string)

	// While it runs, trace show lists the task and says the session is
	// still running.
	show := runMur(t, homeDir, proj, nil, "trace", "show", rd.SessionID)
	if show.Code != 0 || !strings.Contains(show.Stdout, "still running (pid ") ||
		!strings.Contains(show.Stdout, "  "+taskID+" ok                    turns 2, tokens 0 in / 0 out, tools 1, shell 0, ") {
		t.Errorf("trace show while running:\n%+v", show)
	}

	r := runMur(t, homeDir, proj, nil, "stop", rd.SessionID[len(rd.SessionID)-6:])
	if r.Code != 0 || r.Stdout != "stopped: "+rd.SessionID+"\n" {
		t.Fatalf("mur stop: %+v", r)
	}
	if code := waitExit(t, cmd); code != 0 {
		t.Fatalf("the session exited %d, want 0 (stderr %s)", code, stderr)
	}
	end := lastEnd(t, traceLines(t, rd.RecordsDir))
	if end.Str("exit_status") != "ok" || end.Str("reason") != "stopped" {
		t.Errorf("session_end %v", end.Fields)
	}
	noRecordsLeft(t, homeDir)
	if _, err := os.Stat(filepath.Join(homeDir, ".murmur", "sessions", rd.SessionID)); !os.IsNotExist(err) {
		t.Errorf("runtime dir left: %v", err)
	}

	show = runMur(t, homeDir, proj, nil, "trace", "show", rd.SessionID)
	want := []string{
		"capsule:   local/greeter@0.2.0 (agent)\n",
		"ending:    ok (stopped)\n",
		"tasks:     1\n  " + taskID + " ok                    turns 2, tokens 0 in / 0 out, tools 1, shell 0, ",
		"turns:     2\ntokens:    0 in / 0 out\ntools:     1\n  acme/echo                ok",
		"shell:     0\n",
		"answer:    " + filepath.Join(rd.RecordsDir, "out", "result.txt") + " (25 bytes)\n  The echo tool said hello.\n",
	}
	for _, w := range want {
		if !strings.Contains(show.Stdout, w) {
			t.Errorf("trace show after stop lacks %q:\n%s", w, show.Stdout)
		}
	}
	if strings.Contains(show.Stdout, "delegated:") {
		t.Errorf("a session with no delegation lists delegations:\n%s", show.Stdout)
	}
}

// hangingAgent writes an agent capsule on murmur/driver-anthropic whose
// endpoint is a fake provider that never answers: its task stays in
// inference until it is cancelled.
func hangingAgent(t *testing.T, base string) (string, *fakeprovider.Server) {
	t.Helper()
	fp := fakeProvider(t, fakeprovider.Anthropic)
	fp.Push(fakeprovider.Reply{Hang: true})
	proj := filepath.Join(base, "hang")
	os.MkdirAll(proj, 0o755)
	manifest := "name: hanger\nversion: 1.0.0\nartifacts:\n" +
		e2e.ProviderArtifact("murmur/driver-anthropic", fp.URL, "test-key") + `inference:
  model: claude-test
  driver:
    artifact: murmur/driver-anthropic
lifecycle:
  after_task: sleep
`
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte(manifest), 0o644)
	return proj, fp
}

// Stopping an agent mid-inference cancels its task: mur stop names it on
// its canceled: line, and the trace says the task and the session ended
// canceled.
func TestStopAgentMidInference(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj, fp := hangingAgent(t, base)
	cmd, out, stderr := startMur(t, homeDir, proj, "run", "--json", "--task", "think forever")
	rd := readReady(t, out)
	waitFor(t, "the driver's request to reach the provider", func() bool { return len(fp.Requests()) > 0 })

	r := runMur(t, homeDir, proj, nil, "stop", rd.SessionID)
	m := regexp.MustCompile(`^stopped: ` + rd.SessionID + "\ncanceled: (tsk_[0-9a-f]{32})\n$").FindStringSubmatch(r.Stdout)
	if r.Code != 0 || m == nil {
		t.Fatalf("mur stop: %+v", r)
	}
	if code := waitExit(t, cmd); code != 143 {
		t.Fatalf("the session exited %d, want 143 (stderr %s)", code, stderr)
	}
	lines := traceLines(t, rd.RecordsDir)
	end := lastEnd(t, lines)
	if end.Str("exit_status") != "canceled" || end.Str("reason") != "stopped" {
		t.Errorf("session_end %v", end.Fields)
	}
	var taskEnd *trace.Line
	for i, l := range lines {
		if l.EventType == trace.TypeTaskEnd {
			taskEnd = &lines[i]
		}
	}
	if taskEnd == nil || taskEnd.Str("task_id") != m[1] || taskEnd.Str("exit_status") != "canceled" {
		t.Errorf("task_end %+v, want task %s canceled", taskEnd, m[1])
	}
	noRecordsLeft(t, homeDir)

	show := runMur(t, homeDir, proj, nil, "trace", "show", rd.SessionID)
	if show.Code != 0 || !regexp.MustCompile(`(?m)^  `+m[1]+`\s+canceled\s+`).MatchString(show.Stdout) ||
		!strings.Contains(show.Stdout, "ending:    canceled (stopped)") {
		t.Errorf("trace show of the stopped session:\n%+v", show)
	}
}

// A script capsule has no door: mur stop sends SIGTERM.
func TestStopScriptCapsule(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "sleeper"), "name: sleeper\nversion: 1.0.0\n", fixture(t, "capsule-probe.wasm"))
	cmd, out, stderr := startMur(t, homeDir, proj, "run", "--json", "--task", "sleep 60s")
	rd := readReady(t, out)

	r := runMur(t, homeDir, proj, nil, "stop", rd.SessionID)
	if r.Code != 0 || r.Stdout != "stopped: "+rd.SessionID+"\nsignalled: SIGTERM\n" {
		t.Fatalf("mur stop: %+v", r)
	}
	if code := waitExit(t, cmd); code != 143 {
		t.Fatalf("the session exited %d, want 143 (stderr %s)", code, stderr)
	}
	end := lastEnd(t, traceLines(t, rd.RecordsDir))
	if end.Str("exit_status") != "failed" || end.Str("reason") != "terminated" {
		t.Errorf("session_end %v", end.Fields)
	}
	noRecordsLeft(t, homeDir)
}

// writeRecord writes a running record for pid whose process_start is
// start; an id of "" mints one.
func writeRecord(t *testing.T, homeDir, id string, pid int, start string) string {
	t.Helper()
	if id == "" {
		id = ids.New(ids.Session)
	}
	err := running.Write(home.Running(homeDir), running.Record{
		SessionID: id, PID: pid, ProcessStart: start, CapsuleName: "local/x", CapsuleVersion: "1.0.0",
		Workdir: t.TempDir(), RecordsDir: t.TempDir(), StartedAt: "2026-01-01T00:00:00Z",
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A record whose pid now belongs to another process (here: this test's
// own, with another start time) or to no process is stale: mur stop says
// so, prunes it and signals nothing.
func TestStopStaleRecord(t *testing.T) {
	homeDir, dir := t.TempDir(), t.TempDir()
	own, err := running.ProcessStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		pid   int
		start string
	}{
		{"pid reused", os.Getpid(), own + "1"},
		{"process gone", dead.Process.Pid, own},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := writeRecord(t, homeDir, "", tc.pid, tc.start)
			os.MkdirAll(filepath.Join(home.Sessions(homeDir), id, "runtime"), 0o700)
			r := runMur(t, homeDir, dir, nil, "stop", id)
			if r.Code != 0 || r.Stdout != "not running: "+id+" (its process is gone)\n" || !strings.Contains(r.Stderr, "pruned: "+id+" (stale)") {
				t.Fatalf("mur stop: %+v", r)
			}
			noRecordsLeft(t, homeDir)
			if _, err := os.Stat(filepath.Join(home.Sessions(homeDir), id)); !os.IsNotExist(err) {
				t.Errorf("runtime dir left: %v", err)
			}
		})
	}
}

// A SESSION that names no session, or more than one, or is too short is a
// coded error, and nothing is stopped or pruned.
func TestStopRefusals(t *testing.T) {
	homeDir, dir := t.TempDir(), t.TempDir()
	// Two stale records whose ids share their last 6 characters.
	a := ids.New(ids.Session)
	b := a[:len(a)-10] + "0123" + a[len(a)-6:]
	if b == a {
		b = a[:len(a)-10] + "4567" + a[len(a)-6:]
	}
	own, _ := running.ProcessStart(os.Getpid())
	writeRecord(t, homeDir, a, os.Getpid(), own+"1")
	writeRecord(t, homeDir, b, os.Getpid(), own+"1")
	for _, tc := range []struct {
		name, arg, code string
		status          int
		says            string
	}{
		{"too short", a[len(a)-3:], "E-RUN-052", 2, "is too short to name a session"},
		{"not an id", "not-a-session", "E-RUN-052", 2, "does not name a session"},
		{"@0", "@0", "E-RUN-052", 2, "is not a session ordinal"},
		{"unknown", "ffffffffff", "E-RUN-053", 1, `no running session matches "ffffffffff"`},
		{"ambiguous", a[len(a)-6:], "E-RUN-054", 1, "matches 2 running sessions: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runMur(t, homeDir, dir, nil, "stop", tc.arg)
			if r.Code != tc.status || !strings.Contains(r.Stderr, "error["+tc.code+"]: ") || !strings.Contains(r.Stderr, tc.says) || r.Stdout != "" {
				t.Errorf("mur stop %s: %+v", tc.arg, r)
			}
		})
	}
	if left, _ := running.Scan(home.Running(homeDir)); len(left) != 2 {
		t.Errorf("a refused stop touched the records: %+v", left)
	}
	if r := runMur(t, homeDir, dir, nil, "stop", "--timeout", "-1s", a); r.Code != 2 {
		t.Errorf("negative --timeout: %+v", r)
	}
}
