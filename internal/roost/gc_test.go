package roost

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100},         // nothing measured: the runtime's default
		{1 * mib, 800},   // the heap minimum decides: 4 MiB × 8 = 32 MiB
		{4 * mib, 700},   // 4 MiB × 8 = 32 MiB
		{8 * mib, 300},   // 8 MiB × 4 = 32 MiB
		{15 * mib, 113},  // just under 32 MiB
		{16 * mib, 100},  // half the floor: GOGC=100's goal is the floor
		{140 * mib, 100}, // a large live heap is paced as before
		{gcHeapFloor - 1, 100},
	} {
		got := gcPercentFor(c.live, gcHeapFloor)
		if got != c.want {
			t.Errorf("gcPercentFor(%d MiB) = %d, want %d", c.live/mib, got, c.want)
		}
		// The runtime's goal for that percent: never over the floor while
		// the rule applies, never under GOGC=100's.
		goal := max(c.live*uint64(100+got)/100, runtimeHeapMinimum*uint64(got)/100)
		if c.live < gcHeapFloor/2 && goal > gcHeapFloor || goal < 2*c.live {
			t.Errorf("live %d MiB: goal %d MiB", c.live/mib, goal/mib)
		}
	}
}

// An operator's GOGC or GOMEMLIMIT is left alone.
func TestGCFloorDefersToEnvironment(t *testing.T) {
	for _, env := range []map[string]string{{"GOGC": "100"}, {"GOMEMLIMIT": "1GiB"}, {"GOGC": "off", "GOMEMLIMIT": "64MiB"}} {
		before := debug.SetGCPercent(123)
		if gcFloor(func(k string) string { return env[k] }) {
			t.Errorf("%v: the floor was applied", env)
		}
		if got := debug.SetGCPercent(before); got != 123 {
			t.Errorf("%v: GOGC changed to %d", env, got)
		}
	}
}

// The tuner runs after every collection and sets the percent the rule
// gives for the live heap it reads.
func TestGCTunerFollowsCollections(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	tu := &gcTuner{floor: 1 << 40, percent: 100} // a floor no test heap reaches
	// Stop re-arming for the rest of the test binary: a huge floor would
	// otherwise keep the test process's heap from being collected.
	defer tu.stopped.Store(true)
	tu.arm()
	for i := 0; i < 50 && tu.cycles.Load() < 3; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	if n := tu.cycles.Load(); n < 3 {
		t.Fatalf("the tuner saw %d collections of 50", n)
	}
	got := debug.SetGCPercent(100)
	if got <= 100 {
		t.Errorf("GOGC after tuning = %d, want the floor's (well above 100)", got)
	}
}
