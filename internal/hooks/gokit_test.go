package hooks

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/wit"
)

// TestGoKitHookLog runs the committed examples/hook-log build (the guest kit's
// hook exports): it is accepted as a hook-world component, and each event it is
// bound to comes back as one JSON line holding the record it received, with a
// sequence number kept across events on the one warm instance.
func TestGoKitHookLog(t *testing.T) {
	wasm, err := os.ReadFile("../../examples/hook-log/hook-log.wasm")
	if err != nil {
		t.Fatal(err)
	}
	r := &rec{}
	d, err := Load(bg, Config{Engine: testEngine, Recorder: r,
		Hooks: []Hook{{Resolved: resolved(t, "local/hook-log", "", wasm), Limits: defaultLimits()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	type line struct {
		Event  string         `json:"event"`
		Seq    int            `json:"seq"`
		Record map[string]any `json:"record"`
	}
	var got []line
	collect := func(outs []Output) {
		t.Helper()
		for _, o := range outs {
			if o.Case != wit.OutputArtifact || !strings.HasSuffix(o.Text, "\n") || strings.Count(o.Text, "\n") != 1 {
				t.Fatalf("output %+v", o)
			}
			var l line
			if err := json.Unmarshal([]byte(o.Text), &l); err != nil {
				t.Fatalf("%q: %v", o.Text, err)
			}
			got = append(got, l)
		}
	}
	collect(d.OnStage(bg, wit.StageEvent{ShellAllow: []string{"bash"}})) // not bound: no binding
	collect(d.OnSessionStart(bg, wit.SessionContext{CapsuleName: "local/a", SessionID: "ses_1", Capabilities: []string{"shell"}}))
	collect(d.OnTaskStart(bg, wit.TaskStartEvent{TaskID: "t1", Source: "task_md", InputBytes: 12}))
	collect(d.OnInference(bg, wit.InferenceEvent{Turn: 1, InputTokens: 10, Decision: "end_turn", Output: ptr("done ✓")}))
	collect(d.OnToolCall(bg, wit.ToolEvent{Turn: 1, ToolName: "echo", Status: "ok"}))
	collect(d.OnShell(bg, wit.ShellEvent{Turn: 1, Binary: "/bin/bash", Command: "ls", ExitCode: -2, Stdout: "a\n"}))
	collect(d.OnCompaction(bg, wit.CompactionEvent{Messages: []wit.HookMessage{{Role: "user", Content: "hi"}}, Threshold: 0.5}))
	collect(d.OnTaskEnd(bg, wit.TaskEndEvent{TaskID: "t1", ExitStatus: "ok"}))
	collect(d.OnSessionEnd(bg, wit.SessionEndEvent{TotalTurns: 1, TotalInputTokens: 10, ExitStatus: "ok"}))

	wantEvents := wit.HookEvents[1:]
	if len(got) != len(wantEvents) {
		t.Fatalf("%d lines, want %d: %+v (calls %+v)", len(got), len(wantEvents), got, r.calls)
	}
	for i, l := range got {
		if l.Event != wantEvents[i] || l.Seq != i+1 {
			t.Errorf("line %d: %+v", i, l)
		}
	}
	checks := []struct {
		i     int
		field string
		want  any
	}{
		{0, "CapsuleName", "local/a"}, {0, "SessionID", "ses_1"},
		{1, "TaskID", "t1"}, {1, "InputBytes", 12.0},
		{2, "Output", "done ✓"}, {2, "Prompt", nil}, {2, "InputTokens", 10.0},
		{3, "ToolName", "echo"},
		{4, "ExitCode", -2.0}, {4, "Stdout", "a\n"},
		{5, "Threshold", 0.5},
		{6, "ExitStatus", "ok"},
		{7, "TotalInputTokens", 10.0},
	}
	for _, c := range checks {
		if v := got[c.i].Record[c.field]; v != c.want {
			t.Errorf("%s.%s = %#v, want %#v", got[c.i].Event, c.field, v, c.want)
		}
	}
	for _, c := range r.calls {
		if c.Status != StatusOK {
			t.Errorf("hook_call %+v", c)
		}
	}
}
