package tools

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/wasmhost"
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

// A result's metadata keeps at most wasmhost.MaxResultListBytes of pairs:
// the rest go to the tool's metadata log, one JSON pair a line, and the
// result names it in a last pair. Issue 22 item 10: a million pairs cost
// about 1 GB of the host's memory before the call returned.
func TestResultMetadataPastTheBoundSpills(t *testing.T) {
	f := newWASMFixture(t, goKitFlood)
	eng := f.engine(t, nil)
	defer eng.Close()
	tool := f.tool(t, &Env{Engine: eng, Session: f.sess})
	log := filepath.Join(f.sess.RecordsDir, "logs", "tools", "local", "echo.metadata.log")
	const kept = wasmhost.MaxResultListBytes / 18 // (ptr, len) twice, "k" and "v"
	for _, n := range []int{200_000, 10, 50_000} {
		res, err := tool.Run(context.Background(), Invocation{Input: wit.ToolInput{Data: ptr("meta:" + strconv.Itoa(n))}})
		if err != nil || res.Status != wit.StatusPassed {
			t.Fatalf("%d pairs: %+v %v", n, res, err)
		}
		if n <= kept {
			if len(res.Metadata) != n {
				t.Fatalf("%d pairs: got %d", n, len(res.Metadata))
			}
			continue
		}
		if len(res.Metadata) != kept+1 {
			t.Fatalf("%d pairs: kept %d, want %d and the note", n, len(res.Metadata), kept)
		}
		last := res.Metadata[kept]
		if last[0] != MetadataSpilledKey || !strings.Contains(last[1], strconv.Itoa(n-kept)+" pairs") || !strings.Contains(last[1], log) {
			t.Fatalf("%d pairs: note %q", n, last)
		}
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		// Each call's spill replaces the last one's.
		if lines := strings.Count(string(b), "\n"); lines != n-kept || !strings.HasPrefix(string(b), `["k","v"]`+"\n") {
			t.Fatalf("%d pairs: the log has %d lines (want %d), starting %.20q", n, lines, n-kept, b)
		}
	}
}
