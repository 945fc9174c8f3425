package tools

import (
	"context"
	"testing"

	"github.com/murmur-go/murmur/internal/wit"
)

type nopLines struct{}

func (nopLines) EmitUnder(string, any) string { return "" }

// BenchmarkCallUngated: a model's call of a Go entry through Inventory.Call
// with no policy hook and no approval key.
func BenchmarkCallUngated(b *testing.B) {
	inv := NewInventory("local/bench")
	inv.Add(echoEntry{stub: stub{"acme/echo", KindWASM}})
	in := `{"message":"hello"}`
	tc := &TaskCall{TaskID: "tsk_1", Turn: 1, ID: "call_1", Lines: nopLines{}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		inv.Call(context.Background(), Call{Name: "echo", Input: wit.ToolInput{Data: &in}, Task: tc})
	}
}
