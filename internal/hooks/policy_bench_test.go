package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/wit"
)

// benchEntry is a tool that does nothing: what is measured is the way to it.
type benchEntry struct{}

func (benchEntry) Name() string                                    { return "acme/noop" }
func (benchEntry) Kind() string                                    { return tools.KindWASM }
func (benchEntry) Description() string                             { return "" }
func (benchEntry) Schema() json.RawMessage                         { return tools.DefaultSchema }
func (benchEntry) Call(context.Context, *tools.Call) tools.Outcome { return tools.Outcome{Text: "ok"} }

type discard struct{}

func (discard) EmitUnder(string, any) string { return "" }

type policyOf struct{ d *Dispatcher }

func (p policyOf) CheckCall(ctx context.Context, r wit.CallRequest) (bool, string, string) {
	v := p.d.CheckCall(ctx, r)
	return v.Denied, v.Hook, v.Reason
}

// BenchmarkGate is one model tool call through tools.Inventory.Call with no
// policy hook, and through one and five no-op policy hooks (the Go-kit
// policy-probe on a warm instance, allowing every call): the gate's cost per
// call (docs/benchmarks.md).
func BenchmarkGate(b *testing.B) {
	for _, n := range []int{0, 1, 5} {
		b.Run(fmt.Sprintf("hooks=%d", n), func(b *testing.B) {
			inv := tools.NewInventory("local/bench")
			inv.Add(benchEntry{})
			if n > 0 {
				var hs []Hook
				for i := 0; i < n; i++ {
					hs = append(hs, Hook{Resolved: resolved(b, fmt.Sprintf("local/p%d", i), "", probe(b)), Limits: defaultLimits()})
				}
				d, err := Load(bg, Config{Engine: testEngine, Hooks: hs, Recorder: &rec{discard: true}})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { d.Close() })
				inv.SetGate(tools.GateConfig{Policy: policyOf{d}})
			}
			in := `{"message":"hello"}`
			tc := &tools.TaskCall{TaskID: "tsk_1", Turn: 1, ID: "call_1", Lines: discard{}}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if o := inv.Call(bg, tools.Call{Name: "noop", Input: wit.ToolInput{Data: &in}, Task: tc}); o.Err != nil || o.Denied != "" {
					b.Fatal(o)
				}
			}
		})
	}
}
