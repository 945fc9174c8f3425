package wasihttp

import (
	"os"
	"testing"

	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp/h1"
)

// TestSpoolPoolBounds: a run's response files are pooled up to maxPooled in
// use (later bodies get one-off files), at most maxFree are kept once given
// back (the rest closed and removed), a large one is emptied off the
// caller's goroutine and a small one when it is next taken: a reused file
// starts empty, and nothing stays open after the run.
func TestSpoolPoolBounds(t *testing.T) {
	h, err := newHTTPRun(&Grant{MaxBodyBytes: 1 << 20, MaxInFlight: 1, Conns: h1.NewPool()}, false)
	if err != nil {
		t.Fatal(err)
	}
	var taken []*poolFile
	for range maxPooled + 6 {
		pf, err := h.takeFile()
		if err != nil {
			t.Fatal(err)
		}
		taken = append(taken, pf)
	}
	pooled := 0
	for _, pf := range taken {
		if pf.pooled {
			pooled++
		}
	}
	if pooled != maxPooled {
		t.Fatalf("%d of %d files pooled, want %d", pooled, len(taken), maxPooled)
	}
	// Bodies: one large (emptied in the background), the others small.
	if _, err := taken[0].file.Write(make([]byte, bigTruncate+1)); err != nil {
		t.Fatal(err)
	}
	for _, pf := range taken[1:] {
		if _, err := pf.file.WriteString("body"); err != nil {
			t.Fatal(err)
		}
	}
	for _, pf := range taken {
		if !pf.pooled {
			pf.file.Close() // what the exchange's closeFile does
		}
		h.putFile(pf)
	}
	h.wg.Wait() // the large one's emptying
	ents, err := os.ReadDir(h.spool.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.free) != maxFree || len(h.pooled) != maxFree || h.inUse != 0 || len(ents) != maxFree {
		t.Fatalf("after giving all back: %d free, %d pooled, %d in use, %d files; want %d, %d, 0, %d",
			len(h.free), len(h.pooled), h.inUse, len(ents), maxFree, maxFree, maxFree)
	}
	for range maxFree {
		pf, err := h.takeFile()
		if err != nil {
			t.Fatal(err)
		}
		st, err := pf.file.Stat()
		if err != nil || st.Size() != 0 {
			t.Fatalf("a reused file holds %d bytes (%v), want 0", st.Size(), err)
		}
		if off, _ := pf.file.Seek(0, 1); off != 0 {
			t.Fatalf("a reused file is written from %d, want 0", off)
		}
		if _, err := pf.file.WriteString("next"); err != nil {
			t.Fatal(err)
		}
	}
	kept := h.pooled
	h.close()
	for _, pf := range kept {
		if _, err := pf.file.Stat(); err == nil {
			t.Fatalf("%s is still open after the run", pf.name)
		}
	}
	if _, err := os.Stat(h.spool.dir); !os.IsNotExist(err) {
		t.Fatalf("spool directory after the run: %v", err)
	}
}
