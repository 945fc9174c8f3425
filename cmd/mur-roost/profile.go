//go:build roostpprof

package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
)

// A build with -tags roostpprof writes, for the daemon's whole life:
//
//   - $MUR_ROOST_CPUPROFILE: a CPU profile;
//   - $MUR_ROOST_HEAPPROFILE: a heap profile at exit;
//   - $MUR_ROOST_TRACE: an execution trace (go tool trace; -pprof=sched
//     says where runnable goroutines waited);
//   - $MUR_ROOST_MUTEXPROFILE, $MUR_ROOST_BLOCKPROFILE: contended locks and
//     blocking (every contention event; blocking of 10 µs or more);
//   - $MUR_ROOST_METRICS: the runtime's own latency histograms at exit —
//     how long runnable goroutines waited for a P, the GC's stop-the-world
//     pauses, total mutex wait, GC cycles and GC CPU — as quantiles.
//
// The load driver stops the daemon with SIGTERM, a clean shutdown. It
// exists to profile the real binary under cmd/roost-load; release builds
// carry none of it.
func init() {
	if p := os.Getenv("MUR_ROOST_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			panic(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			panic(err)
		}
		prev := atExit
		atExit = func() { pprof.StopCPUProfile(); f.Close(); prev() }
	}
	if p := os.Getenv("MUR_ROOST_TRACE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			panic(err)
		}
		if err := trace.Start(f); err != nil {
			panic(err)
		}
		prev := atExit
		atExit = func() { trace.Stop(); f.Close(); prev() }
	}
	if os.Getenv("MUR_ROOST_MUTEXPROFILE") != "" {
		runtime.SetMutexProfileFraction(1)
	}
	if os.Getenv("MUR_ROOST_BLOCKPROFILE") != "" {
		runtime.SetBlockProfileRate(10_000)
	}
	for env, name := range map[string]string{
		"MUR_ROOST_HEAPPROFILE":  "heap",
		"MUR_ROOST_MUTEXPROFILE": "mutex",
		"MUR_ROOST_BLOCKPROFILE": "block",
	} {
		if p := os.Getenv(env); p != "" {
			prev := atExit
			atExit = func() {
				prev()
				if f, err := os.Create(p); err == nil {
					pprof.Lookup(name).WriteTo(f, 0)
					f.Close()
				}
			}
		}
	}
	if p := os.Getenv("MUR_ROOST_METRICS"); p != "" {
		prev := atExit
		atExit = func() {
			prev()
			if f, err := os.Create(p); err == nil {
				writeMetrics(f)
				f.Close()
			}
		}
	}
}

func writeMetrics(f *os.File) {
	names := []string{
		"/sched/latencies:seconds",
		"/sched/pauses/total/gc:seconds",
		"/sync/mutex/wait/total:seconds",
		"/gc/cycles/total:gc-cycles",
		"/cpu/classes/gc/total:cpu-seconds",
		"/cpu/classes/total:cpu-seconds",
		"/gc/heap/allocs:bytes",
		"/gc/heap/allocs:objects",
	}
	s := make([]metrics.Sample, len(names))
	for i, n := range names {
		s[i].Name = n
	}
	metrics.Read(s)
	for _, m := range s {
		switch m.Value.Kind() {
		case metrics.KindUint64:
			fmt.Fprintf(f, "%s %d\n", m.Name, m.Value.Uint64())
		case metrics.KindFloat64:
			fmt.Fprintf(f, "%s %.6f\n", m.Name, m.Value.Float64())
		case metrics.KindFloat64Histogram:
			h := m.Value.Float64Histogram()
			var n uint64
			for _, c := range h.Counts {
				n += c
			}
			fmt.Fprintf(f, "%s n=%d", m.Name, n)
			for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
				fmt.Fprintf(f, " p%g<=%s", q*100, bound(h, n, q))
			}
			fmt.Fprintln(f)
		}
	}
}

// bound is the upper edge of the bucket holding quantile q.
func bound(h *metrics.Float64Histogram, n uint64, q float64) string {
	want := uint64(q * float64(n))
	var seen uint64
	for i, c := range h.Counts {
		seen += c
		if seen >= want && c > 0 {
			return fmt.Sprintf("%.0fµs", h.Buckets[i+1]*1e6)
		}
	}
	return "-"
}
