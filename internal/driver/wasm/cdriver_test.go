package wasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/builtin/providers"
	"github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/driver/wasm"
	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp/h1"
	"github.com/murmur-go/murmur/internal/wit"
)

// The freestanding C driver (testdata/components/driver-anthropic-c): the
// Go-kit driver's behaviour without a language runtime.
const cDriverWasm = "../../../testdata/components/driver-anthropic-c/driver-anthropic-c.wasm"

// driverComponents are the two driver components that speak the Anthropic
// Messages wire format over wasi:http.
var driverComponents = []struct{ name, path string }{
	{"go-kit", httpDriverWasm},
	{"c", cDriverWasm},
}

func componentDriver(t testing.TB, path, endpoint, key string, seconds int) *wasm.Driver {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lim := grant.Limits(manifest.EffLimits{DeadlineSeconds: seconds, MemoryBytes: 256 << 20, TableElements: 50000, Instances: 10})
	d, err := wasm.New(wasm.Config{Engine: testEngine, Name: "local/driver-anthropic", Version: "0.1.0", Component: src,
		Limits: lim, Model: "claude-test", Endpoint: endpoint, APIKey: key, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func toolReply() fakeprovider.Reply {
	return fakeprovider.Reply{Text: []string{"Let me ", "echo that."},
		ToolCalls:   []fakeprovider.ToolCall{{ID: "toolu_1", Name: "local/echo", Pieces: []string{`{"mess`, `age":"hi"}`}}},
		InputTokens: 12, OutputTokens: 7}
}

// TestDriverComponentsOverHTTP: both driver components, one turn against the
// fake provider: text relayed as chunks, a tool call streamed in pieces and
// reassembled, usage, the stop reason; the provider sees the real key in
// x-api-key, the body carries neither it nor the placeholder.
func TestDriverComponentsOverHTTP(t *testing.T) {
	for _, dc := range driverComponents {
		t.Run(dc.name, func(t *testing.T) {
			fp := fakeprovider.NewAnthropic()
			defer fp.Close()
			fp.Push(toolReply())
			d := componentDriver(t, dc.path, fp.URL, "sk-real-key", 30)
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
			if !slices.Equal(chunks, []string{"Let me ", "echo that."}) {
				t.Errorf("chunks %q", chunks)
			}
			reqs := fp.Requests()
			if len(reqs) != 1 {
				t.Fatalf("the provider saw %d requests", len(reqs))
			}
			q := reqs[0]
			if q.Header.Get("x-api-key") != "sk-real-key" || q.Header.Get("anthropic-version") != "2023-06-01" ||
				q.Header.Get("accept") != "text/event-stream" || q.Header.Get("content-type") != "application/json" {
				t.Errorf("headers %v", q.Header)
			}
			if strings.Contains(string(q.Body), wasm.DefaultKeyPlaceholder) || strings.Contains(string(q.Body), "sk-real-key") {
				t.Error("the body carries a key")
			}
			if body := q.JSON(); body["stream"] != true || body["model"] != "test-model" || body["system"] != "be brief" || body["max_tokens"] != 1024.0 {
				t.Errorf("body %s", q.Body)
			}
		})
	}
}

// TestCDriverWireBodyMatchesGoKit: for a request with every kind of block
// (text, an assistant tool call, a tool result, escapes and non-ASCII text,
// a nested parameters schema), the C driver sends the provider the same
// Messages body as the Go-kit driver.
func TestCDriverWireBodyMatchesGoKit(t *testing.T) {
	req := &driver.Request{
		Model: "test-model", MaxTokens: 2048, System: "be \"brief\"\n\tand kind — ünïcode \u2028 <b>&",
		Messages: []driver.Message{
			{Role: driver.RoleUser, Content: []driver.Block{driver.TextBlock("echo \\ \"hi\" 😀 \x01")}},
			{Role: driver.RoleAssistant, Content: []driver.Block{driver.TextBlock("Let me."),
				{Type: "tool_call", ID: "toolu_1", Name: "local/echo", Input: json.RawMessage(`{"message": "hi", "n": [1, 2.5e3, {"x": null}]}`)}}},
			{Role: driver.RoleTool, ToolCallID: "toolu_1", Content: []driver.Block{driver.TextBlock("hi")}},
		},
		Tools: []driver.Tool{
			{Name: "local/echo", Description: "Echoes.", Parameters: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)},
			{Name: "local/none", Description: ""},
		},
	}
	bodies := map[string]any{}
	for _, dc := range driverComponents {
		fp := fakeprovider.NewAnthropic()
		fp.Push(fakeprovider.Reply{Text: []string{"ok"}})
		d := componentDriver(t, dc.path, fp.URL, "sk-real-key", 30)
		if _, err := d.Call(context.Background(), req, nil); err != nil {
			t.Fatalf("%s: %v", dc.name, err)
		}
		reqs := fp.Requests()
		fp.Close()
		if len(reqs) != 1 {
			t.Fatalf("%s: %d requests", dc.name, len(reqs))
		}
		bodies[dc.name] = reqs[0].JSON()
	}
	if !reflect.DeepEqual(bodies["go-kit"], bodies["c"]) {
		g, _ := json.Marshal(bodies["go-kit"])
		c, _ := json.Marshal(bodies["c"])
		t.Fatalf("bodies differ:\ngo-kit %s\nc      %s", g, c)
	}
}

// TestDriverComponentsStreamLive: issue 10's live-streaming test for both
// components: the provider holds the rest of
// the stream until the first chunk has reached the host.
func TestDriverComponentsStreamLive(t *testing.T) {
	for _, dc := range driverComponents {
		t.Run(dc.name, func(t *testing.T) {
			fp := fakeprovider.NewAnthropic()
			defer fp.Close()
			gate := make(chan struct{})
			rep := toolReply()
			rep.GateAfter, rep.Gate = 4, gate
			fp.Push(rep)
			d := componentDriver(t, dc.path, fp.URL, "sk-real-key", 30)
			var chunks []string
			resp, err := d.Call(context.Background(), toolTurnRequest(), func(text string) {
				if len(chunks) == 0 {
					close(gate)
				}
				chunks = append(chunks, text)
			})
			if err != nil {
				t.Fatalf("the turn did not complete: %v (chunks before the end: %q)", err, chunks)
			}
			if len(chunks) == 0 || chunks[0] != "Let me " || strings.Join(chunks, "") != "Let me echo that." {
				t.Fatalf("chunks %q", chunks)
			}
			if resp.StopReason != "tool_call" || len(resp.ToolCalls()) != 1 {
				t.Fatalf("response %+v", resp)
			}
		})
	}
}

// TestDriverComponentsFail: a provider error status, an in-stream error
// event, an event that is not JSON and a stream cut mid-event all end the
// turn as the component's status failed, with the reason.
func TestDriverComponentsFail(t *testing.T) {
	cases := []struct {
		name  string
		reply fakeprovider.Reply
		want  string
	}{
		{"status", fakeprovider.Reply{Status: 429, Message: "slow down"}, "provider answered 429"},
		{"stream-error", fakeprovider.Reply{Text: []string{"a"}, StreamError: "Overloaded"}, "provider stream error: Overloaded"},
		{"malformed", fakeprovider.Reply{Malformed: true}, "a stream event is not JSON"},
		{"cut", fakeprovider.Reply{Text: []string{"Let me ", "echo that."}, CutAfter: 4}, ""},
	}
	for _, dc := range driverComponents {
		fp := fakeprovider.NewAnthropic()
		defer fp.Close()
		d := componentDriver(t, dc.path, fp.URL, "sk-real-key", 30)
		for _, tc := range cases {
			t.Run(dc.name+"/"+tc.name, func(t *testing.T) {
				fp.Push(tc.reply)
				_, err := d.Call(context.Background(), userRequest("hi"), nil)
				t.Log(err)
				var de *driver.Error
				if !errors.As(err, &de) || de.Kind != driver.KindProvider || !strings.Contains(de.Message, "status failed: ") {
					t.Fatalf("want the component's status failed, got %v", err)
				}
				if !strings.Contains(de.Message, tc.want) {
					t.Fatalf("message %q, want it to say %q", de.Message, tc.want)
				}
				if tc.name == "status" && !strings.Contains(de.Message, "slow down") {
					t.Errorf("message %q does not carry the provider's body", de.Message)
				}
			})
		}
	}
}

// sseServer answers every request with 200 and these SSE lines, each
// written and flushed on its own.
func sseServer(t *testing.T, lines ...string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/event-stream")
		w.WriteHeader(200)
		for _, l := range lines {
			fmt.Fprint(w, l)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestDriverComponentsEventLayout: events whose fields come in another
// order, with unknown fields and nested values, odd whitespace, CRLF line
// ends, and text and tool input written with escapes (\uXXXX, a surrogate
// pair, quotes, newlines) read the same in both components.
func TestDriverComponentsEventLayout(t *testing.T) {
	lines := []string{
		"event: message_start\r\n",
		`data: {"message":{"extra":{"a":[1,{"b":null}],"c":"}"},"usage":{"output_tokens":1,"input_tokens":21},"id":"msg_1"},"type":"message_start"}` + "\r\n\r\n",
		"data: {\"type\": \"ping\"}\n\n",
		`data: { "index" : 0 , "content_block" : { "text" : "" , "type" : "text" } , "type" : "content_block_start" }` + "\n\n",
		`data: {"delta":{"text":"caf\u00e9 \ud83d\ude00 ","type":"text_delta"},"index":0,"type":"content_block_delta"}` + "\n\n",
		`data: {"delta":{"text":"\"quoted\"\n\\ \u0041\/","type":"text_delta"},"type":"content_block_delta","index":0}` + "\n\n",
		`data: {"index":0,"type":"content_block_stop"}` + "\n\n",
		`data: {"content_block":{"input":{},"name":"local/echo","id":"toolu_9","type":"tool_use"},"type":"content_block_start","index":1}` + "\n\n",
		`data: {"delta":{"partial_json":"{\"message\": \"\\u00e9","type":"input_json_delta"},"type":"content_block_delta","index":1}` + "\n\n",
		`data: {"delta":{"partial_json":"\\\"x\"}","type":"input_json_delta"},"type":"content_block_delta","index":1}` + "\n\n",
		`data: {"type":"content_block_stop","index":1}` + "\n\n",
		`data: {"usage":{"output_tokens":33},"delta":{"stop_sequence":null,"stop_reason":"tool_use"},"type":"message_delta"}` + "\n\n",
		`data: {"type":"message_stop"}` + "\n\n",
	}
	for _, dc := range driverComponents {
		t.Run(dc.name, func(t *testing.T) {
			d := componentDriver(t, dc.path, sseServer(t, lines...), "sk-real-key", 30)
			var chunks []string
			resp, err := d.Call(context.Background(), userRequest("hi"), func(text string) { chunks = append(chunks, text) })
			if err != nil {
				t.Fatal(err)
			}
			wantText := "café 😀 \"quoted\"\n\\ A/"
			if !slices.Equal(chunks, []string{"café 😀 ", "\"quoted\"\n\\ A/"}) || resp.Text() != wantText {
				t.Fatalf("chunks %q, text %q", chunks, resp.Text())
			}
			tcs := resp.ToolCalls()
			if resp.StopReason != "tool_call" || len(tcs) != 1 || tcs[0].ID != "toolu_9" || tcs[0].Name != "local/echo" {
				t.Fatalf("response %+v", resp)
			}
			var in map[string]string
			if err := json.Unmarshal(tcs[0].Input, &in); err != nil || in["message"] != "é\"x" {
				t.Fatalf("tool input %s (%v)", tcs[0].Input, err)
			}
			if resp.Usage == nil || resp.Usage.InputTokens != 21 || resp.Usage.OutputTokens != 33 {
				t.Errorf("usage %+v", resp.Usage)
			}
		})
	}
}

// TestCDriverBadStream: streams the C driver refuses with a reason rather
// than answering a partial response (the Go-kit driver, reading with
// encoding/json and bufio.Scanner, accepts some of them).
func TestCDriverBadStream(t *testing.T) {
	start := `data: {"type":"message_start","message":{"usage":{"input_tokens":1}}}` + "\n\n"
	block := `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n"
	cases := []struct {
		name  string
		lines []string
		want  string
	}{
		{"no message_stop", []string{start, block, `data: {"type":"content_block_stop","index":0}` + "\n\n"}, "ended before message_stop"},
		{"cut mid-event", []string{start, block, `data: {"type":"content_block_delta","delta":{"type":"text_delta","text":"ab`}, "a stream event is not JSON"},
		{"bad escape", []string{start, block, `data: {"type":"content_block_delta","delta":{"type":"text_delta","text":"\x"}}` + "\n\n"}, "bad escape"},
		{"short unicode escape", []string{start, `data: {"type":"ping","x":"\u12"}` + "\n\n"}, "bad \\u escape"},
		{"trailing data", []string{start, `data: {"type":"ping"} {}` + "\n\n"}, "data after the event"},
		{"deep nesting", []string{start, `data: {"type":"ping","x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "}\n\n"}, "nested too deeply"},
		{"fractional tokens", []string{`data: {"type":"message_start","message":{"usage":{"input_tokens":1.5}}}` + "\n\n"}, "not an integer"},
		{"tool input not JSON", []string{start,
			`data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"x"}}` + "\n\n",
			`data: {"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}` + "\n\n",
			`data: {"type":"content_block_stop","index":0}` + "\n\n"}, "the input of a tool call is not JSON: toolu_1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := componentDriver(t, cDriverWasm, sseServer(t, tc.lines...), "sk-real-key", 30)
			_, err := d.Call(context.Background(), userRequest("hi"), nil)
			var de *driver.Error
			if !errors.As(err, &de) || de.Kind != driver.KindProvider || !strings.Contains(de.Message, "status failed: ") || !strings.Contains(de.Message, tc.want) {
				t.Fatalf("want status failed saying %q, got %v", tc.want, err)
			}
		})
	}
}

// TestCDriverBadRequest: tool-input.data that is no request (the host never
// sends one, a component must not trap on it) answers failed with the reason.
func TestCDriverBadRequest(t *testing.T) {
	src, err := os.ReadFile(cDriverWasm)
	if err != nil {
		t.Fatal(err)
	}
	comp, err := testEngine.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	defer comp.Close()
	str := func(s string) *string { return &s }
	cases := []struct {
		name string
		data *string
		want string
	}{
		{"none", nil, "no request"},
		{"empty", str(""), "the request is not JSON"},
		{"not an object", str(`[1,2]`), "the request is not JSON: unexpected character"},
		{"truncated", str(`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi`), "unterminated string"},
		{"trailing", str(`{"model":"m"} x`), "data after the request"},
		{"bad max_tokens", str(`{"max_tokens":"many"}`), "bad number"},
		{"huge max_tokens", str(`{"max_tokens":123456789012345678901234567890}`), "number out of range"},
		// A huge number where no number is read is skipped: the parse gets
		// through, to the endpoint this instance lacks.
		{"huge number skipped", str(`{"x":123456789012345678901234567890,"tools":[{"parameters":{"maximum":1e999,"m":-123456789012345678901234567890}}]}`), "MURMUR_INFERENCE_ENDPOINT is not an http(s) URL"},
		{"control character", str("{\"system\":\"a\x01b\"}"), "control character in a string"},
		{"deep parameters", str(`{"tools":[{"parameters":` + strings.Repeat(`{"a":`, 1000) + "1" + strings.Repeat("}", 1000) + "}]}"), "nested too deeply"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := wasmhost.NewHost()
			wit.GrantTextChunks(h, func(context.Context, string, bool) error { return nil })
			wit.GrantHTTP(h, nil, slog.New(slog.DiscardHandler))
			lim := grant.Limits(manifest.EffLimits{DeadlineSeconds: 10, MemoryBytes: 64 << 20, TableElements: 1000, Instances: 10})
			inst, err := testEngine.Instantiate(context.Background(), comp, wasmhost.RunConfig{GoIO: true, Limits: lim, Host: h})
			if err != nil {
				t.Fatal(err)
			}
			defer inst.Close()
			res, err := wit.CallToolRun(context.Background(), inst, wit.ToolInput{Data: tc.data})
			if err != nil {
				t.Fatalf("the call did not return: %v", err)
			}
			if res.Status != wit.StatusFailed || res.Summary == nil || !strings.Contains(*res.Summary, tc.want) || res.Data != nil {
				t.Fatalf("result %+v (summary %v), want failed saying %q", res, deref(res.Summary), tc.want)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<none>"
	}
	return *s
}

// TestCDriverImports: the C component imports what a published driver
// does and nothing else: wasi:http@0.2.12 (with the wasi:io it names),
// murmur:text/chunks@0.1.0 and wasi:cli/environment for its variables.
func TestCDriverImports(t *testing.T) {
	src, err := os.ReadFile(cDriverWasm)
	if err != nil {
		t.Fatal(err)
	}
	comp, err := testEngine.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	defer comp.Close()
	var got []string
	for _, it := range comp.Imports() {
		got = append(got, it.Name)
	}
	slices.Sort(got)
	want := []string{"murmur:text/chunks@0.1.0", "wasi:cli/environment@0.2.12", "wasi:http/outgoing-handler@0.2.12",
		"wasi:http/types@0.2.12", "wasi:io/error@0.2.12", "wasi:io/poll@0.2.12", "wasi:io/streams@0.2.12"}
	if !slices.Equal(got, want) {
		t.Fatalf("imports %q, want %q", got, want)
	}
	var exports []string
	for _, it := range comp.Exports() {
		exports = append(exports, it.Name)
	}
	if !slices.Equal(exports, []string{"murmur:tool/run@0.1.0"}) {
		t.Fatalf("exports %q", exports)
	}
}

// BenchmarkDriverTurnCGoBuiltin runs, in every iteration, the C driver's
// turn, the Go-kit driver's turn and the built-in driver's turn against the
// same fake provider, plus a bare instantiation of each component (what a
// turn spends on its fresh instance), so all see the same machine load; it
// reports each one's wall time and process CPU time per turn (CPU time
// includes the in-process fake provider's share, the same for all).
func BenchmarkDriverTurnCGoBuiltin(b *testing.B) {
	fp := fakeprovider.NewAnthropic()
	defer fp.Close()
	cd := componentDriver(b, cDriverWasm, fp.URL, "sk-real-key", 30)
	gd := componentDriver(b, httpDriverWasm, fp.URL, "sk-real-key", 30)
	bi, ok, err := providers.New(driver.Config{Name: "murmur/driver-anthropic", Version: "0.1.0", Endpoint: fp.URL, APIKey: "sk-real-key", Settings: map[string]any{}})
	if err != nil || !ok {
		b.Fatal(ok, err)
	}
	lim := grant.Limits(manifest.EffLimits{DeadlineSeconds: 30, MemoryBytes: 256 << 20, TableElements: 50000, Instances: 10})
	instantiate := func(path string, d *wasm.Driver) func() error {
		src, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		comp, err := testEngine.Compile(src)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { comp.Close() })
		return func() error {
			h := wasmhost.NewHost()
			wit.GrantTextChunks(h, func(context.Context, string, bool) error { return nil })
			wit.GrantHTTP(h, nil, slog.New(slog.DiscardHandler))
			inst, err := testEngine.Instantiate(context.Background(), comp, wasmhost.RunConfig{GoIO: true, Limits: lim,
				WASI: wasmhost.WASI{Args: []string{"driver"}, Env: d.Env()}, Host: h})
			if err == nil {
				inst.Close()
			}
			return err
		}
	}
	req := toolTurnRequest()
	// exchange is the turn's HTTP exchange alone, in Go: the same POST and
	// the whole SSE body read, on a kept-alive connection (shared, as the
	// built-in driver's SDK client does) or on a new one (fresh, as the
	// host's wasi:http has: a transport per run).
	body, _ := json.Marshal(map[string]any{"model": "test-model", "max_tokens": 1024, "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "echo hi"}}}}})
	shared := &http.Transport{}
	defer shared.CloseIdleConnections()
	exchange := func(fresh bool) func() error {
		return func() error {
			tr := shared
			if fresh {
				tr = &http.Transport{}
				defer tr.CloseIdleConnections()
			}
			hr, _ := http.NewRequest("POST", fp.URL+"/v1/messages", strings.NewReader(string(body)))
			hr.Header.Set("content-type", "application/json")
			hr.Header.Set("x-api-key", "sk-real-key")
			hr.Header.Set("anthropic-version", "2023-06-01")
			resp, err := tr.RoundTrip(hr)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			_, err = io.Copy(io.Discard, resp.Body)
			return err
		}
	}
	alternate(b, func() { fp.Push(toolReply()) }, []altTurn{
		{"c", true, func() error { _, err := cd.Call(context.Background(), req, nil); return err }},
		{"gokit", true, func() error { _, err := gd.Call(context.Background(), req, nil); return err }},
		{"builtin", true, func() error { _, err := bi.Call(context.Background(), req, nil); return err }},
		{"instantiate-c", false, instantiate(cDriverWasm, cd)},
		{"instantiate-gokit", false, instantiate(httpDriverWasm, gd)},
		{"exchange-shared", true, exchange(false)},
		{"exchange-fresh", true, exchange(true)},
	})
}

// TestDriverComponentsLiveBodyDeadline: a provider that sends the first
// text delta and then holds the stream: each driver relays that chunk at
// once and then waits on the body until the turn's deadline, which names
// that wait (the Go kit waits in blocking-read; the C driver in
// pollable.block on the stream's pollable, which the host names after the
// stream's read). For a capsule the same drip waits in incoming-body.stream
// and reads nothing: internal/wit's TestGoKitHTTPBodyNotLive.
func TestDriverComponentsLiveBodyDeadline(t *testing.T) {
	for _, dc := range driverComponents {
		t.Run(dc.name, func(t *testing.T) {
			fp := fakeprovider.NewAnthropic()
			defer fp.Close()
			fp.Push(fakeprovider.Reply{Text: []string{"Let me ", "echo that."}, HangAfter: 4})
			d := componentDriver(t, dc.path, fp.URL, "sk-real-key", 2)
			var chunks []string
			_, err := d.Call(context.Background(), userRequest("hi"), func(text string) { chunks = append(chunks, text) })
			if len(chunks) != 1 || chunks[0] != "Let me " {
				t.Fatalf("chunks before the deadline %q (error %v)", chunks, err)
			}
			var de *wasmhost.DeadlineError
			if !errors.As(err, &de) || !de.Waiting ||
				(de.Call != "wasi:io/poll#[method]pollable.block" && de.Call != "wasi:io/streams#[method]input-stream.blocking-read") {
				t.Fatalf("want a DeadlineError waiting on the body, got %#v (%v)", de, err)
			}
		})
	}
}

// TestDriverComponentsNoHostLeak: 1,000 streamed turns of each driver, each
// a fresh instance with its own exchange and body stream, leave no
// descriptors or goroutines behind (idle kept connections aside: they are
// the pool's, closed first).
func TestDriverComponentsNoHostLeak(t *testing.T) {
	for _, dc := range driverComponents {
		t.Run(dc.name, func(t *testing.T) {
			fp := fakeprovider.NewAnthropic()
			defer fp.Close()
			d := componentDriver(t, dc.path, fp.URL, "sk-real-key", 30)
			fp.Push(toolReply())
			if _, err := d.Call(context.Background(), toolTurnRequest(), nil); err != nil { // warm
				t.Fatal(err)
			}
			h1.DefaultPool.CloseIdle()
			fds0, g0 := hostUse(t)
			for i := range 1000 {
				fp.Push(toolReply())
				if _, err := d.Call(context.Background(), toolTurnRequest(), nil); err != nil {
					t.Fatalf("turn %d: %v", i, err)
				}
			}
			var fds, g int
			for range 100 { // the server's side of each connection ends after the client's
				h1.DefaultPool.CloseIdle()
				if fds, g = hostUse(t); fds <= fds0+2 && g <= g0+2 {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Fatalf("after 1,000 turns: %d fds (before %d), %d goroutines (before %d)", fds, fds0, g, g0)
		})
	}
}

// FuzzCDriverRequest: whatever tool-input.data holds, the C driver returns
// (passed or failed), never traps. The policy denies every request, so a
// request that parses ends at wasi:http as failed too.
func FuzzCDriverRequest(f *testing.F) {
	for _, s := range []string{`{}`, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"hi \u00e9"}]}]}`,
		`{"messages":[{"role":"tool","tool_call_id":"t","content":[{"type":"text","text":"x"}]}],"tools":[{"name":"a","parameters":{"type":"object"}}]}`,
		`{"messages":[{"role":"assistant","content":[{"type":"tool_call","id":"i","name":"n","input":{"a":[1,2,{"b":null}]}}]}]}`,
		`{"system":"\ud83d\ude00\ud800x\\"}`, `[`, `"`, `{"a":`} {
		f.Add(s)
	}
	src, err := os.ReadFile(cDriverWasm)
	if err != nil {
		f.Fatal(err)
	}
	comp, err := testEngine.Compile(src)
	if err != nil {
		f.Fatal(err)
	}
	defer comp.Close()
	lim := grant.Limits(manifest.EffLimits{DeadlineSeconds: 10, MemoryBytes: 64 << 20, TableElements: 1000, Instances: 10})
	f.Fuzz(func(t *testing.T, data string) {
		if !utf8.ValidString(data) {
			t.Skip("a WIT string is UTF-8: the host cannot pass this")
		}
		h := wasmhost.NewHost()
		wit.GrantTextChunks(h, func(context.Context, string, bool) error { return nil })
		wit.GrantHTTP(h, nil, slog.New(slog.DiscardHandler))
		inst, err := testEngine.Instantiate(context.Background(), comp, wasmhost.RunConfig{GoIO: true, Limits: lim, Host: h,
			WASI: wasmhost.WASI{Env: map[string]string{"MURMUR_INFERENCE_ENDPOINT": "http://127.0.0.1:9"}}})
		if err != nil {
			t.Fatal(err)
		}
		defer inst.Close()
		res, err := wit.CallToolRun(context.Background(), inst, wit.ToolInput{Data: &data})
		if err != nil {
			t.Fatalf("the call did not return: %v", err)
		}
		if res.Status != wit.StatusFailed || res.Summary == nil || *res.Summary == "" {
			t.Fatalf("result %+v, want failed with a reason", res)
		}
	})
}

// FuzzCDriverStream: whatever the provider streams, the C driver answers
// (passed with a response the host accepts, or failed), never traps.
func FuzzCDriverStream(f *testing.F) {
	for _, s := range []string{
		"data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\ndata: {\"type\":\"content_block_start\",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"h\\u00e9\"}}\n\ndata: {\"type\":\"content_block_stop\"}\n\ndata: {\"type\":\"message_stop\"}\n\n",
		"data: {\"type\":\"content_block_start\",\"content_block\":{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"b\"}}\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\ndata: {\"type\":\"content_block_stop\"}\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":2}}\ndata: {\"type\":\"message_stop\"}\n",
		"data: {\"type\":\"error\",\"error\":{\"message\":\"x\"}}\n", "data: ", "data: {\r\n", "\n\n\n",
	} {
		f.Add(s)
	}
	var body atomic.Pointer[string]
	body.Store(new(string))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		fmt.Fprint(w, *body.Load())
	}))
	defer srv.Close()
	d := componentDriver(f, cDriverWasm, srv.URL, "sk-real-key", 10)
	f.Fuzz(func(t *testing.T, stream string) {
		body.Store(&stream)
		_, err := d.Call(context.Background(), userRequest("hi"), nil)
		var de *driver.Error
		if err != nil && (!errors.As(err, &de) || de.Kind != driver.KindProvider || !strings.Contains(de.Message, "status failed: ")) {
			t.Fatalf("want a response or status failed, got %v", err)
		}
	})
}

// BenchmarkCDriverTurn is the C driver's turn alone, for a CPU profile of
// the host's side of it (go test -bench CDriverTurn -cpuprofile).
func BenchmarkCDriverTurn(b *testing.B) {
	fp := fakeprovider.NewAnthropic()
	defer fp.Close()
	d := componentDriver(b, cDriverWasm, fp.URL, "sk-real-key", 30)
	req := toolTurnRequest()
	for b.Loop() {
		fp.Push(toolReply())
		if _, err := d.Call(context.Background(), req, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCDriverTurnProfile times the host calls of a C driver turn from
// inside the guest: MURMUR_CDRIVER_PROFILE names a profiling build of
// driver.c (-DMURMUR_PROFILE, world driver-c-profile; docs/benchmarks.md),
// whose last chunk holds, per kind of host call, the nanoseconds spent in
// it and the number of calls. Per turn it reports each kind's ns and calls,
// the guest's whole run ("total"), and the turn's wall time ("turn"):
// turn - total is the host's work outside the guest's run (instantiation,
// lifting and lowering the call, closing the instance).
func BenchmarkCDriverTurnProfile(b *testing.B) {
	path := os.Getenv("MURMUR_CDRIVER_PROFILE")
	if path == "" {
		b.Skip("MURMUR_CDRIVER_PROFILE names no profiling build of the C driver")
	}
	fp := fakeprovider.NewAnthropic()
	defer fp.Close()
	d := componentDriver(b, path, fp.URL, "sk-real-key", 30)
	req := toolTurnRequest()
	ns, calls := map[string]float64{}, map[string]float64{}
	var kinds []string
	var wall time.Duration
	for b.Loop() {
		fp.Push(toolReply())
		t0 := time.Now()
		_, err := d.Call(context.Background(), req, func(text string) {
			rest, ok := strings.CutPrefix(text, "PROFILE ")
			if !ok {
				return
			}
			for _, f := range strings.Fields(rest) {
				var k string
				var n, c float64
				name, val, _ := strings.Cut(f, "=")
				k = name
				fmt.Sscanf(val, "%g/%g", &n, &c)
				if _, seen := ns[k]; !seen {
					kinds = append(kinds, k)
				}
				ns[k] += n
				calls[k] += c
			}
		})
		wall += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N)
	for _, k := range kinds {
		b.ReportMetric(ns[k]/n, "ns/"+k)
		if k != "total" {
			b.ReportMetric(calls[k]/n, "calls/"+k)
		}
	}
	b.ReportMetric(float64(wall.Nanoseconds())/n, "ns/turn")
}

// BenchmarkCDriverInstantiate is a bare instance of the C driver as every
// turn makes one (its host's imports granted, the instance made and closed,
// nothing called): "host" builds the turn's wasmhost.Host as Driver.Call
// does, "instance" reuses one Host.
func BenchmarkCDriverInstantiate(b *testing.B) {
	src, err := os.ReadFile(cDriverWasm)
	if err != nil {
		b.Fatal(err)
	}
	comp, err := testEngine.Compile(src)
	if err != nil {
		b.Fatal(err)
	}
	defer comp.Close()
	lim := grant.Limits(manifest.EffLimits{DeadlineSeconds: 30, MemoryBytes: 256 << 20, TableElements: 50000, Instances: 10})
	newHost := func() *wasmhost.Host {
		h := wasmhost.NewHost()
		wit.GrantTextChunks(h, func(context.Context, string, bool) error { return nil })
		wit.GrantHTTP(h, nil, slog.New(slog.DiscardHandler))
		return h
	}
	env := map[string]string{"MURMUR_INFERENCE_ENDPOINT": "http://127.0.0.1:9", "MURMUR_INFERENCE_API_KEY": "x"}
	shared := newHost()
	for _, k := range []struct {
		name string
		host func() *wasmhost.Host
	}{{"host", newHost}, {"instance", func() *wasmhost.Host { return shared }}} {
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				inst, err := testEngine.Instantiate(context.Background(), comp, wasmhost.RunConfig{GoIO: true, Limits: lim,
					WASI: wasmhost.WASI{Args: []string{"driver"}, Env: env}, Host: k.host()})
				if err != nil {
					b.Fatal(err)
				}
				inst.Close()
			}
		})
	}
}
