package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var bg = context.Background()

func TestCallOK(t *testing.T) {
	i := instantiate(t, "basic.wat", RunConfig{})
	v, err := i.Call(bg, "", "add", uint32(2), uint32(40))
	if err != nil || v != uint32(42) {
		t.Fatalf("add = %v, %v", v, err)
	}
	if err := callCapsuleRun(i); err != nil {
		t.Fatal(err)
	}
	// The instance stays usable after successful calls.
	if v, _ := i.Call(bg, "", "add", 1, 2); v != uint32(3) {
		t.Fatalf("add(1,2) = %v", v)
	}
}

func TestCallArgumentErrors(t *testing.T) {
	i := instantiate(t, "basic.wat", RunConfig{})
	cases := []struct {
		fn   string
		args []Value
		want string
	}{
		{"add", []Value{uint32(1)}, "takes 2 arguments"},
		{"add", []Value{"x", uint32(1)}, "want u32"},
		{"add", []Value{-1, uint32(1)}, "want u32"},
		{"nope", nil, "does not export"},
	}
	for _, c := range cases {
		_, err := i.Call(bg, "", c.fn, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s%v: err %v, want %q", c.fn, c.args, err, c.want)
		}
	}
	// Argument errors are caught before the guest runs: the instance lives.
	if _, err := i.Call(bg, "", "add", uint32(1), uint32(1)); err != nil {
		t.Fatal(err)
	}
}

func TestTrapWithMessage(t *testing.T) {
	i := instantiate(t, "basic.wat", RunConfig{})
	_, err := i.Call(bg, "", "trap")
	te := asTrap(t, err)
	if !strings.Contains(te.Message, "unreachable") {
		t.Fatalf("trap message %q", te.Message)
	}
	// After a trap the instance is dead.
	if _, err := i.Call(bg, "", "add", uint32(1), uint32(1)); !errors.Is(err, ErrInstanceDead) {
		t.Fatalf("call after trap: %v", err)
	}
}

func TestDeadlineWhileRunning(t *testing.T) {
	i := instantiate(t, "basic.wat", RunConfig{Limits: Limits{Deadline: 150 * time.Millisecond}})
	start := time.Now()
	_, err := i.Call(bg, "", "spin")
	de := asDeadline(t, err)
	if de.Waiting || de.Call != "" {
		t.Fatalf("spin loop reported %+v", de)
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Fatalf("stopped after %v, before the deadline", el)
	}
}

func TestCancelStopsGuest(t *testing.T) {
	i := instantiate(t, "basic.wat", RunConfig{})
	ctx, cancel := context.WithCancel(bg)
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := i.Call(ctx, "", "spin")
	var ce *CancelledError
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
		t.Fatalf("want CancelledError(context.Canceled), got %T %v", err, err)
	}
}

func TestDeadlineWhileSleeping(t *testing.T) {
	// A 10 s WASI sleep under a 200 ms deadline is stopped at deadline+grace
	// (grace shortened to 300 ms to keep the suite fast; the default is 2 s)
	// and reported as waiting on the clock.
	i := instantiate(t, "sleep.wat", RunConfig{Limits: Limits{Deadline: 200 * time.Millisecond, Grace: 300 * time.Millisecond}})
	start := time.Now()
	err := callCapsuleRun(i)
	el := time.Since(start)
	de := asDeadline(t, err)
	if !de.Waiting || de.Call != "wasi:clocks/monotonic-clock#subscribe-duration" {
		t.Fatalf("sleep reported %+v", de)
	}
	if el < 500*time.Millisecond || el > 3*time.Second {
		t.Fatalf("stopped after %v, want about 500ms", el)
	}
}

func TestDeadlineWhileSleepingDefaultGrace(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 2.3 s")
	}
	i := instantiate(t, "sleep.wat", RunConfig{Limits: Limits{Deadline: 300 * time.Millisecond}})
	start := time.Now()
	err := callCapsuleRun(i)
	el := time.Since(start)
	de := asDeadline(t, err)
	if !de.Waiting {
		t.Fatalf("sleep reported %+v", de)
	}
	if el < 2300*time.Millisecond || el > 5*time.Second {
		t.Fatalf("stopped after %v, want deadline + 2 s grace = 2.3 s", el)
	}
}

func TestShortSleepCompletes(t *testing.T) {
	i := instantiate(t, "sleep.wat", RunConfig{Limits: Limits{Deadline: 5 * time.Second}})
	start := time.Now()
	if _, err := i.Call(bg, "", "sleep", uint64(30*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Fatalf("slept only %v", el)
	}
	// The helper instance is reused by later subscriptions in the same store.
	if _, err := i.Call(bg, "", "sleep", uint64(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
}

func TestMemoryLimit(t *testing.T) {
	for _, fn := range []string{"balloon", "balloon-spin"} {
		t.Run(fn, func(t *testing.T) {
			i := instantiate(t, "limits.wat", RunConfig{Limits: Limits{MemoryBytes: 8 << 20, Deadline: 10 * time.Second}})
			_, err := i.Call(bg, "", fn)
			le := asLimit(t, err)
			if le.Which != "memory" {
				t.Fatalf("which = %q", le.Which)
			}
			if p := i.MemoryPeak(); p > 8<<20 || p < 7<<20 {
				t.Fatalf("peak memory %d, want just under 8 MiB", p)
			}
		})
	}
}

func TestMemoryGrowWithinLimit(t *testing.T) {
	i := instantiate(t, "limits.wat", RunConfig{Limits: Limits{MemoryBytes: 4 << 20}})
	v, err := i.Call(bg, "", "grow", uint32(10))
	if err != nil || v != int32(1) {
		t.Fatalf("grow(10) = %v, %v (want old size 1)", v, err)
	}
}

func TestMemoryMinimumOverLimit(t *testing.T) {
	_, err := instantiateFull(testEngine, bg, fixture(t, "bigmemory.wat"), RunConfig{Limits: Limits{MemoryBytes: 16 << 20}})
	if le := asLimit(t, err); le.Which != "memory" {
		t.Fatalf("which = %q", le.Which)
	}
	// Under the default limit it instantiates.
	instantiate(t, "bigmemory.wat", RunConfig{})
}

func TestTableMinimumOverLimit(t *testing.T) {
	_, err := instantiateFull(testEngine, bg, fixture(t, "bigtable.wat"), RunConfig{})
	if le := asLimit(t, err); le.Which != "table" {
		t.Fatalf("which = %q (%v)", le.Which, err)
	}
	instantiate(t, "bigtable.wat", RunConfig{Limits: Limits{TableElements: 300_000}})
}

func TestTableGrowthRefused(t *testing.T) {
	// wasmtime 39's C API has no hook on table growth: a refused table.grow
	// returns -1 and the guest's own trap is all the host sees (documented gap).
	i := instantiate(t, "limits.wat", RunConfig{Limits: Limits{TableElements: 10_000}})
	_, err := i.Call(bg, "", "table-balloon")
	asTrap(t, err)
}

func TestInstanceLimit(t *testing.T) {
	_, err := instantiateFull(testEngine, bg, fixture(t, "instances.wat"), RunConfig{Limits: Limits{Instances: 4}})
	if le := asLimit(t, err); le.Which != "instances" {
		t.Fatalf("which = %q (%v)", le.Which, err)
	}
	instantiate(t, "instances.wat", RunConfig{})
}

func TestCancelledBeforeCall(t *testing.T) {
	i := instantiate(t, "basic.wat", RunConfig{})
	ctx, cancel := context.WithCancel(bg)
	cancel()
	var ce *CancelledError
	if _, err := i.Call(ctx, "", "spin"); !errors.As(err, &ce) {
		t.Fatalf("got %v", err)
	}
	// Nothing ran: the instance is still usable.
	if v, err := i.Call(bg, "", "add", uint32(1), uint32(2)); err != nil || v != uint32(3) {
		t.Fatalf("add after a refused call: %v, %v", v, err)
	}
}

func TestCancelAfterCallDoesNotLeak(t *testing.T) {
	// A context cancelled right after a successful call must not stop the
	// next call made with another context.
	i := instantiate(t, "basic.wat", RunConfig{})
	for range 50 {
		ctx, cancel := context.WithCancel(bg)
		if _, err := i.Call(ctx, "", "add", uint32(1), uint32(2)); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	if _, err := i.Call(bg, "", "add", uint32(1), uint32(2)); err != nil {
		t.Fatal(err)
	}
}

func TestMemoryAndTableCounts(t *testing.T) {
	_, err := instantiateFull(testEngine, bg, fixture(t, "counts.wat"), RunConfig{Limits: Limits{Memories: 2}})
	if le := asLimit(t, err); le.Which != "memory" {
		t.Fatalf("memories over the cap: which = %q (%v)", le.Which, err)
	}
	_, err = instantiateFull(testEngine, bg, fixture(t, "counts.wat"), RunConfig{Limits: Limits{Tables: 2}})
	if le := asLimit(t, err); le.Which != "table" {
		t.Fatalf("tables over the cap: which = %q (%v)", le.Which, err)
	}
	i := instantiate(t, "counts.wat", RunConfig{Limits: Limits{Memories: 3, Tables: 3}})
	if _, err := i.Call(bg, "", "run"); err != nil {
		t.Fatal(err)
	}
	if p := i.MemoryPeak(); p != 3*65536 {
		t.Fatalf("peak %d, want 3 pages", p)
	}
}

func TestMemoryLimitIsTotalOverMemories(t *testing.T) {
	const page = 65536
	// Three memories of one page each: three pages fit, fewer do not.
	if _, err := instantiateFull(testEngine, bg, fixture(t, "counts.wat"), RunConfig{Limits: Limits{MemoryBytes: 3*page - 1}}); asLimit(t, err).Which != "memory" {
		t.Fatalf("three pages under a limit of under three: %v", err)
	}
	instantiate(t, "counts.wat", RunConfig{Limits: Limits{MemoryBytes: 3 * page}})

	// Growth of one memory uses budget the other then lacks.
	i := instantiate(t, "twomem.wat", RunConfig{Limits: Limits{MemoryBytes: 4 * page}})
	if v, err := i.Call(bg, "", "grow-a", uint32(2)); err != nil || v != int32(1) {
		t.Fatalf("grow-a(2) = %v, %v (want old size 1)", v, err)
	}
	v, err := i.Call(bg, "", "grow-b", uint32(1))
	// The refused growth returns -1; the guest survives it and returns
	// normally (a guest that traps afterwards ends ResourceLimitError).
	if err != nil || v != int32(-1) {
		t.Fatalf("grow-b(1) past the total = %v, %v; want -1", v, err)
	}
	if p := i.MemoryPeak(); p != 4*page {
		t.Fatalf("peak %d, want 4 pages", p)
	}
}

// TestStartFunctionEndings: a core start function runs during Instantiate,
// so the deadline and the limits bound instantiation too, with the same
// typed endings as a call.
func TestStartFunctionEndings(t *testing.T) {
	const mod = `(component (core module $M (memory 1) (func $s %s) (start $s)) (core instance (instantiate $M)))`
	cases := []struct {
		name, body string
		check      func(t *testing.T, err error)
	}{
		{"spin", `(loop $l (br $l))`, func(t *testing.T, err error) {
			if de := asDeadline(t, err); de.Waiting {
				t.Fatalf("spinning start reported waiting: %+v", de)
			}
		}},
		{"balloon", `(loop $l (drop (memory.grow (i32.const 16))) (br $l))`, func(t *testing.T, err error) {
			if le := asLimit(t, err); le.Which != "memory" {
				t.Fatalf("which = %q", le.Which)
			}
		}},
		{"trap", `unreachable`, func(t *testing.T, err error) {
			if te := asTrap(t, err); !strings.Contains(te.Message, "unreachable") {
				t.Fatalf("message %q", te.Message)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			comp, err := testEngine.Compile([]byte(fmt.Sprintf(mod, c.body)))
			if err != nil {
				t.Fatal(err)
			}
			defer comp.Close()
			i, err := instantiateFull(testEngine, bg, comp, RunConfig{Limits: Limits{Deadline: 200 * time.Millisecond, MemoryBytes: 8 << 20}})
			if err == nil {
				i.Close()
				t.Fatal("instantiated")
			}
			c.check(t, err)
		})
	}
}
