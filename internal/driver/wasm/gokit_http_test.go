package wasm_test

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/builtin/providers"
	"github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/driver/wasm"
	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

const httpDriverWasm = "../../../testdata/components/driver-anthropic-http/driver-anthropic-http.wasm"

func httpDriver(t testing.TB, endpoint, key string) *wasm.Driver {
	t.Helper()
	return httpDriverDeadline(t, endpoint, key, 30)
}

func httpDriverDeadline(t testing.TB, endpoint, key string, seconds int) *wasm.Driver {
	t.Helper()
	src, err := os.ReadFile(httpDriverWasm)
	if err != nil {
		t.Fatal(err)
	}
	// A Go-kit component with net/http needs more table and memory than the
	// WAT fixtures' limits.
	lim := grant.Limits(manifest.EffLimits{DeadlineSeconds: seconds, MemoryBytes: 256 << 20, TableElements: 50000, Instances: 10})
	d, err := wasm.New(wasm.Config{Engine: testEngine, Name: "local/driver-anthropic-http", Version: "0.1.0", Component: src,
		Limits: lim, Model: "claude-test", Endpoint: endpoint, APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func toolTurnRequest() *driver.Request {
	req := userRequest("echo hi")
	req.Tools = []driver.Tool{{Name: "local/echo", Description: "echoes", Parameters: json.RawMessage(`{"type":"object"}`)}}
	return req
}

// BenchmarkDriverTurnOverHTTP: one turn of the Go-kit driver component
// through wasi:http against the fake provider, and the built-in Anthropic
// driver's turn against the same server (the ratio: ≤ 1.5).
func BenchmarkDriverTurnOverHTTP(b *testing.B) {
	fp := fakeprovider.NewAnthropic()
	defer fp.Close()
	reply := fakeprovider.Reply{Text: []string{"Let me ", "echo that."},
		ToolCalls:   []fakeprovider.ToolCall{{ID: "toolu_1", Name: "local/echo", Pieces: []string{`{"mess`, `age":"hi"}`}}},
		InputTokens: 12, OutputTokens: 7}
	req := toolTurnRequest()
	b.Run("wasm", func(b *testing.B) {
		d := httpDriver(b, fp.URL, "sk-real-key")
		for b.Loop() {
			fp.Push(reply)
			if _, err := d.Call(context.Background(), req, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("builtin", func(b *testing.B) {
		d, ok, err := providers.New(driver.Config{Name: "murmur/driver-anthropic", Version: "0.1.0", Endpoint: fp.URL, APIKey: "sk-real-key", Settings: map[string]any{}})
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		for b.Loop() {
			fp.Push(reply)
			if _, err := d.Call(context.Background(), req, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDriverTurnSplit splits a Go-kit driver turn: "instantiate" is a
// fresh instance of the component as every turn makes one (instance and the
// Go kit's start, closed at once), "turn" the whole Call. The difference is
// the guest's own work, its HTTP exchange and its streaming. The -spool
// variants run the same on the capsules' path (wasip2 and the spool).
func BenchmarkDriverTurnSplit(b *testing.B) {
	fp := fakeprovider.NewAnthropic()
	defer fp.Close()
	src, err := os.ReadFile(httpDriverWasm)
	if err != nil {
		b.Fatal(err)
	}
	d := httpDriver(b, fp.URL, "sk-real-key")
	comp, err := testEngine.Compile(src)
	if err != nil {
		b.Fatal(err)
	}
	defer comp.Close()
	lim := grant.Limits(manifest.EffLimits{DeadlineSeconds: 30, MemoryBytes: 256 << 20, TableElements: 50000, Instances: 10})
	b.Run("instantiate", func(b *testing.B) {
		for b.Loop() {
			inst, err := testEngine.Instantiate(context.Background(), comp, wasmhost.RunConfig{GoIO: true, Limits: lim,
				WASI: wasmhost.WASI{Args: []string{"driver"}, Env: d.Env()}})
			if err != nil {
				b.Fatal(err)
			}
			inst.Close()
		}
	})
	reply := fakeprovider.Reply{Text: []string{"Let me ", "echo that."},
		ToolCalls:   []fakeprovider.ToolCall{{ID: "toolu_1", Name: "local/echo", Pieces: []string{`{"mess`, `age":"hi"}`}}},
		InputTokens: 12, OutputTokens: 7}
	req := toolTurnRequest()
	for _, k := range []struct {
		name string
		goIO bool
	}{{"turn", true}, {"turn-spool", false}} {
		// turn-spool: the same turn on the capsules' path (wasip2, the body
		// spooled whole), what a driver turn was before its wasi:io was Go's.
		b.Run(k.name, func(b *testing.B) {
			defer wasm.UseGoIO(k.goIO)()
			for b.Loop() {
				fp.Push(reply)
				if _, err := d.Call(context.Background(), req, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("instantiate-spool", func(b *testing.B) {
		for b.Loop() {
			inst, err := testEngine.Instantiate(context.Background(), comp, wasmhost.RunConfig{Limits: lim,
				WASI: wasmhost.WASI{Args: []string{"driver"}, Env: d.Env()}})
			if err != nil {
				b.Fatal(err)
			}
			inst.Close()
		}
	})
}

func hostUse(t *testing.T) (fds, goroutines int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(ents), runtime.NumGoroutine()
}

// BenchmarkDriverTurnAlternating runs, in every iteration, a turn with the
// driver's Go wasi:io, the same turn on the capsules' spool path (what a
// driver turn was before) and the built-in driver's turn, so all three see
// the same machine load; it reports each one's wall time and process CPU
// time per turn (CPU time is what a loaded machine disturbs least; it
// includes the in-process fake provider's share, the same for all three).
func BenchmarkDriverTurnAlternating(b *testing.B) {
	fp := fakeprovider.NewAnthropic()
	defer fp.Close()
	d := httpDriver(b, fp.URL, "sk-real-key")
	reply := fakeprovider.Reply{Text: []string{"Let me ", "echo that."},
		ToolCalls:   []fakeprovider.ToolCall{{ID: "toolu_1", Name: "local/echo", Pieces: []string{`{"mess`, `age":"hi"}`}}},
		InputTokens: 12, OutputTokens: 7}
	req := toolTurnRequest()
	src, err := os.ReadFile(httpDriverWasm)
	if err != nil {
		b.Fatal(err)
	}
	comp, err := testEngine.Compile(src)
	if err != nil {
		b.Fatal(err)
	}
	defer comp.Close()
	lim := grant.Limits(manifest.EffLimits{DeadlineSeconds: 30, MemoryBytes: 256 << 20, TableElements: 50000, Instances: 10})
	bi, ok, err := providers.New(driver.Config{Name: "murmur/driver-anthropic", Version: "0.1.0", Endpoint: fp.URL, APIKey: "sk-real-key", Settings: map[string]any{}})
	if err != nil || !ok {
		b.Fatal(ok, err)
	}
	alternate(b, func() { fp.Push(reply) }, []altTurn{
		{"go", true, func() error {
			defer wasm.UseGoIO(true)()
			_, err := d.Call(context.Background(), req, nil)
			return err
		}},
		{"spool", true, func() error {
			defer wasm.UseGoIO(false)()
			_, err := d.Call(context.Background(), req, nil)
			return err
		}},
		{"builtin", true, func() error { _, err := bi.Call(context.Background(), req, nil); return err }},
		{"instantiate", false, func() error {
			// What every turn of "go" spends on its fresh instance.
			inst, err := testEngine.Instantiate(context.Background(), comp, wasmhost.RunConfig{GoIO: true, Limits: lim,
				WASI: wasmhost.WASI{Args: []string{"driver"}, Env: d.Env()}})
			if err == nil {
				inst.Close()
			}
			return err
		}},
	})
}

// altTurn is one case of an alternating benchmark: reply says whether the
// fake provider needs a reply pushed before it.
type altTurn struct {
	name  string
	reply bool
	call  func() error
}

// alternate runs every turn once per iteration, so all see the same machine
// load, and reports each one's wall time and process CPU time per turn.
func alternate(b *testing.B, push func(), turns []altTurn) {
	wall := make([]time.Duration, len(turns))
	cpu := make([]time.Duration, len(turns))
	for b.Loop() {
		for k, tr := range turns {
			if tr.reply {
				push()
			}
			c0, t0 := processCPU(), time.Now()
			err := tr.call()
			wall[k] += time.Since(t0)
			cpu[k] += processCPU() - c0
			if err != nil {
				b.Fatal(tr.name, err)
			}
		}
	}
	n := float64(b.N)
	for k, tr := range turns {
		b.ReportMetric(float64(wall[k].Nanoseconds())/n, "ns/turn-"+tr.name)
		b.ReportMetric(float64(cpu[k].Nanoseconds())/n, "cpu-ns/turn-"+tr.name)
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDriverInstantiateAfter times a bare instantiation of the Go-kit
// driver component after something else has run, as in a session, where a
// turn's instance never follows another instantiation: "solo" is a tight
// loop of them; "after-turn" follows a whole WASM turn, "after-builtin" a
// built-in turn, "after-sleep" half a millisecond of sleep and
// "after-touch" writing 8 MiB (CPU caches evicted). Only the instantiation
// is timed (us/inst).
func BenchmarkDriverInstantiateAfter(b *testing.B) {
	fp := fakeprovider.NewAnthropic()
	defer fp.Close()
	reply := fakeprovider.Reply{Text: []string{"Let me ", "echo that."},
		ToolCalls:   []fakeprovider.ToolCall{{ID: "toolu_1", Name: "local/echo", Pieces: []string{`{"mess`, `age":"hi"}`}}},
		InputTokens: 12, OutputTokens: 7}
	d := httpDriver(b, fp.URL, "sk-real-key")
	req := toolTurnRequest()
	src, err := os.ReadFile(httpDriverWasm)
	if err != nil {
		b.Fatal(err)
	}
	comp, err := testEngine.Compile(src)
	if err != nil {
		b.Fatal(err)
	}
	defer comp.Close()
	lim := grant.Limits(manifest.EffLimits{DeadlineSeconds: 30, MemoryBytes: 256 << 20, TableElements: 50000, Instances: 10})
	bi, ok, err := providers.New(driver.Config{Name: "murmur/driver-anthropic", Version: "0.1.0", Endpoint: fp.URL, APIKey: "sk-real-key", Settings: map[string]any{}})
	if err != nil || !ok {
		b.Fatal(ok, err)
	}
	touch := make([]byte, 8<<20)
	for _, c := range []struct {
		name   string
		before func() error
	}{
		{"solo", func() error { return nil }},
		{"after-turn", func() error { fp.Push(reply); _, err := d.Call(context.Background(), req, nil); return err }},
		{"after-builtin", func() error { fp.Push(reply); _, err := bi.Call(context.Background(), req, nil); return err }},
		{"after-sleep", func() error { time.Sleep(500 * time.Microsecond); return nil }},
		{"after-touch", func() error {
			for i := range touch {
				touch[i]++
			}
			return nil
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var spent time.Duration
			for b.Loop() {
				if err := c.before(); err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				inst, err := testEngine.Instantiate(context.Background(), comp, wasmhost.RunConfig{GoIO: true, Limits: lim,
					WASI: wasmhost.WASI{Args: []string{"driver"}, Env: d.Env()}})
				if err != nil {
					b.Fatal(err)
				}
				inst.Close()
				spent += time.Since(t0)
			}
			b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N)/1e3, "us/inst")
		})
	}
}
