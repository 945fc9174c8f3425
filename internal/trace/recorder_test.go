package trace

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func newTestRecorder(t *testing.T) (*Recorder, string, *bytes.Buffer) {
	t.Helper()
	p := filepath.Join(t.TempDir(), FileName)
	tw, err := Create(p, "ses_x", Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tw.Close() })
	var logs bytes.Buffer
	rec := NewRecorder(tw, nil, time.Now(), slog.New(slog.NewTextHandler(&logs, nil)))
	rec.Emit(SessionStart{CapsuleName: "a/b", CapsuleVersion: "1", Kind: "script"})
	return rec, p, &logs
}

func TestRecorderCountsToolCalls(t *testing.T) {
	rec, p, _ := newTestRecorder(t)
	rec.ToolCall("echo", time.Now(), 3, 4, "")
	rec.ToolCall("nope", time.Now(), 1, 0, "tool not declared: nope")
	rec.CallDeadline("capsule.wasm", "murmur:capsule/run@0.1.0#run", 1500*time.Millisecond)
	rec.End(EndOK, "", true)
	f, _ := ReadFile(p)
	s := Summarize(f)
	if len(s.ToolCalls) != 2 || s.ToolErrors != 1 || len(s.Deadlines) != 1 || s.Deadlines[0].Int("deadline_ms") != 1500 {
		t.Fatalf("summary %+v", s)
	}
	end := f.Lines[len(f.Lines)-1]
	if end.Int("tool_calls") != 2 || end.Int("tool_errors") != 1 {
		t.Errorf("session_end totals %v", end.Fields)
	}
}

// After session_end nothing more is written: a tool call returning late (the
// signal path used to let one follow session_end) is refused, counted and
// logged once, and the totals stay those of the lines before session_end.
func TestRecorderIsSealedBySessionEnd(t *testing.T) {
	rec, p, logs := newTestRecorder(t)
	rec.ToolCall("echo", time.Now(), 1, 1, "")
	if !rec.End(EndFailed, "terminated", false) {
		t.Fatal("the first End did not end the session")
	}
	if rec.End(EndOK, "", false) {
		t.Error("a second End ended the session again")
	}
	rec.ToolCall("late", time.Now(), 1, 1, "")
	rec.ArtifactPulled(ArtifactPulled{Name: "a/b"})
	rec.CallDeadline("c", "x#y", time.Second)
	if id := rec.Emit(A2ASend{PeerURL: "http://x"}); id != "" {
		t.Errorf("a late Emit returned the line id %q", id)
	}
	if got := rec.Refused(); got != 4 {
		t.Errorf("Refused() = %d, want 4", got)
	}
	if calls, _ := rec.Totals(); calls != 1 {
		t.Errorf("a refused tool call was counted: %d calls", calls)
	}
	if n := strings.Count(logs.String(), "after session_end"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logs)
	}
	f, _ := ReadFile(p)
	last := f.Lines[len(f.Lines)-1]
	if last.EventType != TypeSessionEnd || len(f.Lines) != 3 {
		t.Fatalf("trace has %d lines ending in %s, want session_start, tool_call, session_end", len(f.Lines), last.EventType)
	}
}

// Concurrent tool calls racing End: session_end is the last line, and its
// totals equal the tool_call lines before it.
func TestRecorderEndRacesToolCalls(t *testing.T) {
	for round := 0; round < 20; round++ {
		rec, p, _ := newTestRecorder(t)
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					rec.ToolCall("t", time.Now(), 1, 1, "")
				}
			}()
		}
		time.Sleep(time.Duration(round) * 50 * time.Microsecond)
		rec.End(EndOK, "", false)
		wg.Wait()
		f, _ := ReadFile(p)
		last := f.Lines[len(f.Lines)-1]
		if last.EventType != TypeSessionEnd {
			t.Fatalf("round %d: the last line is %s", round, last.EventType)
		}
		if got, want := last.Int("tool_calls"), int64(len(f.Lines)-2); got != want {
			t.Fatalf("round %d: session_end says %d tool calls, the trace has %d", round, got, want)
		}
		calls, _ := rec.Totals()
		if calls+rec.Refused() != 400 {
			t.Fatalf("round %d: %d recorded + %d refused != 400", round, calls, rec.Refused())
		}
	}
}
