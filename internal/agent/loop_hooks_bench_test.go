package agent

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"text/template"
	"time"

	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/driver/replay"
	"github.com/murmur-go/murmur/internal/hooks"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

// nopHooks loads n hooks of internal/hooks' WAT fixture that answer
// ok(none) at every event, each bound (no binding) to every event the loop
// raises.
func nopHooks(b *testing.B, eng *wasmhost.Engine, n int) *hooks.Dispatcher {
	b.Helper()
	tt := template.Must(template.New("hook.wat.tmpl").Funcs(template.FuncMap{
		"b": func(string) string { return "none" }, "fs": func() bool { return false }}).
		ParseFiles("../hooks/testdata/hook.wat.tmpl"))
	var wat bytes.Buffer
	if err := tt.Execute(&wat, nil); err != nil {
		b.Fatal(err)
	}
	var hs []hooks.Hook
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("local/nop%d", i)
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for f, data := range map[string][]byte{
			"murmur.yaml": []byte("name: " + name + "\nversion: 1.0.0\nruntime: hook\n"), "hook.wasm": wat.Bytes()} {
			w, err := zw.Create(f)
			if err != nil {
				b.Fatal(err)
			}
			w.Write(data)
		}
		if err := zw.Close(); err != nil {
			b.Fatal(err)
		}
		a, err := store.OpenArchive(buf.Bytes())
		if err != nil {
			b.Fatal(err)
		}
		hs = append(hs, hooks.Hook{Resolved: &store.Resolved{Name: name, Version: "1.0.0", Runtime: "hook", Archive: a},
			Limits: manifest.Capabilities{}.EffLimits()})
	}
	d, err := hooks.Load(context.Background(), hooks.Config{Engine: eng, Hooks: hs, Recorder: nopHookRec{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	return d
}

// hookedTools is nopTools raising on-tool-call after each call, as mur's
// tool inventory does (internal/launch agenttools.go).
type hookedTools struct {
	nopTools
	hk *hooks.Dispatcher
}

func (h hookedTools) Call(ctx context.Context, c Call) Result {
	r := h.nopTools.Call(ctx, c)
	h.hk.OnToolCall(ctx, wit.ToolEvent{Turn: uint32(c.Turn), ToolName: "nop", Status: "ok"})
	return r
}

type nopHookRec struct{}

func (nopHookRec) HookCall(hooks.Call)                        {}
func (nopHookRec) CallDeadline(string, string, time.Duration) {}

// BenchmarkLoopHooks is BenchmarkLoop100Turns' task (100 nop tool-call turns
// and an answer) with 0 and with 5 no-op hooks bound to every event: the
// loop-µs/turn of hooks=5 against hooks=0 is the hooks' cost per turn
// (target: at most twice the hook-free figure). Each turn raises
// on-inference in the loop and on-tool-call in the inventory (as mur's
// does): 10 hook calls a turn. The replay driver is not subtracted here:
// both runs pay it alike.
func BenchmarkLoopHooks(b *testing.B) {
	eng, err := wasmhost.NewEngine(wasmhost.Config{NoCache: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close() })
	const turns = 101
	for _, n := range []int{0, 5} {
		b.Run(fmt.Sprintf("hooks=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			tp := filepath.Join(dir, "transcript.yaml")
			if err := os.WriteFile(tp, []byte(toolTurns(turns-1)), 0o600); err != nil {
				b.Fatal(err)
			}
			tw, err := trace.Create(filepath.Join(dir, trace.FileName), "ses_bench", trace.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { tw.Close() })
			rec := trace.NewRecorder(tw, nil, time.Now(), nil)
			rec.Emit(trace.SessionStart{CapsuleName: "local/bench", CapsuleVersion: "1.0.0", Kind: "agent"})
			var hk *hooks.Dispatcher
			var inv Tools = nopTools{}
			if n > 0 {
				hk = nopHooks(b, eng, n)
				inv = hookedTools{hk: hk}
			}
			var task []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				drv, err := replay.New(replay.Name, "1.0.0", tp)
				if err != nil {
					b.Fatal(err)
				}
				s := New(Config{Driver: drv, Model: "replay", MaxTurns: turns, MaxTokens: 100, System: "sys",
					Tools: inv, Recorder: rec, Hooks: hk, ResultPath: filepath.Join(dir, "out", "result.txt")})
				t := &door.Task{ID: fmt.Sprintf("tsk_%d", i), ContextID: "ctx_1", Origin: door.OriginUser,
					Source: door.SourceTaskMD, Parts: []door.Part{{Text: "go"}}, MessageBytes: 2}
				b.StartTimer()
				t0 := time.Now()
				out := s.RunTask(context.Background(), t, nopEvents{})
				task = append(task, time.Since(t0))
				if out != door.Answer("Done.") {
					b.Fatalf("outcome %+v (%s)", out, s.LastFailure())
				}
			}
			b.StopTimer()
			sort.Slice(task, func(i, j int) bool { return task[i] < task[j] })
			b.ReportMetric(float64(task[len(task)/2].Nanoseconds())/turns/1000, "µs/turn")
		})
	}
}
