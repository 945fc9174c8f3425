package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/replay"
	"github.com/murmur-go/murmur/internal/trace"
)

// nopTools is an inventory of one tool that does nothing and writes no line,
// so a benchmark sees the loop's cost of a tool call and nothing of a tool's.
type nopTools struct{}

func (nopTools) Specs() []driver.Tool {
	return []driver.Tool{{Name: "nop", Description: "does nothing", Parameters: json.RawMessage(`{"type":"object"}`)}}
}

func (nopTools) Call(context.Context, Call) Result { return Result{Text: "ok", Source: "tool:nop"} }

// nopEvents is a door side that keeps nothing.
type nopEvents struct{}

func (nopEvents) AppendText(string)                                  {}
func (nopEvents) ToolResult(string, string, string, json.RawMessage) {}
func (nopEvents) Status(string)                                      {}
func (nopEvents) Phase(door.Phase)                                   {}
func (nopEvents) Delegations([]string)                               {}
func (nopEvents) MemberCalls([]string)                               {}
func (nopEvents) RequestInput(context.Context, string) (door.Reply, error) {
	return door.Reply{}, context.Canceled
}

// toolTurns is a transcript of n turns that each call the nop tool, then a
// turn that answers.
func toolTurns(n int) string {
	var sb strings.Builder
	sb.WriteString("version: 1\nresponses:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "  - chunks: [\"Calling \", \"nop.\"]\n    content:\n      - {type: text, text: \"Calling nop.\"}\n      - {type: tool_call, id: call_%d, name: nop, input: {n: %d}}\n", i, i)
	}
	sb.WriteString("  - content:\n      - {type: text, text: \"Done.\"}\n")
	return sb.String()
}

// BenchmarkLoop100Turns: one task of 100 turns that each make one tool call
// (to a tool that does nothing) and a final answering turn, MaxTurns 101,
// through the real loop: requests built, fences, trace lines written to a
// real trace.jsonl, result.txt. Each iteration also replays the same
// transcript straight through the replay driver (a fresh driver, the same
// 101 calls; replay does not look at the request), so the driver's own
// time is measured in the same run and subtracted:
// loop-µs/turn is the loop's overhead per turn, driver-µs/call the replay
// driver's own time, task-ms the whole task (medians over the iterations).
func BenchmarkLoop100Turns(b *testing.B) {
	const toolCalls = 100
	const turns = toolCalls + 1
	dir := b.TempDir()
	tp := filepath.Join(dir, "transcript.yaml")
	if err := os.WriteFile(tp, []byte(toolTurns(toolCalls)), 0o600); err != nil {
		b.Fatal(err)
	}
	tw, err := trace.Create(filepath.Join(dir, trace.FileName), "ses_bench", trace.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tw.Close() })
	rec := trace.NewRecorder(tw, nil, time.Now(), nil)
	rec.Emit(trace.SessionStart{CapsuleName: "local/bench", CapsuleVersion: "1.0.0", Kind: "agent"})
	drivers := func() (*replay.Driver, *replay.Driver) {
		d1, err := replay.New(replay.Name, "1.0.0", tp)
		if err != nil {
			b.Fatal(err)
		}
		d2, err := replay.New(replay.Name, "1.0.0", tp)
		if err != nil {
			b.Fatal(err)
		}
		return d1, d2
	}
	req := &driver.Request{Model: "replay", MaxTokens: 100, System: "sys"}
	chunk := func(string) {}
	var task, drv []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		loopDrv, bareDrv := drivers()
		s := New(Config{Driver: loopDrv, Model: "replay", MaxTurns: turns, MaxTokens: 100, System: "sys",
			Tools: nopTools{}, Recorder: rec, ResultPath: filepath.Join(dir, "out", "result.txt")})
		t := &door.Task{ID: fmt.Sprintf("tsk_%d", i), ContextID: "ctx_1", Origin: door.OriginUser,
			Source: door.SourceTaskMD, Parts: []door.Part{{Text: "go"}}, MessageBytes: 2}
		b.StartTimer()

		t0 := time.Now()
		out := s.RunTask(context.Background(), t, nopEvents{})
		task = append(task, time.Since(t0))
		if out != door.Answer("Done.") {
			b.Fatalf("outcome %+v (%s)", out, s.LastFailure())
		}

		t0 = time.Now()
		for j := 0; j < turns; j++ {
			if _, err := bareDrv.Call(context.Background(), req, chunk); err != nil {
				b.Fatal(err)
			}
		}
		drv = append(drv, time.Since(t0))
	}
	b.StopTimer()
	med := func(d []time.Duration) time.Duration {
		d = append([]time.Duration(nil), d...)
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	diff := make([]time.Duration, len(task))
	for i := range task {
		diff[i] = task[i] - drv[i]
	}
	b.ReportMetric(float64(med(task).Microseconds())/1000, "task-ms")
	b.ReportMetric(float64(med(drv).Nanoseconds())/turns/1000, "driver-µs/call")
	b.ReportMetric(float64(med(diff).Nanoseconds())/turns/1000, "loop-µs/turn")
}
