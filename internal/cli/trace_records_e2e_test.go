package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/trace"
)

// Two --capsule runs sharing a work folder: A ran without --workdir (its work
// folder, and so its project dir, is ./workdir/A), B ran with --workdir set to
// A's work folder. B's records then live in a directory named after A.
func TestTraceRmFindsASessionByItsRecords(t *testing.T) {
	homeDir, cwd := t.TempDir(), t.TempDir()
	a := ids.AtTime(ids.Session, time.Now().Add(-time.Minute))
	b := ids.New(ids.Session)
	shared := filepath.Join(cwd, "workdir", a)
	writeTrace(t, homeDir, shared, a, true, 1)
	bDir := writeTrace(t, homeDir, shared, b, true, 3)

	if r := runMur(t, homeDir, cwd, nil, "trace", "show", b); r.Code != 0 || !strings.Contains(r.Stdout, "session:   "+b) ||
		!strings.Contains(r.Stdout, "tools:     3") {
		t.Fatalf("trace show B before any rm: %+v", r)
	}
	if r := runMur(t, homeDir, cwd, nil, "trace", "rm", a); r.Code != 0 || !strings.Contains(r.Stdout, "removed") {
		t.Fatalf("first trace rm A: %+v", r)
	}
	r := runMur(t, homeDir, cwd, nil, "trace", "rm", a)
	if r.Code == 0 || !strings.Contains(r.Stderr, "error[E-TRC-004]") || !strings.Contains(r.Stderr, "no records of session "+a) {
		t.Errorf("second trace rm A: want no such session, got %+v", r)
	}
	if _, err := os.Stat(filepath.Join(bDir, trace.FileName)); err != nil {
		t.Fatalf("B's trace is gone after removing A: %v", err)
	}
	if r := runMur(t, homeDir, cwd, nil, "trace", "show", b); r.Code != 0 || !strings.Contains(r.Stdout, "session:   "+b) {
		t.Errorf("trace show B after rm A: %+v", r)
	}

	// A directory merely named like a session, with no trace naming it, is
	// not that session's records.
	ghost := ids.New(ids.Session)
	os.MkdirAll(filepath.Join(home.Records(homeDir), "tmp", ghost, "logs"), 0o700)
	if r := runMur(t, homeDir, cwd, nil, "trace", "rm", ghost); r.Code == 0 || !strings.Contains(r.Stderr, "E-TRC-004") {
		t.Errorf("rm of a dir named like a session: %+v", r)
	}
	// Nor is a records dir whose trace names another session.
	other := writeTrace(t, homeDir, cwd, ids.New(ids.Session), true, 0)
	impostor := filepath.Join(filepath.Dir(other), ids.New(ids.Session))
	if err := os.Rename(other, impostor); err != nil {
		t.Fatal(err)
	}
	if r := runMur(t, homeDir, cwd, nil, "trace", "show", filepath.Base(impostor)); r.Code == 0 || !strings.Contains(r.Stderr, "E-TRC-004") {
		t.Errorf("show of a records dir whose trace names another session: %+v", r)
	}
}

// trace.retain with max_sessions: 1 under concurrent runs: no run may lose
// its records dir while it starts or runs (issue 14 item 3).
func TestRunTraceRetainConcurrent(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "ret1"), "name: ret1\nversion: 1.0.0\ntrace:\n  retain:\n    max_sessions: 1\n",
		fixture(t, "ok.wat"))
	if r := runMur(t, homeDir, proj, nil, "run", "--task", "warm"); r.Code != 0 { // warm the compile cache
		t.Fatalf("first run: %+v", r)
	}
	for round := 0; round < 3; round++ {
		n := 6 + 3*round
		var wg sync.WaitGroup
		results := make([]murResult, n)
		for i := range results {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				results[i] = runMur(t, homeDir, proj, nil, "run", "--json", "--task", fmt.Sprintf("task %d", i))
			}(i)
		}
		wg.Wait()
		for i, r := range results {
			if r.Code != 0 || strings.Contains(r.Stderr, "E-IO-05") || strings.Contains(r.Stderr, "W-IO-051") {
				t.Errorf("round %d run %d of %d: %+v", round, i, n, r)
			}
		}
	}
	// Once every run has ended, the next one keeps only itself.
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "last")
	if r.Code != 0 {
		t.Fatalf("last run: %+v", r)
	}
	entries, _ := os.ReadDir(home.ProjectRecords(homeDir, proj))
	if len(entries) != 1 || entries[0].Name() != parseReady(t, r.Stdout).SessionID {
		t.Errorf("after the last run the project keeps %v, want only that run", entries)
	}
}

// trace show flags session_end totals that disagree with the lines, and
// shows a guest-chosen tool name with its control characters escaped.
func TestTraceShowFlagsDisagreementsAndEscapes(t *testing.T) {
	homeDir, proj := t.TempDir(), t.TempDir()
	id := ids.New(ids.Session)
	dir := filepath.Join(home.ProjectRecords(homeDir, proj), id)
	os.MkdirAll(dir, 0o700)
	w, err := trace.Create(filepath.Join(dir, trace.FileName), id, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Emit(trace.SessionStart{CapsuleName: "local/thin", CapsuleVersion: "1.0.0", Kind: "script"})
	crafted := "local/x\r\x1b[2K  local/echo-tool ok 1 ms\u202e"
	w.Emit(trace.ToolCall{ToolName: crafted, Status: "ok", DurationMS: 1})
	w.Emit(trace.SessionEnd{ExitStatus: trace.EndOK, DurationMS: 5, ToolCalls: 55})
	w.Close()

	r := runMur(t, homeDir, proj, nil, "trace", "show", id)
	if r.Code != 0 {
		t.Fatalf("trace show: %+v", r)
	}
	if !strings.Contains(r.Stdout, "disagrees: session_end.tool_calls is 55, but the trace holds 1 tool_call line(s)") {
		t.Errorf("no disagreement flagged:\n%s", r.Stdout)
	}
	if strings.ContainsAny(r.Stdout, "\r\x1b\u202e") {
		t.Errorf("control characters reached the terminal: %q", r.Stdout)
	}
	if !strings.Contains(r.Stdout, `local/x\r\x1b[2K  local/echo-tool ok 1 ms\u202e`) {
		t.Errorf("the crafted name is not shown escaped:\n%s", r.Stdout)
	}
	// Totals that agree: nothing flagged.
	writeTrace(t, homeDir, proj, ids.New(ids.Session), true, 3)
	if r := runMur(t, homeDir, proj, nil, "trace", "show", "@1"); r.Code != 0 || strings.Contains(r.Stdout, "disagrees") {
		t.Errorf("agreeing totals flagged: %+v", r)
	}
}
