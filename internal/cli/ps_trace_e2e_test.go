package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/trace"
)

func deadPID(t testing.TB) int {
	t.Helper()
	c := exec.Command("/bin/true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

func TestPsListsLiveAndPrunesStale(t *testing.T) {
	homeDir := t.TempDir()
	dir := home.Running(homeDir)
	if r := runMur(t, homeDir, homeDir, nil, "ps"); r.Code != 0 || r.Stdout != "no running capsules\n" {
		t.Fatalf("empty ps: %+v", r)
	}

	// A live record: a sleeping process this test owns.
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	start, err := running.ProcessStart(sleeper.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	liveID, staleID, recycledID := ids.New(ids.Session), ids.New(ids.Session), ids.New(ids.Session)
	url := "127.0.0.1:41234"
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(running.Write(dir, running.Record{SessionID: liveID, PID: sleeper.Process.Pid, ProcessStart: start,
		CapsuleName: "local/worker-a", CapsuleVersion: "0.1.0", RecordsDir: "/r", Workdir: "/w",
		StartedAt: time.Now().Add(-125 * time.Second).UTC().Format(time.RFC3339)}))
	must(running.Write(dir, running.Record{SessionID: ids.New(ids.Session), URL: &url, PID: sleeper.Process.Pid, ProcessStart: start,
		CapsuleName: "local/agent", CapsuleVersion: "1.0.0", RecordsDir: "/r", Workdir: "/w",
		StartedAt: time.Now().UTC().Format(time.RFC3339)}))
	must(running.Write(dir, running.Record{SessionID: staleID, PID: deadPID(t), ProcessStart: running.BootID() + ":1",
		CapsuleName: "local/gone", CapsuleVersion: "1", RecordsDir: "/r", StartedAt: time.Now().UTC().Format(time.RFC3339)}))
	// Same pid as the live one, other start time: a recycled pid.
	must(running.Write(dir, running.Record{SessionID: recycledID, PID: sleeper.Process.Pid, ProcessStart: running.BootID() + ":1",
		CapsuleName: "local/recycled", CapsuleVersion: "1", RecordsDir: "/r", StartedAt: time.Now().UTC().Format(time.RFC3339)}))
	must(os.WriteFile(filepath.Join(dir, "junk.json"), []byte("{"), 0o600))

	r := runMur(t, homeDir, homeDir, nil, "ps")
	if r.Code != 0 {
		t.Fatalf("ps: %+v", r)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "SESSION CAPSULE STATUS UPTIME URL SPAWNED_BY" {
		t.Fatalf("ps output:\n%s", r.Stdout)
	}
	f := strings.Fields(lines[1])
	if f[0] != liveID || f[1] != "local/worker-a@0.1.0" || f[2] != "running" || !strings.HasPrefix(f[3], "2m0") || f[4] != "-" {
		t.Errorf("live row: %q", lines[1])
	}
	if !strings.HasSuffix(lines[2], url+"  -") {
		t.Errorf("agent row lacks its url: %q", lines[2])
	}
	for _, id := range []string{staleID, recycledID, "junk.json"} {
		if !strings.Contains(r.Stderr, "pruned: ") || !strings.Contains(r.Stderr, id) {
			t.Errorf("stderr does not report pruning %s:\n%s", id, r.Stderr)
		}
	}
	left, _ := running.Scan(dir)
	if len(left) != 2 {
		t.Errorf("%d records left after ps, want the 2 live ones", len(left))
	}
}

// writeTrace records a session of project proj under home, like a run would.
func writeTrace(t testing.TB, homeDir, proj, id string, ended bool, calls int) string {
	t.Helper()
	dir := filepath.Join(home.ProjectRecords(homeDir, proj), id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	w, err := trace.Create(filepath.Join(dir, trace.FileName), id, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Emit(trace.SessionStart{CapsuleName: "local/demo", CapsuleVersion: "0.2.0", Kind: "script",
		ToolsDeclared: []string{"local/echo"}, EffectiveGrants: json.RawMessage(`{}`)})
	for i := 0; i < calls; i++ {
		w.Emit(trace.ToolCall{ToolName: fmt.Sprintf("echo%d", i), InputBytes: 3, OutputBytes: 4, DurationMS: int64(10 + i), Status: "ok"})
	}
	if ended {
		w.Emit(trace.SessionEnd{ExitStatus: trace.EndOK, DurationMS: 1234, ToolCalls: calls})
	}
	return dir
}

func TestTraceShowAndRm(t *testing.T) {
	homeDir, proj := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte("name: demo\nversion: 0.2.0\n"), 0o600)
	sub := filepath.Join(proj, "src")
	os.MkdirAll(sub, 0o755)
	older := ids.AtTime(ids.Session, time.Now().Add(-time.Hour))
	newer := ids.New(ids.Session)
	writeTrace(t, homeDir, proj, older, true, 2)
	newerDir := writeTrace(t, homeDir, proj, newer, false, 1)

	// @1 from a subdirectory: the newest session of the project, never ended.
	r := runMur(t, homeDir, sub, nil, "trace", "show")
	if r.Code != 0 || !strings.Contains(r.Stdout, newer) ||
		!strings.Contains(r.Stdout, "ended without a session_end; its last event is tool_call") {
		t.Fatalf("trace show @1: %+v", r)
	}
	r = runMur(t, homeDir, proj, nil, "trace", "show", "@2")
	for _, want := range []string{older, "local/demo@0.2.0 (script)", "ending:    ok", "1.23 s", "tools:     2", "echo0", "echo1", "11 ms"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("trace show @2 lacks %q:\n%s", want, r.Stdout)
		}
	}
	// By id from anywhere, and by path.
	if r := runMur(t, homeDir, t.TempDir(), nil, "trace", "show", older); r.Code != 0 || !strings.Contains(r.Stdout, older) {
		t.Errorf("show by id elsewhere: %+v", r)
	}
	if r := runMur(t, homeDir, t.TempDir(), nil, "trace", "show", filepath.Join(newerDir, trace.FileName)); r.Code != 0 || !strings.Contains(r.Stdout, newer) {
		t.Errorf("show by path: %+v", r)
	}
	// A trace cut off mid-line still reads.
	f, _ := os.OpenFile(filepath.Join(newerDir, trace.FileName), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"event_type":"tool_ca`)
	f.Close()
	if r := runMur(t, homeDir, proj, nil, "trace", "show", "@1"); r.Code != 0 || !strings.Contains(r.Stdout, "cut off") ||
		!strings.Contains(r.Stdout, "last event is tool_call") {
		t.Errorf("cut trace: %+v", r)
	}

	for _, tc := range []struct {
		args []string
		code string
	}{
		{[]string{"trace", "show", "@3"}, "E-TRC-004"},
		{[]string{"trace", "show", "@0"}, "E-RUN-052"},
		{[]string{"trace", "show", ids.New(ids.Session)}, "E-TRC-004"},
		{[]string{"trace", "show", "/nonexistent/trace.jsonl"}, "E-TRC-002"},
		{[]string{"trace", "show", "gibberish"}, "E-RUN-052"},
		{[]string{"trace", "rm", "ses_nothex"}, "E-RUN-052"},
		{[]string{"trace", "show", "ffffffffff"}, "E-RUN-053"},
		{[]string{"trace", "show", "a", "b"}, "E-CFG-001"},
	} {
		r := runMur(t, homeDir, proj, nil, tc.args...)
		if r.Code == 0 || !strings.Contains(r.Stderr, "error["+tc.code+"]") || !strings.Contains(r.Stderr, "hint:") {
			t.Errorf("mur %v: want %s, got %+v", tc.args, tc.code, r)
		}
	}

	if r := runMur(t, homeDir, proj, nil, "trace", "rm", older); r.Code != 0 || !strings.Contains(r.Stdout, "removed") {
		t.Fatalf("trace rm: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(home.ProjectRecords(homeDir, proj), older)); !os.IsNotExist(err) {
		t.Errorf("records dir still there: %v", err)
	}
	if r := runMur(t, homeDir, proj, nil, "trace", "show", "@2"); !strings.Contains(r.Stderr, "E-TRC-004") {
		t.Errorf("@2 after rm: %+v", r)
	}
}

func TestTraceRmRefusesARunningSession(t *testing.T) {
	homeDir, proj := t.TempDir(), t.TempDir()
	id := ids.New(ids.Session)
	writeTrace(t, homeDir, proj, id, false, 0)
	pid, start, _ := running.Self()
	running.Write(home.Running(homeDir), running.Record{SessionID: id, PID: pid, ProcessStart: start, RecordsDir: "/r"})
	if r := runMur(t, homeDir, proj, nil, "trace", "rm", id); !strings.Contains(r.Stderr, "E-TRC-007") {
		t.Fatalf("rm of a running session: %+v", r)
	}
}

// Item 10: a session killed before it could clean up leaves
// ~/.murmur/sessions/<id> behind; mur ps removes it once nothing holds the
// session's begun lock, and leaves alone one whose lock a live process holds
// or that has a live running record.
func TestPsRemovesOrphanedRuntimeDirs(t *testing.T) {
	homeDir := t.TempDir()
	sessions := home.Sessions(homeDir)
	orphanID, unmarkedID, heldID, liveID := ids.New(ids.Session), ids.New(ids.Session), ids.New(ids.Session), ids.New(ids.Session)
	mk := func(id string, lock bool) string {
		rt := home.Runtime(homeDir, id)
		if err := os.MkdirAll(rt, 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(rt, "task.md"), []byte("t"), 0o600)
		if lock {
			os.WriteFile(filepath.Join(home.Session(homeDir, id), "begun.lock"), nil, 0o600)
		}
		return home.Session(homeDir, id)
	}
	orphan := mk(orphanID, true)
	unmarked := mk(unmarkedID, false) // killed between its mkdir and its lock
	held := mk(heldID, true)
	live := mk(liveID, true)
	other := filepath.Join(sessions, "not-a-session")
	os.MkdirAll(other, 0o700)

	// A live child process holds held's lock, as a starting session would.
	holder := exec.Command("flock", "-x", filepath.Join(held, "begun.lock"), "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { holder.Process.Kill(); holder.Wait() }()
	for i := 0; exec.Command("flock", "-n", "-s", filepath.Join(held, "begun.lock"), "true").Run() == nil; i++ {
		if i > 500 { // wait until flock holds it: a probe, not a timed assertion
			t.Fatal("flock never took the lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// live: a running record of a live process (this test), lock not held.
	pid, start, _ := running.Self()
	if err := running.Write(home.Running(homeDir), running.Record{SessionID: liveID, PID: pid, ProcessStart: start,
		CapsuleName: "local/live", RecordsDir: "/r", StartedAt: time.Now().UTC().Format(time.RFC3339)}); err != nil {
		t.Fatal(err)
	}

	r := runMur(t, homeDir, homeDir, nil, "ps")
	if r.Code != 0 {
		t.Fatalf("ps: %+v", r)
	}
	for _, gone := range []struct{ id, dir string }{{orphanID, orphan}, {unmarkedID, unmarked}} {
		if _, err := os.Stat(gone.dir); !os.IsNotExist(err) {
			t.Errorf("orphaned runtime dir %s still there: %v", gone.dir, err)
		}
		if !strings.Contains(r.Stderr, "pruned: "+gone.id+" (orphaned runtime dir)") {
			t.Errorf("stderr does not report %s:\n%s", gone.id, r.Stderr)
		}
	}
	for _, kept := range []string{held, live, other} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("%s removed: %v", kept, err)
		}
	}
	if strings.Contains(r.Stderr, heldID) || strings.Contains(r.Stderr, liveID) {
		t.Errorf("ps reported a kept session:\n%s", r.Stderr)
	}
}
