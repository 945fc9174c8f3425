package trace

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func agentTrace(t *testing.T, emit func(w *Writer)) *File {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	w, err := Create(path, "ses_0123456789abcdef0123456789abcdef", Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Emit(AgentSessionStart{SessionStart: SessionStart{CapsuleName: "local/a", Kind: "agent", EffectiveGrants: json.RawMessage(`{}`)}})
	emit(w)
	w.Close()
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSummaryDisagreements(t *testing.T) {
	task := func(w *Writer, id string, tools, shell int, end TaskEnd) {
		w.Emit(TaskStart{TaskID: id})
		w.Emit(Inference{TaskID: id, InputTokens: 3, OutputTokens: 2})
		for i := 0; i < tools; i++ {
			w.Emit(AgentToolCall{TaskID: id, ToolCall: ToolCall{ToolName: "local/echo", Status: "ok"}})
		}
		for i := 0; i < shell; i++ {
			w.Emit(Shell{TaskID: id, Binary: "ls"})
		}
		end.TaskID = id
		w.Emit(end)
	}
	for _, tc := range []struct {
		name string
		emit func(w *Writer)
		want []string
	}{
		{"agreeing agent", func(w *Writer) {
			task(w, "tsk_1", 2, 1, TaskEnd{ExitStatus: "ok", Turns: 1, InputTokens: 3, OutputTokens: 2, ToolCalls: 2, ShellCalls: 1})
			w.Emit(HookCall{Hook: "h", InputTokens: 10, OutputTokens: 1})
			w.Emit(AgentSessionEnd{SessionEnd: SessionEnd{ExitStatus: "ok", ToolCalls: 2}, Tasks: 1, TotalTurns: 1,
				InputTokens: 13, OutputTokens: 3, ShellCalls: 1})
		}, nil},
		{"a task_end counting more than its lines", func(w *Writer) {
			task(w, "tsk_1", 1, 0, TaskEnd{ExitStatus: "ok", Turns: 1, ToolCalls: 3, ShellCalls: 1})
		}, []string{"task_end.tool_calls of tsk_1 is 3, but the trace holds 1 tool_call line(s) of that task",
			"task_end.shell_calls of tsk_1 is 1, but the trace holds 0 shell line(s) of that task"}},
		{"session totals off the task_end sums", func(w *Writer) {
			task(w, "tsk_1", 1, 0, TaskEnd{ExitStatus: "ok", Turns: 1, InputTokens: 3, OutputTokens: 2, ToolCalls: 1})
			w.Emit(AgentSessionEnd{SessionEnd: SessionEnd{ExitStatus: "ok", ToolCalls: 11}, Tasks: 2, TotalTurns: 1,
				InputTokens: 3, OutputTokens: 2})
		}, []string{"session_end.tasks is 2, but the trace holds 1 task_end line(s)",
			"session_end.tool_calls is 11, but the task_end lines add up to 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Summarize(agentTrace(t, tc.emit)).Disagreements
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("disagreements:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// A line past MaxLineBytes is counted as not an event without being held,
// and the events around it still read.
func TestScanSkipsAnOverlongLine(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString(`{"event_type":"session_start","session_id":"ses_a"}` + "\n")
	buf.WriteString(`{"event_type":"tool_call","tool_name":"` + strings.Repeat("x", MaxLineBytes) + "\"}\n")
	buf.WriteString(`{"event_type":"session_end","session_id":"ses_a"}` + "\n")
	var types []string
	res, err := Scan(&buf, func(l Line) { types = append(types, l.EventType) })
	if err != nil || strings.Join(types, ",") != "session_start,session_end" || res.BadCount != 1 || res.Bad[0] != 2 {
		t.Errorf("scan: %v %+v %v", types, res, err)
	}
}
