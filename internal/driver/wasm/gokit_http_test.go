package wasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/builtin/providers"
	"github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/driver/wasm"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/sandbox"
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
	lim := sandbox.Limits(manifest.EffLimits{DeadlineSeconds: seconds, MemoryBytes: 256 << 20, TableElements: 50000, Instances: 10})
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

// TestGoKitDriverOverHTTP: a Go-kit driver component speaks the Anthropic
// Messages wire format through wasi:http to the fake provider: streamed
// text relayed as chunks, a tool call streamed in pieces, usage, the stop
// reason; the provider sees the real key in x-api-key and never the
// placeholder, which the component alone holds.
func TestGoKitDriverOverHTTP(t *testing.T) {
	fp := fakeprovider.NewAnthropic()
	defer fp.Close()
	fp.Push(fakeprovider.Reply{Text: []string{"Let me ", "echo that."},
		ToolCalls:   []fakeprovider.ToolCall{{ID: "toolu_1", Name: "local/echo", Pieces: []string{`{"mess`, `age":"hi"}`}}},
		InputTokens: 12, OutputTokens: 7})
	d := httpDriver(t, fp.URL, "sk-real-key")
	var chunks []string
	resp, err := d.Call(context.Background(), toolTurnRequest(), func(text string) { chunks = append(chunks, text) })
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != "tool_call" || resp.Text() != "Let me echo that." || len(resp.ToolCalls()) != 1 {
		t.Fatalf("response %+v", resp)
	}
	if tc := resp.ToolCalls()[0]; tc.ID != "toolu_1" || tc.Name != "local/echo" || string(tc.Input) != `{"message":"hi"}` {
		t.Fatalf("tool call %+v (input %s)", tc, tc.Input)
	}
	if resp.Usage == nil || resp.Usage.InputTokens != 12 || resp.Usage.OutputTokens != 7 {
		t.Errorf("usage %+v", resp.Usage)
	}
	if strings.Join(chunks, "") != "Let me echo that." {
		t.Errorf("chunks %q", chunks)
	}
	reqs := fp.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("x-api-key") != "sk-real-key" {
		t.Fatalf("the provider saw %d requests, x-api-key %q", len(reqs), reqs[0].Header.Get("x-api-key"))
	}
	if strings.Contains(string(reqs[0].Body), wasm.DefaultKeyPlaceholder) || strings.Contains(string(reqs[0].Body), "sk-real-key") {
		t.Error("the body carries a key")
	}
	if body := reqs[0].JSON(); body["stream"] != true || body["model"] != "test-model" {
		t.Errorf("body %s", reqs[0].Body)
	}
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

// TestGoKitDriverStreamsLive is issue 10's live-streaming test: the fake
// provider sends the first text delta and then holds the rest of the
// stream until the driver's first murmur:text/chunks chunk has reached the
// host. With the body spooled whole (as for capsules) the chunk could only
// come after the stream's end, and the turn would end at its deadline; a
// driver run's Go-owned wasi:io hands the guest each event as it arrives.
func TestGoKitDriverStreamsLive(t *testing.T) {
	fp := fakeprovider.NewAnthropic()
	defer fp.Close()
	gate := make(chan struct{})
	// message_start, ping, content_block_start, the first text delta: then wait.
	fp.Push(fakeprovider.Reply{Text: []string{"Let me ", "echo that."},
		ToolCalls:   []fakeprovider.ToolCall{{ID: "toolu_1", Name: "local/echo", Pieces: []string{`{"mess`, `age":"hi"}`}}},
		InputTokens: 12, OutputTokens: 7, GateAfter: 4, Gate: gate})
	d := httpDriver(t, fp.URL, "sk-real-key")
	var chunks []string
	resp, err := d.Call(context.Background(), toolTurnRequest(), func(text string) {
		if len(chunks) == 0 {
			close(gate) // the first chunk is here while the provider still holds the rest
		}
		chunks = append(chunks, text)
	})
	if err != nil {
		t.Fatalf("the turn did not complete: %v (chunks before the end: %q)", err, chunks)
	}
	if len(chunks) == 0 || chunks[0] != "Let me " || strings.Join(chunks, "") != "Let me echo that." {
		t.Fatalf("chunks %q", chunks)
	}
	if resp.StopReason != "tool_call" || resp.Text() != "Let me echo that." || len(resp.ToolCalls()) != 1 {
		t.Fatalf("response %+v", resp)
	}
}

// BenchmarkDriverTurnSplit splits a Go-kit driver turn: "instantiate" is a
// fresh instance of the component as every turn makes one (instance and the
// Go kit's start, closed at once), "turn" the whole Call. The difference is
// the guest's own work, its HTTP exchange and its streaming. The -spool
// variants run the same on the capsules' path (RunDefault).
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
	lim := sandbox.Limits(manifest.EffLimits{DeadlineSeconds: 30, MemoryBytes: 256 << 20, TableElements: 50000, Instances: 10})
	b.Run("instantiate", func(b *testing.B) {
		for b.Loop() {
			inst, err := testEngine.Instantiate(context.Background(), comp, wasmhost.RunConfig{Kind: wasmhost.RunDriver, Limits: lim,
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
		kind wasmhost.RunKind
	}{{"turn", wasmhost.RunDriver}, {"turn-spool", wasmhost.RunDefault}} {
		// turn-spool: the same turn on the capsules' path (wasip2, the body
		// spooled whole), what a driver turn was before its wasi:io was Go's.
		b.Run(k.name, func(b *testing.B) {
			defer wasm.UseRunKind(k.kind)()
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

// TestGoKitDriverLiveBodyDeadline: a provider that sends the first text
// delta and then holds the stream: the driver relays the first chunk at once
// and then waits in its read of the body until the turn's deadline, which
// names that read (for a capsule the same drip waits in incoming-body.stream
// and reads nothing: internal/wit's TestGoKitHTTPBodyNotLive).
func TestGoKitDriverLiveBodyDeadline(t *testing.T) {
	fp := fakeprovider.NewAnthropic()
	defer fp.Close()
	fp.Push(fakeprovider.Reply{Text: []string{"Let me ", "echo that."}, HangAfter: 4})
	d := httpDriverDeadline(t, fp.URL, "sk-real-key", 2)
	var chunks []string
	_, err := d.Call(context.Background(), userRequest("hi"), func(text string) { chunks = append(chunks, text) })
	if len(chunks) != 1 || chunks[0] != "Let me " {
		t.Fatalf("chunks before the deadline %q (error %v)", chunks, err)
	}
	var de *wasmhost.DeadlineError
	if !errors.As(err, &de) || !de.Waiting || de.Call != "wasi:io/streams#[method]input-stream.blocking-read" {
		t.Fatalf("want a DeadlineError waiting on the body's read, got %#v (%v)", de, err)
	}
}

// TestGoKitDriverNoHostLeak: 1,000 streamed turns, each a fresh instance
// with its own exchange and Go body stream, leave no descriptors or
// goroutines behind.
func TestGoKitDriverNoHostLeak(t *testing.T) {
	fp := fakeprovider.NewAnthropic()
	defer fp.Close()
	d := httpDriver(t, fp.URL, "sk-real-key")
	reply := fakeprovider.Reply{Text: []string{"Let me ", "echo that."}, InputTokens: 12, OutputTokens: 7}
	fp.Push(reply)
	if _, err := d.Call(context.Background(), userRequest("hi"), nil); err != nil { // warm
		t.Fatal(err)
	}
	fds0, g0 := hostUse(t)
	for i := range 1000 {
		fp.Push(reply)
		if _, err := d.Call(context.Background(), userRequest("hi"), nil); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	var fds, g int
	for range 100 { // the server's side of each connection ends after the client's
		if fds, g = hostUse(t); fds <= fds0+2 && g <= g0+2 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("after 1,000 turns: %d fds (before %d), %d goroutines (before %d)", fds, fds0, g, g0)
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
	lim := sandbox.Limits(manifest.EffLimits{DeadlineSeconds: 30, MemoryBytes: 256 << 20, TableElements: 50000, Instances: 10})
	bi, ok, err := providers.New(driver.Config{Name: "murmur/driver-anthropic", Version: "0.1.0", Endpoint: fp.URL, APIKey: "sk-real-key", Settings: map[string]any{}})
	if err != nil || !ok {
		b.Fatal(ok, err)
	}
	turns := []struct {
		name string
		call func() error
	}{
		{"go", func() error {
			defer wasm.UseRunKind(wasmhost.RunDriver)()
			_, err := d.Call(context.Background(), req, nil)
			return err
		}},
		{"spool", func() error {
			defer wasm.UseRunKind(wasmhost.RunDefault)()
			_, err := d.Call(context.Background(), req, nil)
			return err
		}},
		{"builtin", func() error { _, err := bi.Call(context.Background(), req, nil); return err }},
		{"instantiate", func() error {
			// What every turn of "go" spends on its fresh instance.
			inst, err := testEngine.Instantiate(context.Background(), comp, wasmhost.RunConfig{Kind: wasmhost.RunDriver, Limits: lim,
				WASI: wasmhost.WASI{Args: []string{"driver"}, Env: d.Env()}})
			if err == nil {
				inst.Close()
			}
			return err
		}},
	}
	wall := make([]time.Duration, len(turns))
	cpu := make([]time.Duration, len(turns))
	for b.Loop() {
		for k, tr := range turns {
			fp.Push(reply)
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
	lim := sandbox.Limits(manifest.EffLimits{DeadlineSeconds: 30, MemoryBytes: 256 << 20, TableElements: 50000, Instances: 10})
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
				inst, err := testEngine.Instantiate(context.Background(), comp, wasmhost.RunConfig{Kind: wasmhost.RunDriver, Limits: lim,
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
