package wasmhost

import (
	"os"
	"strconv"
	"syscall"
	"testing"
)

const goKitFlood = "../../../testdata/components/tool-flood/tool-flood.wasm"

// A tool's result is read from the guest's memory, not lifted by wasmtime,
// and a metadata list keeps at most MaxResultListBytes: the rest goes to the
// run's ResultSpill, in order. Issue 22 item 10: a million pairs cost about
// 1 GB of the host's memory as wasmtime lifted them.
func TestToolResultMetadataBounded(t *testing.T) {
	c := fixture(t, goKitFlood)
	for _, e := range c.Exports() {
		for _, x := range e.Exports {
			if e.Kind == ItemInstance && x.Name == "run" && len(e.Name) > 15 && e.Name[:15] == "murmur:tool/run" {
				if got, want := x.Func.Result.String(), toolResultType().String(); got != want {
					t.Fatalf("declared result %s, want %s", got, want)
				}
			}
		}
	}
	if !c.toolRuns["murmur:tool/run@0.1.0#run"] {
		t.Fatal("the tool run was not rewritten: its result is lifted by wasmtime")
	}
	const perPair = 16 + 2 // two (ptr, len) and "k", "v"
	cases := []struct {
		pairs, kept int
	}{
		{0, 0},
		{3, 3},
		{MaxResultListBytes / perPair, MaxResultListBytes / perPair},
		{MaxResultListBytes/perPair + 1, MaxResultListBytes / perPair},
		{200_000, MaxResultListBytes / perPair},
	}
	for _, tc := range cases {
		var spilled []Value
		i := instantiate(t, goKitFlood, RunConfig{ResultSpill: func(v Value) { spilled = append(spilled, v) }})
		in := "meta:" + itoa(tc.pairs)
		v, err := i.Call(bg, "murmur:tool/run@0.1.0", "run", toolInput(&in, nil))
		if err != nil {
			t.Fatalf("%d pairs: %v", tc.pairs, err)
		}
		rec := v.(Record)
		if s := rec.Get("status"); s != Enum("passed") {
			t.Fatalf("%d pairs: status %v", tc.pairs, s)
		}
		if s := rec.Get("summary"); s != Some("returned "+itoa(tc.pairs)+" pairs") {
			t.Fatalf("%d pairs: summary %#v", tc.pairs, s)
		}
		md := rec.Get("metadata").(List)
		if len(md) != tc.kept || len(spilled) != tc.pairs-tc.kept {
			t.Fatalf("%d pairs: kept %d, spilled %d; want %d, %d", tc.pairs, len(md), len(spilled), tc.kept, tc.pairs-tc.kept)
		}
		for _, p := range append(md, spilled...) {
			if tp, ok := p.(Tuple); !ok || tp[0] != "k" || tp[1] != "v" {
				t.Fatalf("%d pairs: pair %#v", tc.pairs, p)
			}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// BenchmarkToolResultMetadata is what one call returning a million metadata
// pairs costs the host, read from memory (read) and lifted by wasmtime as
// before (lifted). Run each alone (-bench 'ToolResultMetadata/read$'): the
// peak RSS it reports is the process's.
func BenchmarkToolResultMetadata(b *testing.B) {
	for _, mode := range []string{"read", "lifted"} {
		b.Run(mode, func(b *testing.B) {
			liftToolResults = mode == "lifted"
			defer func() { liftToolResults = false }()
			e := benchEngine(b, false)
			c, err := e.Compile(benchBinary(b, goKitFlood[3:]))
			if err != nil {
				b.Fatal(err)
			}
			in := "meta:" + benchPairs
			var guest int64
			for b.Loop() {
				i, err := instantiateFull(e, bg, c, benchRunConfig(b))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := i.Call(bg, "murmur:tool/run@0.1.0", "run", toolInput(&in, nil)); err != nil {
					b.Fatal(err)
				}
				guest = max(guest, i.MemoryPeak())
				i.Close()
			}
			b.ReportMetric(float64(guest)/(1<<20), "MB-guest-memory")
			var ru syscall.Rusage
			if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
				b.ReportMetric(float64(ru.Maxrss)/1024, "MB-peak-rss")
			}
		})
	}
}

// benchPairs is the number of pairs BenchmarkToolResultMetadata returns
// (MURMUR_BENCH_PAIRS, default a million).
var benchPairs = func() string {
	if s := os.Getenv("MURMUR_BENCH_PAIRS"); s != "" {
		return s
	}
	return "1000000"
}()
