package tools

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// echoEntry answers its input, or fails with the error it holds.
type echoEntry struct {
	stub
	err error
}

func (e echoEntry) Call(_ context.Context, c *Call) Outcome {
	if e.err != nil {
		return Outcome{Err: e.err}
	}
	d := dataOf(c.Input)
	return Outcome{Result: wit.ToolResult{Status: wit.StatusPassed, Data: &d}, Text: d}
}

type scriptLine struct {
	tool            string
	inBytes, outLen int
	errText         string
}

type lines struct {
	script []scriptLine
	task   []any
}

func (l *lines) ToolCall(tool string, _ time.Time, in, out int, errText string) {
	l.script = append(l.script, scriptLine{tool, in, out, errText})
}
func (l *lines) CallDeadline(string, string, time.Duration) {}
func (l *lines) EmitUnder(_ string, ev any) string {
	l.task = append(l.task, ev)
	return "evt"
}

type hookCount struct{ tool int }

func (h *hookCount) OnToolCall(context.Context, *TaskCall, trace.AgentToolCall) { h.tool++ }
func (h *hookCount) OnShell(context.Context, *TaskCall, ShellResult)            {}

// TestInventoryCallWritesOneLine: every call, whichever caller and however
// it ends, leaves exactly one line written by Inventory.Call, and a model's
// call fires its hook once.
func TestInventoryCallWritesOneLine(t *testing.T) {
	inv := NewInventory("local/cap")
	inv.Add(echoEntry{stub: stub{"acme/echo", KindWASM}})
	inv.Add(echoEntry{stub: stub{"acme/fail", KindWASM}, err: errors.New("it broke")})
	in := "hello"
	ctx := context.Background()

	var l lines
	if o := inv.Call(ctx, Call{Name: "echo", Input: wit.ToolInput{Data: &in}, Recorder: &l}); o.Err != nil || *o.Result.Data != "hello" {
		t.Fatalf("script call: %+v", o)
	}
	inv.Call(ctx, Call{Name: "nope", Recorder: &l})
	inv.Call(ctx, Call{Name: "echo", Refused: errors.New("over"), Recorder: &l})
	want := []scriptLine{{"acme/echo", 5, 5, ""}, {"nope", 0, 0, inv.Call(ctx, Call{Name: "nope"}).Err.Error()}, {"echo", 0, 0, "over"}}
	if len(l.script) != len(want) {
		t.Fatalf("script lines %+v", l.script)
	}
	for i := range want {
		if l.script[i] != want[i] {
			t.Errorf("script line %d = %+v, want %+v", i, l.script[i], want[i])
		}
	}

	var h hookCount
	task := &TaskCall{TaskID: "tsk_1", Turn: 1, ID: "call_1", Lines: &l, Hooks: &h}
	o := inv.Call(ctx, Call{Name: "fail", Input: wit.ToolInput{Data: &in}, Task: task})
	if o.Text != "error: it broke" {
		t.Errorf("model text %q", o.Text)
	}
	if len(l.task) != 1 || h.tool != 1 {
		t.Fatalf("task lines %d, hooks %d", len(l.task), h.tool)
	}
	tc := l.task[0].(trace.AgentToolCall)
	if tc.ToolName != "acme/fail" || tc.Kind != KindWASM || tc.Status != "error" || tc.OutputBytes != len(o.Text) || tc.InputBytes != 5 {
		t.Errorf("tool_call line %+v", tc)
	}
}
