package load

import (
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// histogram counts latencies in log-linear buckets: exact below 128 ns,
// then 128 buckets per power of two, so a reported quantile is within 1 %
// of the true one. Recording is an index and an increment — no slice that
// grows with the run, so the driver's own allocations and collections stay
// out of what it measures.
type histogram struct {
	counts [histBuckets]uint64
	n      uint64
	max    time.Duration
}

const (
	histSub     = 128
	histBuckets = 36 * histSub // up to 2^42 ns, over an hour
)

func bucketOf(d time.Duration) int {
	v := uint64(max(d, 0))
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(v) - 8 // v>>shift is in [128, 256)
	i := (shift+1)*histSub + int(v>>shift) - histSub
	return min(i, histBuckets-1)
}

// lowerBound is the smallest duration bucket i holds.
func lowerBound(i int) time.Duration {
	if i < histSub {
		return time.Duration(i)
	}
	shift := i/histSub - 1
	return time.Duration(uint64(i%histSub+histSub) << shift)
}

func (h *histogram) record(d time.Duration) {
	h.counts[bucketOf(d)]++
	h.n++
	h.max = max(h.max, d)
}

func (h *histogram) add(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile is the lower edge of the bucket holding the q-th latency (the
// nearest-rank definition: the ⌈q·n⌉-th smallest).
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.999999999)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(lowerBound(i), h.max)
		}
	}
	return h.max
}

func (h *histogram) pcts() string {
	if h.n == 0 {
		return "-"
	}
	r := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
	return fmt.Sprintf("p50 %v  p90 %v  p99 %v  p99.9 %v  max %v",
		r(h.quantile(0.5)), r(h.quantile(0.9)), r(h.quantile(0.99)), r(h.quantile(0.999)), r(h.max))
}

// runDelay is the time pid's threads have spent runnable on a run queue
// without a CPU (the second field of /proc/<pid>/task/*/schedstat, in ns);
// threads that exited before the read are not counted, which the runtimes
// here (one process, threads kept for its life) make negligible.
func runDelay(pid int) time.Duration {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			ns, _ := strconv.ParseInt(f[1], 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}

// runtimeFigures is what roost-load's own runtime reports: its collections
// and how long its goroutines waited for a P (the driver's share of any
// latency it measures).
type runtimeFigures struct {
	gcs, allocs uint64
	gcCPU       float64
	sched       *metrics.Float64Histogram
}

func readRuntime() runtimeFigures {
	s := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/sched/latencies:seconds"},
	}
	metrics.Read(s)
	f := runtimeFigures{gcs: s[0].Value.Uint64(), allocs: s[1].Value.Uint64(), gcCPU: s[2].Value.Float64()}
	h := s[3].Value.Float64Histogram()
	f.sched = &metrics.Float64Histogram{Counts: append([]uint64(nil), h.Counts...), Buckets: h.Buckets}
	return f
}

func (f runtimeFigures) since(o runtimeFigures) runtimeFigures {
	d := runtimeFigures{gcs: f.gcs - o.gcs, allocs: f.allocs - o.allocs, gcCPU: f.gcCPU - o.gcCPU,
		sched: &metrics.Float64Histogram{Counts: make([]uint64, len(f.sched.Counts)), Buckets: f.sched.Buckets}}
	for i := range d.sched.Counts {
		d.sched.Counts[i] = f.sched.Counts[i] - o.sched.Counts[i]
	}
	return d
}

func (f runtimeFigures) String() string {
	var n uint64
	for _, c := range f.sched.Counts {
		n += c
	}
	q := func(q float64) string {
		want := uint64(q * float64(n))
		var seen uint64
		for i, c := range f.sched.Counts {
			seen += c
			if c > 0 && seen >= want {
				edge := f.sched.Buckets[i+1]
				if math.IsInf(edge, 1) {
					edge = f.sched.Buckets[i]
				}
				return time.Duration(edge * 1e9).Round(time.Microsecond).String()
			}
		}
		return "-"
	}
	return fmt.Sprintf("%d GCs (%.2f s GC CPU), %.1f MB allocated; goroutine wait for a P p50 ≤ %s, p99 ≤ %s, p99.9 ≤ %s (%d waits)",
		f.gcs, f.gcCPU, float64(f.allocs)/1e6, q(0.5), q(0.99), q(0.999), n)
}
