package trace

import (
	"path/filepath"
	"testing"
)

// BenchmarkEmitToolCall: one tool_call line, encoded and handed to the kernel.
func BenchmarkEmitToolCall(b *testing.B) {
	w, err := Create(filepath.Join(b.TempDir(), FileName), "ses_bench", Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	w.Emit(SessionStart{CapsuleName: "local/bench", CapsuleVersion: "1", Kind: "script"})
	ev := ToolCall{ToolName: "acme/echo", InputBytes: 11, OutputBytes: 11, DurationMS: 1, Status: "ok"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.Emit(ev)
	}
}
