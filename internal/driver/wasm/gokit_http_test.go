package wasm_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/builtin/providers"
	"github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/driver/wasm"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/sandbox"
)

const httpDriverWasm = "../../../testdata/components/driver-anthropic-http/driver-anthropic-http.wasm"

func httpDriver(t testing.TB, endpoint, key string) *wasm.Driver {
	t.Helper()
	src, err := os.ReadFile(httpDriverWasm)
	if err != nil {
		t.Fatal(err)
	}
	// A Go-kit component with net/http needs more table and memory than the
	// WAT fixtures' limits.
	lim := sandbox.Limits(manifest.EffLimits{DeadlineSeconds: 30, MemoryBytes: 256 << 20, TableElements: 50000, Instances: 10})
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
