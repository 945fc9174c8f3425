package wasmhost

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// imageProbe is a component whose one module defines a memory of pages
// pages and fills it from data segments: a run of 80 KiB of fill at 64 KiB
// (enough for an image), and mark, a few bytes, at 200,000 (a segment that
// later overrides part of the fill run when placed inside it).
func imageProbe(pages int, fill byte, mark string, markAt int, extra string) string {
	run := strings.Repeat(fmt.Sprintf("\\%02x", fill), 80<<10)
	return fmt.Sprintf(`(component
  (core module $m
    (memory %d)
    (data (i32.const 65536) "%s")
    (data (i32.const %d) "%s")
    (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0)))
    (func (export "poke") (param i32 i32) (i32.store (local.get 0) (local.get 1)))
    (func (export "peek") (param i32) (result i32) (i32.load (local.get 0))))
  %s
  (core instance $i (instantiate $m))
  (func (export "grow") (param "pages" u32) (result s32) (canon lift (core func $i "grow")))
  (func (export "poke") (param "at" u32) (param "v" u32) (canon lift (core func $i "poke")))
  (func (export "peek") (param "at" u32) (result u32) (canon lift (core func $i "peek"))))`,
		pages, run, markAt, mark, extra)
}

func compileWAT(t *testing.T, e *Engine, src string) (*Component, []memImage) {
	t.Helper()
	bin, err := parseWAT([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, imgs := prepareData(bin)
	c, err := e.Compile(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, imgs
}

func peek(t *testing.T, i *Instance, at uint32) uint32 {
	t.Helper()
	v, err := i.Call(bg, "", "peek", at)
	if err != nil {
		t.Fatalf("peek %d: %v", at, err)
	}
	return v.(uint32)
}

// TestImageGoKit: the Go-kit echo tool's main module (the one defining its
// memory) gets an image of its 32,031 segments and loses its data section;
// the preview1 adapter (which imports that memory) and the small shims do
// not. The image holds what the segments write, in order.
func TestImageGoKit(t *testing.T) {
	raw, err := os.ReadFile(goKitTool)
	if err != nil {
		t.Skip("no Go-kit component:", err)
	}
	out, imgs := prepareData(raw)
	if len(imgs) != 1 {
		t.Fatalf("%d images, want 1", len(imgs))
	}
	im := imgs[0]
	if im.minPages != 41 || im.maxPages != noMaxPages || im.off%65536 != 0 {
		t.Fatalf("image %+v", im.memType)
	}
	// The same bytes as applying every original segment to zeroed memory.
	var want []byte
	var walk func([]byte)
	walk = func(b []byte) {
		secs, _ := readSections(b)
		for _, s := range secs {
			if s.id == 4 {
				walk(s.body)
			}
			if s.id != 1 {
				continue
			}
			ms, _ := readSections(s.body)
			for _, m := range ms {
				if m.id == secData && want == nil {
					segs, ok := readData(m.body)
					if !ok {
						t.Fatal("unreadable data")
					}
					want = make([]byte, im.off+uint64(len(im.data)))
					for _, sg := range segs {
						copy(want[sg.off:], sg.data)
					}
				}
			}
		}
	}
	walk(raw)
	if !bytes.Equal(want[im.off:], im.data) || bytes.ContainsFunc(want[:im.off], func(r rune) bool { return r != 0 }) {
		t.Fatal("the image differs from the segments' bytes")
	}
	// No data section is left in the imaged module.
	secs, _ := readSections(out)
	for _, s := range secs {
		if s.id != 1 {
			continue
		}
		ms, _ := readSections(s.body)
		for _, m := range ms {
			if m.id == secData && len(s.body) > 1<<20 {
				t.Fatal("the main module kept its data section")
			}
		}
	}
}

// TestImageSameMemory: a module instantiated from its image holds exactly
// what its data segments would have written, past the image and in the gaps
// zeros, for layouts with an overriding segment.
func TestImageSameMemory(t *testing.T) {
	cases := []struct {
		name   string
		pages  int
		markAt int
	}{
		{"small-memory-mark-after", 4, 200000},
		{"mark-inside-the-run", 4, 70000},
		{"huge-memory", 20, 200000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := imageProbe(c.pages, 0x5a, "\\01\\02\\03\\04\\05", c.markAt, "")
			withImg, imgs := compileWAT(t, testEngine, src)
			if len(imgs) != 1 {
				t.Fatalf("%d images", len(imgs))
			}
			plain, err := NewEngine(Config{NoCache: true})
			if err != nil {
				t.Fatal(err)
			}
			defer plain.Close()
			saved := imageMinBytes
			imageMinBytes = 1 << 30 // compile time only: no image for this one
			noImg, _ := compileWAT(t, plain, src)
			imageMinBytes = saved
			a, err := instantiateFull(testEngine, bg, withImg, RunConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := instantiateFull(plain, bg, noImg, RunConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			for at := uint32(0); at+4 <= uint32(c.pages)*65536; at += 508 {
				if x, y := peek(t, a, at), peek(t, b, at); x != y {
					t.Fatalf("at %d: image %#x, segments %#x", at, x, y)
				}
			}
			if peek(t, a, uint32(c.markAt)) != 0x04030201 {
				t.Fatal("the overriding segment is not in the image")
			}
		})
	}
}

// TestImagePristinePerRun: what one run writes over its image never reaches
// the next run, whether that one reuses the reservation with the same image
// or with another component's image; a memory grown past the
// image reads zero there. Reservations are kept process-wide, so runs of
// the three components back to back exercise every hand-over.
func TestImagePristinePerRun(t *testing.T) {
	a, _ := compileWAT(t, testEngine, imageProbe(20, 0xaa, "\\0a", 200000, ""))
	b, _ := compileWAT(t, testEngine, imageProbe(20, 0xbb, "\\0b", 200000, ""))
	type probe struct {
		c          *Component
		fill, mark uint32
	}
	dropKeptReservations()
	order := []probe{{a, 0xaaaaaaaa, 0x0a}, {a, 0xaaaaaaaa, 0x0a}, {b, 0xbbbbbbbb, 0x0b}, {a, 0xaaaaaaaa, 0x0a},
		{b, 0xbbbbbbbb, 0x0b}, {b, 0xbbbbbbbb, 0x0b}, {a, 0xaaaaaaaa, 0x0a}}
	for round, p := range order {
		i, err := instantiateFull(testEngine, bg, p.c, RunConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range []uint32{65536, 100000, 65536 + 80<<10 - 4} {
			if v := peek(t, i, at); v != p.fill {
				t.Fatalf("round %d: %#x at %d, want %#x", round, v, at, p.fill)
			}
		}
		if v := peek(t, i, 200000); v != p.mark {
			t.Fatalf("round %d: mark %#x", round, v)
		}
		for _, at := range []uint32{0, 4096, 300000, 20*65536 - 4} {
			if v := peek(t, i, at); v != 0 {
				t.Fatalf("round %d: %#x at %d outside the image", round, v, at)
			}
		}
		// Dirty everything: the image's pages, the zeros, grown pages.
		if v, err := i.Call(bg, "", "grow", uint32(2)); err != nil || v != int32(20) {
			t.Fatalf("grow: %v %v", v, err)
		}
		if v := peek(t, i, 21*65536); v != 0 {
			t.Fatalf("round %d: a grown page holds %#x", round, v)
		}
		for _, at := range []uint32{0, 65536, 100000, 200000, 300000, 21 * 65536} {
			if _, err := i.Call(bg, "", "poke", at, uint32(0xdeadbeef)); err != nil {
				t.Fatal(err)
			}
		}
		i.Close()
	}
}

// TestImageHandOverToPlain: a reservation that held an image, handed to a
// memory of the same geometry without one, is zero where the image was.
func TestImageHandOverToPlain(t *testing.T) {
	a, _ := compileWAT(t, testEngine, imageProbe(20, 0xaa, "\\0a", 200000, ""))
	plain, _ := compileWAT(t, testEngine, `(component
  (core module $m
    (memory 20)
    (func (export "peek") (param i32) (result i32) (i32.load (local.get 0))))
  (core instance $i (instantiate $m))
  (func (export "peek") (param "at" u32) (result u32) (canon lift (core func $i "peek"))))`)
	dropKeptReservations()
	for round := range 6 {
		c := a
		if round%2 == 1 {
			c = plain
		}
		i, err := instantiateFull(testEngine, bg, c, RunConfig{})
		if err != nil {
			t.Fatal(err)
		}
		v := peek(t, i, 100000)
		if (c == a && v != 0xaaaaaaaa) || (c == plain && v != 0) {
			t.Fatalf("round %d: %#x", round, v)
		}
		i.Close()
	}
}

// TestImageLimits: a memory with an image is charged like any other: a
// minimum over the budget and a growth past it end resource_limit.
func TestImageLimits(t *testing.T) {
	c, _ := compileWAT(t, testEngine, imageProbe(20, 0xaa, "\\0a", 200000, ""))
	_, err := instantiateFull(testEngine, bg, c, RunConfig{Limits: Limits{MemoryBytes: 10 * 65536}})
	if le := asLimit(t, err); le.Which != "memory" {
		t.Fatalf("which %q", le.Which)
	}
	i, err := instantiateFull(testEngine, bg, c, RunConfig{Limits: Limits{MemoryBytes: 21 * 65536}})
	if err != nil {
		t.Fatal(err)
	}
	defer i.Close()
	if v, err := i.Call(bg, "", "grow", uint32(1)); err != nil || v != int32(20) {
		t.Fatalf("grow 1: %v %v", v, err)
	}
	if v, _ := i.Call(bg, "", "grow", uint32(1)); v != int32(-1) {
		t.Fatalf("grow past the limit: %v", v)
	}
}

// TestImageNotShared: two modules defining memories of the same type get
// no image (the creator could not tell their memories apart); their data is
// coalesced as before.
func TestImageNotShared(t *testing.T) {
	second := `(core module $n (memory 4) (data (i32.const 0) "\01") (data (i32.const 8) "\02"))
  (core instance $j (instantiate $n))`
	bin, err := parseWAT([]byte(imageProbe(4, 0xaa, "\\0a", 200000, second)))
	if err != nil {
		t.Fatal(err)
	}
	if _, imgs := prepareData(bin); len(imgs) != 0 {
		t.Fatalf("%d images for a shared memory type", len(imgs))
	}
	bin, err = parseWAT([]byte(imageProbe(4, 0xaa, "\\0a", 200000, strings.Replace(second, "(memory 4)", "(memory 5)", 1))))
	if err != nil {
		t.Fatal(err)
	}
	if _, imgs := prepareData(bin); len(imgs) != 1 {
		t.Fatalf("%d images with distinct types", len(imgs))
	}
	// Sparse data (64 KiB at 0, a few bytes near 4 GiB): no image, so no
	// 4 GiB of zeros built for it.
	bin, err = parseWAT([]byte(`(component (core module (memory 65536) (data (i32.const 0) "` +
		strings.Repeat("\\01", 70000) + `") (data (i32.const 4294967290) "\\02")))`))
	if err != nil {
		t.Fatal(err)
	}
	if _, imgs := prepareData(bin); len(imgs) != 0 {
		t.Fatal("an image for sparse data")
	}
	// A segment past the memory's minimum: no image (instantiation must
	// still fail as it would have).
	bin, err = parseWAT([]byte(imageProbe(2, 0xaa, "\\0a", 200000, "")))
	if err != nil {
		t.Fatal(err)
	}
	if _, imgs := prepareData(bin); len(imgs) != 0 {
		t.Fatal("an image for a segment out of bounds")
	}
	if c, err := testEngine.Compile(bin); err == nil {
		_, err := instantiateFull(testEngine, bg, c, RunConfig{})
		c.Close()
		if err == nil {
			t.Fatal("an out-of-bounds segment instantiated")
		}
	}
}

// TestImageCache: an entry with an image loads from the cache with it; its
// .img rewritten in place (the same bytes) or removed fails the MAC and is
// rebuilt, never loaded without its image.
func TestImageCache(t *testing.T) {
	dir := t.TempDir()
	src := imageProbe(4, 0xaa, "\\0a", 200000, "")
	bin, err := parseWAT([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	load := func(wantCached bool) {
		t.Helper()
		e, err := NewEngine(Config{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		c, err := e.Compile(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.FromCache != wantCached {
			t.Fatalf("FromCache %v, want %v", c.FromCache, wantCached)
		}
		i, err := instantiateFull(e, bg, c, RunConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer i.Close()
		if v := peek(t, i, 100000); v != 0xaaaaaaaa {
			t.Fatalf("%#x from the image", v)
		}
	}
	load(false)
	load(true)
	imgFiles, _ := filepath.Glob(filepath.Join(dir, "*.img"))
	if len(imgFiles) != 1 {
		t.Fatalf("image files %v", imgFiles)
	}
	same, err := os.ReadFile(imgFiles[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(imgFiles[0], same, 0o600); err != nil {
		t.Fatal(err)
	}
	load(false)
	load(true)
	os.Remove(imgFiles[0])
	load(false)
	load(true)
}

// TestFreshWithoutScrub: the same guarantees with freed memories wiped by
// MADV_DONTNEED (what happens past the resident cap or without pagemap).
func TestFreshWithoutScrub(t *testing.T) {
	setScrub(false)
	defer setScrub(true)
	t.Run("reuse", TestReservationReuseIsFresh)
	t.Run("pristine", TestImagePristinePerRun)
	t.Run("handover", TestImageHandOverToPlain)
}

// TestImageCacheFileChangedWhileLoaded: a component loaded from the cache
// maps its images from the entry's .img file; once that file is written
// (here: the same bytes again), no new memory is made from it.
func TestImageCacheFileChangedWhileLoaded(t *testing.T) {
	dir := t.TempDir()
	bin, err := parseWAT([]byte(imageProbe(4, 0xaa, "\\0a", 200000, "")))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		e, err := NewEngine(Config{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.Compile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if c.FromCache != (round == 1) {
			t.Fatalf("round %d: FromCache %v", round, c.FromCache)
		}
		i, err := instantiateFull(e, bg, c, RunConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if v := peek(t, i, 100000); v != 0xaaaaaaaa {
			t.Fatalf("%#x", v)
		}
		i.Close()
		if round == 1 {
			imgFiles, _ := filepath.Glob(filepath.Join(dir, "*.img"))
			same, err := os.ReadFile(imgFiles[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(imgFiles[0], same, 0o600); err != nil {
				t.Fatal(err)
			}
			i, err := instantiateFull(e, bg, c, RunConfig{})
			if err == nil {
				i.Close()
				t.Fatal("instantiated from an image file written after its check")
			}
			if !strings.Contains(err.Error(), "changed since it was verified") {
				t.Fatalf("error %v", err)
			}
		}
		c.Close()
		e.Close()
	}
}
