package wasmhost

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// usage is the process's CPU time and minor page faults so far: on a shared
// machine CPU per operation is steadier than wall time, and the faults show
// what copying data segments into fresh memory costs.
func usage(b *testing.B) (cpu int64, faults int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), ru.Minflt
}

// reportUsage reports CPU and minor faults per operation since (cpu0, flt0).
func reportUsage(b *testing.B, cpu0, flt0 int64) {
	cpu, flt := usage(b)
	b.ReportMetric(float64(cpu-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(flt-flt0)/float64(b.N), "faults/op")
}

// Benchmarks of the figures in docs/benchmarks.md ("## wasmhost"). The WAT
// components are the small fixtures; the Go-kit variants use the committed
// tool-echo component built with the Go guest kit (skipped when absent).

const goKitTool = "../../testdata/components/tool-echo/tool-echo.wasm"

func benchBinary(b *testing.B, name string) []byte {
	b.Helper()
	if filepath.Ext(name) == ".wasm" {
		bin, err := os.ReadFile(name)
		if err != nil {
			b.Skip("no component:", err)
		}
		return bin
	}
	src, err := os.ReadFile("testdata/" + name)
	if err != nil {
		b.Fatal(err)
	}
	bin, err := parseWAT(src)
	if err != nil {
		b.Fatal(err)
	}
	return bin
}

func benchEngine(b *testing.B, cache bool) *Engine {
	b.Helper()
	cfg := Config{NoCache: !cache}
	if cache {
		cfg.CacheDir = b.TempDir()
	}
	e, err := NewEngine(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

func benchRunConfig(b *testing.B) RunConfig {
	return RunConfig{WASI: WASI{
		Env:      map[string]string{"MURMUR_SESSION_ID": "ses_bench"},
		Preopens: []Preopen{{HostDir: b.TempDir(), GuestPath: "."}},
	}}
}

func BenchmarkCompile(b *testing.B) {
	e := benchEngine(b, false)
	bin := benchBinary(b, "echo_tool.wat")
	b.ReportAllocs()
	for b.Loop() {
		c, err := e.Compile(bin)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

func BenchmarkLoadCached(b *testing.B) {
	for _, name := range []string{"echo_tool.wat", goKitTool} {
		b.Run(filepath.Base(name), func(b *testing.B) {
			e := benchEngine(b, true)
			bin := benchBinary(b, name)
			c, err := e.Compile(bin)
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
			b.ReportAllocs()
			cpu0, flt0 := usage(b)
			for b.Loop() {
				c, err := e.Compile(bin)
				if err != nil || !c.FromCache {
					b.Fatal("not from cache", err)
				}
				c.Close()
			}
			reportUsage(b, cpu0, flt0)
		})
		// With the caller's digest (a launch passes its resolve's): the
		// bytes are not hashed again.
		b.Run(filepath.Base(name)+"/digest", func(b *testing.B) {
			e := benchEngine(b, true)
			bin := benchBinary(b, name)
			o := CompileOptions{Digest: "zip-sha256:bench/" + filepath.Base(name)}
			c, err := e.CompileWith(bin, o)
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
			b.ReportAllocs()
			cpu0, flt0 := usage(b)
			for b.Loop() {
				c, err := e.CompileWith(bin, o)
				if err != nil || !c.FromCache {
					b.Fatal("not from cache", err)
				}
				c.Close()
			}
			reportUsage(b, cpu0, flt0)
		})
	}
}

// BenchmarkInstantiate: one fresh instance and its teardown. The Go kit's
// main module gets a memory image (image.go), and freed memories are
// restored in place (shim.c, wh_scrub). For the comparisons in
// docs/benchmarks.md: "4k-pages" places the imaged memory without huge
// pages, "dontneed" wipes freed memories with MADV_DONTNEED instead.
func BenchmarkInstantiate(b *testing.B) {
	e, outer := benchEngine(b, false), b
	compiled := map[string]*Component{} // the variants share one compile
	for _, name := range []string{"echo_tool.wat", goKitTool, goKitTool + "#4k-pages", goKitTool + "#dontneed"} {
		name, variant, _ := strings.Cut(name, "#")
		b.Run(strings.TrimSuffix(filepath.Base(name)+"/"+variant, "/"), func(b *testing.B) {
			switch variant {
			case "4k-pages":
				setImageHuge(false)
				defer setImageHuge(true)
			case "dontneed":
				setScrub(false)
				defer setScrub(true)
			}
			dropKeptReservations()
			c := compiled[name]
			if c == nil {
				var err error
				if c, err = e.Compile(benchBinary(b, name)); err != nil {
					b.Fatal(err)
				}
				compiled[name] = c
				outer.Cleanup(func() { c.Close() })
			}
			rc := benchRunConfig(b)
			b.ReportAllocs()
			cpu0, flt0 := usage(b)
			for b.Loop() {
				i, err := instantiateFull(e, context.Background(), c, rc)
				if err != nil {
					b.Fatal(err)
				}
				i.Close()
			}
			reportUsage(b, cpu0, flt0)
		})
	}
}

func BenchmarkColdRunCached(b *testing.B) {
	for _, name := range []string{"echo_tool.wat", goKitTool} {
		b.Run(filepath.Base(name), func(b *testing.B) {
			e := benchEngine(b, true)
			bin := benchBinary(b, name)
			c, err := e.Compile(bin)
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
			rc := benchRunConfig(b)
			data := "hello"
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				c, err := e.Compile(bin)
				if err != nil {
					b.Fatal(err)
				}
				i, err := instantiateFull(e, ctx, c, rc)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := i.Call(ctx, toolRun, "run", toolInput(&data, nil)); err != nil {
					b.Fatal(err)
				}
				i.Close()
				c.Close()
			}
		})
	}
}

func BenchmarkToolRun(b *testing.B) {
	for _, name := range []string{"echo_tool.wat", goKitTool} {
		b.Run(filepath.Base(name), func(b *testing.B) {
			e := benchEngine(b, false)
			c, err := e.Compile(benchBinary(b, name))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			i, err := instantiateFull(e, context.Background(), c, benchRunConfig(b))
			if err != nil {
				b.Fatal(err)
			}
			defer i.Close()
			data, lp := "hello, tool", "logs/x.log"
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				r, err := i.Call(ctx, toolRun, "run", toolInput(&data, &lp))
				if rec, ok := r.(Record); err != nil || !ok || rec.Get("status") != Enum("passed") {
					b.Fatal(r, err)
				}
			}
		})
	}
}

func BenchmarkHostImport(b *testing.B) {
	h := NewHost()
	h.Define("murmur:bench/ping", "ping", func(ctx context.Context, a []Value) (Value, error) {
		return a[0].(uint32) + 1, nil
	})
	e := benchEngine(b, false)
	c, err := e.Compile(benchBinary(b, "ping.wat"))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	i, err := instantiateFull(e, context.Background(), c, RunConfig{Host: h})
	if err != nil {
		b.Fatal(err)
	}
	defer i.Close()
	b.ReportAllocs()
	b.ResetTimer()
	// One guest call looping b.N times: each op is one guest->host->guest trip.
	v, err := i.Call(context.Background(), "", "loop", uint32(b.N))
	if err != nil || v != uint32(b.N) {
		b.Fatal(v, err)
	}
}
