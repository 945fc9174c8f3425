package roost

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// The daemon's collector runs against a heap floor: while the live heap is
// small, the next collection waits until the heap reaches gcHeapFloor, not
// twice the live heap as GOGC=100 would have it; once the live heap is past
// half the floor, the collector paces as GOGC=100.
//
// Why: a mur-roost answering ~30k requests a second allocates ~100 MB/s
// (almost all of it net/http's per-request request, header map and
// context) over a live heap of ~4 MiB, so at GOGC=100 it collected 30–35
// times a second — 9 % of its CPU, and 60–70 stop-the-world pauses a
// second, each holding every in-flight request (p99 1.3 ms on the shared
// 2-core machine). With a 32 MiB floor the heap grows to the floor between
// collections: a few a second. The cost is memory, bounded by the floor:
// the resident set is at most ≈ 32 MiB above what the live heap needs
// (measured in docs/benchmarks.md), and a daemon whose live heap has grown
// large — every ended session stays answerable by GET /status — is paced
// exactly as before.
//
// The rule is re-applied after every collection (a cleanup on an object
// made for that cycle), not on a timer: nothing in the daemon runs on one.
// An operator's GOGC or GOMEMLIMIT turns it off — their setting stands.
const gcHeapFloor = 32 << 20

// gcPercentFor is the largest GOGC (at least 100) whose next heap goal is
// at most max(floor, 2 × live). The runtime's goal is the larger of
// live × (1 + GOGC/100) and its heap minimum, 4 MiB × GOGC/100: with a
// small live heap the minimum is what decides.
func gcPercentFor(live, floor uint64) int {
	if live == 0 || live >= floor/2 {
		return 100
	}
	byLive := floor*100/live - 100
	byMinimum := floor * 100 / runtimeHeapMinimum
	return int(max(min(byLive, byMinimum), 100))
}

// runtimeHeapMinimum is the Go runtime's heap minimum at GOGC=100.
const runtimeHeapMinimum = 4 << 20

// gcFloor applies the heap floor for the process's life, unless the
// environment sets GOGC or GOMEMLIMIT. It reports whether it did.
func gcFloor(getenv func(string) string) bool {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return false
	}
	t := &gcTuner{floor: gcHeapFloor}
	// Before the first collection nothing is live to speak of: start at
	// the floor over a nominal 1 MiB.
	t.set(gcPercentFor(1<<20, t.floor))
	t.arm()
	return true
}

type gcTuner struct {
	floor   uint64
	percent int
	cycles  atomic.Int64 // collections seen, for tests
	stopped atomic.Bool  // for tests: the next cleanup neither tunes nor re-arms
	sample  [1]metrics.Sample
}

func (t *gcTuner) arm() {
	// A fresh object per cycle (32 bytes: tiny allocations share a block
	// and may never be found unreachable): its cleanup runs after the
	// collection that finds it unreachable, and arms the next one, so one
	// cleanup is pending at a time.
	runtime.AddCleanup(new([32]byte), func(t *gcTuner) {
		if !t.stopped.Load() {
			t.tune()
			t.arm()
		}
	}, t)
}

func (t *gcTuner) tune() {
	t.cycles.Add(1)
	t.sample[0].Name = "/gc/heap/live:bytes"
	metrics.Read(t.sample[:])
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	p := gcPercentFor(t.sample[0].Value.Uint64(), t.floor)
	// Only a change of a tenth or more is applied: the goal moves with
	// the live heap anyway, and this keeps SetGCPercent off most cycles.
	if d := p - t.percent; d*10 > t.percent || -d*10 > t.percent {
		t.set(p)
	}
}

func (t *gcTuner) set(p int) {
	t.percent = p
	debug.SetGCPercent(p)
}
