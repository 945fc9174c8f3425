package wasmhost

import (
	"testing"
	"time"
)

// memProbe is a component with one linear memory (1 page to start) that
// can be grown, written and read.
const memProbe = `(component
  (core module $m
    (memory 1)
    (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0)))
    (func (export "poke") (param i32 i32) (i32.store (local.get 0) (local.get 1)))
    (func (export "peek") (param i32) (result i32) (i32.load (local.get 0))))
  (core instance $i (instantiate $m))
  (func (export "grow") (param "pages" u32) (result s32) (canon lift (core func $i "grow")))
  (func (export "poke") (param "at" u32) (param "v" u32) (canon lift (core func $i "poke")))
  (func (export "peek") (param "at" u32) (result u32) (canon lift (core func $i "peek"))))`

// TestReservationReuseIsFresh: freed memory reservations are kept and
// reused (shim.c); a run after one that grew its memory and wrote to it
// sees zeros, and its own size: past its one page it traps, as a fresh
// reservation would. Run back to back, so the second run usually gets the
// first one's reservation; the assertions hold either way.
func TestReservationReuseIsFresh(t *testing.T) {
	comp, err := testEngine.Compile([]byte(memProbe))
	if err != nil {
		t.Fatal(err)
	}
	defer comp.Close()
	rc := RunConfig{Limits: Limits{MemoryBytes: 1 << 20, Deadline: 10 * time.Second}}
	const far = 3*65536 + 8
	for round := range 4 {
		i, err := instantiateFull(testEngine, bg, comp, rc)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range []uint32{0, 4096, 65532} {
			if v, err := i.Call(bg, "", "peek", at); err != nil || v != uint32(0) {
				t.Fatalf("round %d: a fresh memory holds %v at %d (%v)", round, v, at, err)
			}
		}
		if round%2 == 0 {
			// Grow, fill, and leave it for the next run.
			if v, err := i.Call(bg, "", "grow", uint32(3)); err != nil || v != int32(1) {
				t.Fatalf("grow: %v %v", v, err)
			}
			for _, at := range []uint32{0, 4096, 65532, far} {
				if _, err := i.Call(bg, "", "poke", at, uint32(0xdeadbeef)); err != nil {
					t.Fatal(err)
				}
			}
		} else {
			// One page only: the pages the last run grew into are gone.
			if _, err := i.Call(bg, "", "peek", uint32(far)); err == nil {
				t.Fatalf("round %d: read past the memory's one page", round)
			}
		}
		i.Close()
	}
	// Grown again, the new pages are zero too.
	i, err := instantiateFull(testEngine, bg, comp, rc)
	if err != nil {
		t.Fatal(err)
	}
	defer i.Close()
	if _, err := i.Call(bg, "", "grow", uint32(3)); err != nil {
		t.Fatal(err)
	}
	if v, err := i.Call(bg, "", "peek", uint32(far)); err != nil || v != uint32(0) {
		t.Fatalf("a grown page holds %v (%v)", v, err)
	}
}
