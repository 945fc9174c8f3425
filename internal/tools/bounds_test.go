package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/wit"
)

const goKitFlood = "../../testdata/components/tool-flood/tool-flood.wasm"

// A call streams at most MaxStreamedBytes to its caller: the chunk that
// would pass the bound and every later one go to the tool's chunks log,
// and the caller gets one line naming it. Issue 22 item 10: every chunk was
// handed on, and an agent's task kept them all in memory.
func TestStreamedChunksPastTheBoundSpill(t *testing.T) {
	f := newWASMFixture(t, goKitFlood)
	eng := f.engine(t, nil)
	defer eng.Close()
	tool := f.tool(t, &Env{Engine: eng, Session: f.sess})
	const size, n = 16 << 10, 40 // 640 KiB in all
	for call := 0; call < 2; call++ {
		var got []string
		var gotBytes int
		inv := Invocation{Input: wit.ToolInput{Data: ptr("chunks:40:16384")},
			Chunks: func(_ context.Context, text string, _ bool) error {
				got = append(got, text)
				gotBytes += len(text)
				return nil
			}}
		res, err := tool.Run(context.Background(), inv)
		if err != nil || res.Status != wit.StatusPassed {
			t.Fatalf("call %d: %+v %v", call, res, err)
		}
		if len(got) == 0 {
			t.Fatalf("call %d: no chunks", call)
		}
		if len(got) != MaxStreamedBytes/size+1 || gotBytes != MaxStreamedBytes+len(got[len(got)-1]) {
			t.Fatalf("call %d: the caller got %d chunks, %d bytes; want %d chunks of the bound and a note", call, len(got), gotBytes, MaxStreamedBytes/size+1)
		}
		note := got[len(got)-1]
		log := filepath.Join(f.sess.RecordsDir, "logs", "tools", "local", "echo.chunks.log")
		if !strings.Contains(note, log) {
			t.Fatalf("the note %q does not name %s", note, log)
		}
		fi, err := os.Stat(log)
		// Each call's spill replaces the last one's.
		if err != nil || fi.Size() != int64(n*size-MaxStreamedBytes) {
			t.Fatalf("call %d: chunks log %v %v, want %d bytes", call, fi, err, n*size-MaxStreamedBytes)
		}
	}
}
