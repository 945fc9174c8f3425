package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestParallelStores runs 16 goroutines, each making many stores from
// shared components on the shared engine, with traps, deadlines, resource
// limits and host imports mixed in.
func TestParallelStores(t *testing.T) {
	const workers = 16
	iters := 24
	if testing.Short() {
		iters = 8
	}
	var hostCalls atomic.Int64
	h := NewHost()
	h.Define("murmur:bench/ping", "ping", func(ctx context.Context, a []Value) (Value, error) {
		hostCalls.Add(1)
		return a[0].(uint32) + 1, nil
	})
	basic, ping, limits := fixture(t, "basic.wat"), fixture(t, "ping.wat"), fixture(t, "limits.wat")
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	var endings [4]atomic.Int64 // ok, trap, deadline, limit
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range iters {
				if err := oneRun(w, it, basic, ping, limits, h, &endings); err != nil {
					errs <- fmt.Errorf("worker %d iteration %d: %w", w, it, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("endings: ok %d, trap %d, deadline %d, limit %d; host calls %d",
		endings[0].Load(), endings[1].Load(), endings[2].Load(), endings[3].Load(), hostCalls.Load())
	for k := range endings {
		if endings[k].Load() == 0 {
			t.Errorf("ending %d never happened", k)
		}
	}
}

func oneRun(w, it int, basic, ping, limits *Component, h *Host, endings *[4]atomic.Int64) error {
	ctx := context.Background()
	switch (w + it) % 5 {
	case 0: // trap
		i, err := instantiateFull(testEngine, ctx, basic, RunConfig{})
		if err != nil {
			return err
		}
		defer i.Close()
		var te *TrapError
		if _, err := i.Call(ctx, "", "trap"); !errors.As(err, &te) {
			return fmt.Errorf("trap: got %v", err)
		}
		endings[1].Add(1)
	case 1: // spin past a short deadline
		// The deadline bounds instantiation too: under this much contention
		// (16 goroutines, 2 cores, -race) it can already end there.
		var de *DeadlineError
		i, err := instantiateFull(testEngine, ctx, basic, RunConfig{Limits: Limits{Deadline: 30 * time.Millisecond}})
		if errors.As(err, &de) && !de.Waiting {
			endings[2].Add(1)
			return nil
		}
		if err != nil {
			return err
		}
		defer i.Close()
		if _, err := i.Call(ctx, "", "spin"); !errors.As(err, &de) || de.Waiting {
			return fmt.Errorf("spin: got %v", err)
		}
		endings[2].Add(1)
	case 2: // memory balloon
		i, err := instantiateFull(testEngine, ctx, limits, RunConfig{Limits: Limits{MemoryBytes: 4 << 20}})
		if err != nil {
			return err
		}
		defer i.Close()
		var le *ResourceLimitError
		if _, err := i.Call(ctx, "", "balloon"); !errors.As(err, &le) || le.Which != "memory" {
			return fmt.Errorf("balloon: got %v", err)
		}
		endings[3].Add(1)
	case 3: // host imports
		i, err := instantiateFull(testEngine, ctx, ping, RunConfig{Host: h})
		if err != nil {
			return err
		}
		defer i.Close()
		if v, err := i.Call(ctx, "", "loop", uint32(500)); err != nil || v != uint32(500) {
			return fmt.Errorf("loop: %v, %v", v, err)
		}
		endings[0].Add(1)
	default: // many plain calls
		i, err := instantiateFull(testEngine, ctx, basic, RunConfig{})
		if err != nil {
			return err
		}
		defer i.Close()
		for k := range 50 {
			if v, err := i.Call(ctx, "", "add", uint32(k), uint32(1)); err != nil || v != uint32(k+1) {
				return fmt.Errorf("add: %v, %v", v, err)
			}
		}
		endings[0].Add(1)
	}
	return nil
}
