package hostapi

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

// The figure the issue asks for is invoke's overhead over the bare tool run
// (< 50 µs for a small tool): BenchmarkInvoke minus BenchmarkToolRunBare.
// Both run the WAT echo tool with the same RunConfig (env, preopens, log
// files, limits) in a fresh instance per call; Invoke adds the name lookup,
// the cached component, building the sandbox and the tool_call trace line
// (a real write to trace.jsonl). BenchmarkInvokeNoTrace leaves the line out.

const benchManifest = `name: local/bench
version: "0.1.0"
artifacts:
  - name: local/echo
    version: "0.1.0"
`

func benchEnv(b *testing.B) *env {
	return newEnv(b, benchManifest, func(e *env) {
		publishTool(b, e.chain.Project, "local/echo", "0.1.0", componentBytes(b, "echo_tool"), "")
	})
}

var benchInput = wit.ToolInput{Data: ptr("hello, tool")}

func BenchmarkToolRunBare(b *testing.B) {
	e := benchEnv(b)
	t, err := e.api.testTool("echo")
	if err != nil {
		b.Fatal(err)
	}
	comp, err := t.Component()
	if err != nil {
		b.Fatal(err)
	}
	rc, err := t.RunConfig(tools.Invocation{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		inst, err := testEngine.Instantiate(ctx, comp, rc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := wit.CallToolRun(ctx, inst, benchInput); err != nil {
			b.Fatal(err)
		}
		inst.Close()
	}
}

func BenchmarkInvoke(b *testing.B) {
	e := benchEnv(b)
	ctx := context.Background()
	if _, err := e.api.Invoke(ctx, "echo", benchInput); err != nil { // compile outside the loop
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.api.Invoke(ctx, "echo", benchInput); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInvokeNoTrace(b *testing.B) {
	e := benchEnv(b)
	e.api.Register(wasmhost.NewHost(), nil)
	ctx := context.Background()
	if _, err := e.api.Invoke(ctx, "echo", benchInput); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.api.Invoke(ctx, "echo", benchInput); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInvokeUndeclared(b *testing.B) {
	e := benchEnv(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.api.Invoke(ctx, "nope", benchInput); err == nil {
			b.Fatal("undeclared tool ran")
		}
	}
}

// BenchmarkInvokeOverhead alternates a bare tool run and an Invoke of the
// same tool in every iteration (so load from other processes hits both
// alike) and reports the medians and the median of the per-iteration
// difference: overhead-µs is the figure for docs/benchmarks.md.
func BenchmarkInvokeOverhead(b *testing.B) {
	e := benchEnv(b)
	t, err := e.api.testTool("echo")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.api.Invoke(ctx, "echo", benchInput); err != nil {
		b.Fatal(err)
	}
	comp, err := t.Component()
	if err != nil {
		b.Fatal(err)
	}
	rc, err := t.RunConfig(tools.Invocation{})
	if err != nil {
		b.Fatal(err)
	}
	var bare, inv, diff []float64
	for b.Loop() {
		t0 := time.Now()
		inst, err := testEngine.Instantiate(ctx, comp, rc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := wit.CallToolRun(ctx, inst, benchInput); err != nil {
			b.Fatal(err)
		}
		inst.Close()
		t1 := time.Now()
		if _, err := e.api.Invoke(ctx, "echo", benchInput); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		bare = append(bare, float64(t1.Sub(t0).Nanoseconds()))
		inv = append(inv, float64(t2.Sub(t1).Nanoseconds()))
		diff = append(diff, float64(t2.Sub(t1).Nanoseconds()-t1.Sub(t0).Nanoseconds()))
	}
	b.ReportMetric(median(bare)/1e3, "bare-µs")
	b.ReportMetric(median(inv)/1e3, "invoke-µs")
	b.ReportMetric(median(diff)/1e3, "overhead-µs")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
