package wasmhost

import (
	"context"
	"os"
	"testing"
)

// TestFileStreamEOFIsFinal records the wasmtime 39 behaviour the spool
// design rests on (RATIONALE.md): a wasip2 input-stream over a regular file
// reports closed once a blocking-read meets the end of the file, and stays
// closed when bytes are appended later; a fresh stream over the same file
// sees them. So a body file that is still growing cannot be handed to the
// guest as one stream, and no sequence of files can either (the guest reads
// one incoming-body.stream).
func TestFileStreamEOFIsFinal(t *testing.T) {
	var body *os.File
	h := NewHost()
	h.HTTP(HTTPGrant{Decide: allowAll, MaxBodyBytes: 1 << 20, MaxInFlight: 4})
	h.Define("murmur:probe/spool", "open", func(ctx context.Context, _ []Value) (Value, error) {
		r := ctx.Value(reentryKey{}).(*run)
		if body == nil {
			f, name, err := r.http.spool.create("probe")
			if err != nil {
				return nil, err
			}
			body = f
			if _, err := f.WriteString("abc"); err != nil {
				return nil, err
			}
			s, err := r.openStream(name, false)
			return s, err
		}
		return r.openStream(body.Name()[len(r.http.spool.dir)+1:], false)
	})
	i := instantiate(t, "filestream.wat", RunConfig{Host: h})
	t.Cleanup(func() {
		if body != nil {
			body.Close()
		}
	})
	read := func(step string, want int32) {
		t.Helper()
		v, err := i.Call(bg, "", "read", uint64(100))
		if err != nil || v != want {
			t.Fatalf("%s: read = %v, %v; want %d", step, v, err, want)
		}
	}
	if _, err := i.Call(bg, "", "open"); err != nil {
		t.Fatal(err)
	}
	read("the first read", 3)
	read("at the end of the file", -1)
	if _, err := body.WriteString("def"); err != nil {
		t.Fatal(err)
	}
	read("after bytes were appended", -1)
	if _, err := i.Call(bg, "", "open"); err != nil {
		t.Fatal(err)
	}
	read("a fresh stream over the grown file", 6)
}
