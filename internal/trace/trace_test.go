package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/ids"
)

func newTrace(t *testing.T) (*Writer, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), FileName)
	w, err := Create(p, ids.New(ids.Session), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, p
}

func readLines(t *testing.T, p string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for i, ln := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(ln), &m); err != nil {
			t.Fatalf("line %d %q: %v", i+1, ln, err)
		}
		out = append(out, m)
	}
	return out
}

func TestEnvelopeAndFields(t *testing.T) {
	w, p := newTrace(t)
	start := w.Emit(SessionStart{CapsuleName: "local/a", CapsuleVersion: "0.1.0", Kind: "script",
		ToolsDeclared: []string{"local/echo"}, EffectiveGrants: json.RawMessage(`{"env":{"allow":["X"]}}`)})
	msg := "boom"
	w.Emit(ToolCall{ToolName: "echo", InputBytes: 3, OutputBytes: 5, DurationMS: 2, Status: "ok"})
	w.Emit(ToolCall{ToolName: "nope", Status: "error", Error: &msg})
	w.Emit(CallDeadline{Component: "capsule.wasm", Call: "murmur:capsule/run@0.1.0#run", DeadlineMS: 1000})
	w.Emit(ArtifactPulled{Name: "acme/x", Version: "1.0.0", SHA256: strings.Repeat("a", 64), Store: "project"})
	w.Emit(A2ASend{PeerURL: "http://127.0.0.1:1", MessageID: "m", TaskID: "t", ContextID: "c", State: "TASK_STATE_COMPLETED"})
	w.Emit(SessionEnd{ExitStatus: EndOK, DurationMS: 9, ToolCalls: 2, ToolErrors: 1})
	w.Close()

	lines := readLines(t, p)
	wantTypes := []string{"session_start", "tool_call", "tool_call", "call_deadline", "artifact_pulled", "a2a_send", "session_end"}
	if len(lines) != len(wantTypes) {
		t.Fatalf("%d lines, want %d", len(lines), len(wantTypes))
	}
	seen := map[string]bool{}
	for i, l := range lines {
		if l["event_type"] != wantTypes[i] {
			t.Errorf("line %d event_type %v, want %s", i+1, l["event_type"], wantTypes[i])
		}
		id, _ := l["event_id"].(string)
		if !ids.Valid(ids.Event, id) || seen[id] {
			t.Errorf("line %d event_id %q invalid or repeated", i+1, id)
		}
		seen[id] = true
		if l["session_id"] != w.SessionID() {
			t.Errorf("line %d session_id %v", i+1, l["session_id"])
		}
		if ts, ok := l["timestamp"].(float64); !ok || time.Since(time.UnixMilli(int64(ts))) > time.Minute {
			t.Errorf("line %d timestamp %v", i+1, l["timestamp"])
		}
		pid, has := l["parent_id"]
		if !has {
			t.Errorf("line %d has no parent_id", i+1)
		}
		if i == 0 && pid != nil {
			t.Errorf("session_start parent_id = %v, want null", pid)
		}
		if i > 0 && pid != start {
			t.Errorf("line %d parent_id = %v, want %s", i+1, pid, start)
		}
	}
	for k, want := range map[string]any{"capsule_name": "local/a", "kind": "script", "spawned_by": nil} {
		if got, ok := lines[0][k]; !ok || got != want {
			t.Errorf("session_start %s = %v, want %v", k, got, want)
		}
	}
	if g := lines[0]["effective_grants"].(map[string]any); g["env"] == nil {
		t.Errorf("effective_grants = %v", g)
	}
	if lines[2]["error"] != "boom" || lines[1]["error"] != nil {
		t.Errorf("tool_call errors: %v / %v", lines[1]["error"], lines[2]["error"])
	}
	if lines[6]["exit_status"] != "ok" || lines[6]["tool_errors"] != float64(1) {
		t.Errorf("session_end = %v", lines[6])
	}
}

func TestEachEventIsOnDiskAtOnce(t *testing.T) {
	w, p := newTrace(t)
	w.Emit(SessionStart{CapsuleName: "local/a", CapsuleVersion: "1", Kind: "script"})
	// No Close, no Sync: another reader must already see the whole line.
	f, err := ReadFile(p)
	if err != nil || len(f.Lines) != 1 || f.Lines[0].EventType != TypeSessionStart {
		t.Fatalf("after one Emit: %+v, %v", f, err)
	}
}

func TestConcurrentEmitNeverInterleaves(t *testing.T) {
	w, p := newTrace(t)
	w.Emit(SessionStart{CapsuleName: "local/a", CapsuleVersion: "1", Kind: "script"})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				w.Emit(ToolCall{ToolName: fmt.Sprintf("t%d-%d-%s", g, i, strings.Repeat("x", 300)), Status: "ok"})
			}
		}(g)
	}
	wg.Wait()
	w.Close()
	if n := len(readLines(t, p)); n != 1+8*200 {
		t.Fatalf("%d lines, want %d", n, 1+8*200)
	}
}

func TestCreateRefusesExisting(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileName)
	os.WriteFile(p, []byte("x\n"), 0o600)
	_, err := Create(p, "ses_x", Options{})
	if diag.Code(err) != "E-IO-051" {
		t.Fatalf("Create over an existing file: %v", err)
	}
}

// A full device: every write fails with ENOSPC. The session must go on, the
// warning comes once.
func TestWriteToFullDeviceWarnsOnce(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full here: %v", err)
	}
	var warnings []diag.Warning
	w := &Writer{f: f, sessionID: "ses_x", now: time.Now, warn: func(x diag.Warning) { warnings = append(warnings, x) }}
	for i := 0; i < 5; i++ {
		w.Emit(ToolCall{ToolName: "t", Status: "ok"})
	}
	w.Close()
	if len(warnings) != 1 || warnings[0].Code != WarnWriteFailed || !strings.Contains(warnings[0].Message, "no space") {
		t.Fatalf("warnings = %v", warnings)
	}
	if w.Dropped() != 5 {
		t.Fatalf("dropped %d, want 5", w.Dropped())
	}
}

// A small tmpfs that fills up mid-trace: every line written before the disk
// filled stays whole and readable, and no half line is left behind.
func TestTmpfsFillsUpMidTrace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount refused (%v: %s): cannot test a full disk here", err, bytes.TrimSpace(out))
	}
	defer exec.Command("umount", dir).Run()

	var warned int
	w, err := Create(filepath.Join(dir, FileName), "ses_x", Options{Warn: func(diag.Warning) { warned++ }})
	if err != nil {
		t.Fatal(err)
	}
	w.Emit(SessionStart{CapsuleName: "local/a", CapsuleVersion: "1", Kind: "script"})
	for i := 0; i < 200; i++ {
		w.Emit(ToolCall{ToolName: strings.Repeat("y", 333), Status: "ok"})
	}
	w.Emit(SessionEnd{ExitStatus: EndOK})
	w.Close()
	if warned != 1 || w.Dropped() == 0 {
		t.Fatalf("warned %d times, dropped %d", warned, w.Dropped())
	}
	tf, err := ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if tf.Truncated || len(tf.Bad) > 0 || len(tf.Lines) == 0 || tf.Lines[0].EventType != TypeSessionStart {
		t.Fatalf("trace after the disk filled: %d lines, truncated %v, bad %v", len(tf.Lines), tf.Truncated, tf.Bad)
	}
	if got := len(tf.Lines) + w.Dropped(); got != 202 {
		t.Fatalf("written %d + dropped %d != 202", len(tf.Lines), w.Dropped())
	}
}

func TestReadToleratesCutLastLine(t *testing.T) {
	in := `{"event_type":"session_start","event_id":"evt_1","parent_id":null,"session_id":"ses_a","timestamp":1000,"capsule_name":"local/a"}
not json at all
{"event_type":"tool_call","event_id":"evt_2","parent_id":"evt_1","session_id":"ses_a","timestamp":1500,"tool_name":"echo","status":"ok","duration_ms":7}
{"event_type":"tool_call","event_id":"evt_3","par`
	f, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Lines) != 2 || !f.Truncated || len(f.Bad) != 1 || f.Bad[0] != 2 {
		t.Fatalf("got %d lines, truncated %v, bad %v", len(f.Lines), f.Truncated, f.Bad)
	}
	s := Summarize(f)
	if s.Ended || s.LastEvent != "tool_call" || s.CapsuleName != "local/a" || len(s.ToolCalls) != 1 ||
		s.ToolCalls[0].Duration != 7*time.Millisecond || s.Duration != 500*time.Millisecond {
		t.Fatalf("summary %+v", s)
	}
}

func TestReadFileMissing(t *testing.T) {
	_, err := ReadFile(filepath.Join(t.TempDir(), "nope.jsonl"))
	if diag.Code(err) != "E-TRC-002" {
		t.Fatalf("err = %v", err)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"event_type":"session_start","event_id":"evt_1","parent_id":null,"session_id":"s","timestamp":1}` + "\n"))
	f.Add([]byte("{\"event_type\":\"tool_call\",\"duration_ms\":1e400}\n{\"event"))
	f.Add([]byte("\n\n[1,2]\nnull\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tf, err := Read(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		s := Summarize(tf)
		if s.Events != len(tf.Lines) {
			t.Fatal("summary lost events")
		}
		for _, l := range tf.Lines {
			if l.EventType == "" {
				t.Fatal("a line without event_type was accepted")
			}
		}
	})
}
