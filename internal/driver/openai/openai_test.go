package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/driver"
	fp "github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/driver/openai"
)

const key = "sk-openai-configured-key"

func newDriver(t *testing.T, endpoint string) *openai.Driver {
	t.Helper()
	d, err := openai.New(driver.Config{
		Name: openai.Name, Version: "0.19.0", Endpoint: endpoint,
		APIKey: key, KeyVariable: "OPENAI_API_KEY",
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func request() *driver.Request {
	return &driver.Request{
		Model: "claude-test", MaxTokens: 256, System: "be brief",
		Messages: []driver.Message{{Role: driver.RoleUser, Content: []driver.Block{driver.TextBlock("hi")}}},
	}
}

func call(t *testing.T, d driver.Driver, req *driver.Request, timeout time.Duration) (*driver.Response, []string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var chunks []string
	resp, err := d.Call(ctx, req, func(s string) { chunks = append(chunks, s) })
	return resp, chunks, err
}

func TestCallAnswers(t *testing.T) {
	tests := []struct {
		name      string
		reply     fp.Reply
		stop      string
		text      string
		chunks    []string
		toolCalls []driver.Block
		usage     driver.Usage
	}{
		{
			name:   "text streamed in order",
			reply:  fp.Reply{Text: []string{"Hel", "lo, ", "world"}, InputTokens: 12, OutputTokens: 5},
			stop:   driver.StopEndTurn,
			text:   "Hello, world",
			chunks: []string{"Hel", "lo, ", "world"},
			usage:  driver.Usage{InputTokens: 12, OutputTokens: 5},
		},
		{
			name: "text then two tool calls in pieces",
			reply: fp.Reply{
				Text: []string{"Let me look."},
				ToolCalls: []fp.ToolCall{
					{ID: "call_1", Name: "echo", Pieces: []string{`{"mes`, `sage": "a`, `b"}`}},
					{ID: "call_2", Name: "murmur/echo", Pieces: []string{`{}`}},
				},
				InputTokens: 30, OutputTokens: 20,
			},
			stop:   driver.StopToolCall,
			text:   "Let me look.",
			chunks: []string{"Let me look."},
			toolCalls: []driver.Block{
				driver.ToolCallBlock("call_1", "echo", json.RawMessage(`{"message": "ab"}`)),
				driver.ToolCallBlock("call_2", "murmur/echo", json.RawMessage(`{}`)),
			},
			usage: driver.Usage{InputTokens: 30, OutputTokens: 20},
		},
		{
			name:  "tool call with no input pieces",
			reply: fp.Reply{ToolCalls: []fp.ToolCall{{ID: "call_3", Name: "now"}}},
			stop:  driver.StopToolCall,
			toolCalls: []driver.Block{
				driver.ToolCallBlock("call_3", "now", json.RawMessage(`{}`)),
			},
		},
		{
			name:   "max_tokens",
			reply:  fp.Reply{Text: []string{"cut"}, Stop: "max_tokens", OutputTokens: 256},
			stop:   driver.StopMaxTokens,
			text:   "cut",
			chunks: []string{"cut"},
			usage:  driver.Usage{OutputTokens: 256},
		},
		{
			name:   "content_filter ends the turn",
			reply:  fp.Reply{Text: []string{"x"}, RawStop: "content_filter"},
			stop:   driver.StopEndTurn,
			text:   "x",
			chunks: []string{"x"},
		},
		{
			name:      "a tool call ended with stop is still a tool call",
			reply:     fp.Reply{ToolCalls: []fp.ToolCall{{ID: "call_9", Name: "echo", Pieces: []string{`{"a"`, `:1}`}}}, RawStop: "stop"},
			stop:      driver.StopToolCall,
			toolCalls: []driver.Block{driver.ToolCallBlock("call_9", "echo", json.RawMessage(`{"a":1}`))},
		},
		{
			name:   "no usage chunk reads as zero usage",
			reply:  fp.Reply{Text: []string{"quiet"}, NoUsage: true},
			stop:   driver.StopEndTurn,
			text:   "quiet",
			chunks: []string{"quiet"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fp.NewOpenAI()
			defer srv.Close()
			srv.Push(tt.reply)
			resp, chunks, err := call(t, newDriver(t, srv.URL), request(), 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StopReason != tt.stop {
				t.Errorf("stop_reason = %q, want %q", resp.StopReason, tt.stop)
			}
			if got := resp.Text(); got != tt.text {
				t.Errorf("text = %q, want %q", got, tt.text)
			}
			if strings.Join(chunks, "|") != strings.Join(tt.chunks, "|") {
				t.Errorf("chunks = %q, want %q", chunks, tt.chunks)
			}
			calls := resp.ToolCalls()
			if len(calls) != len(tt.toolCalls) {
				t.Fatalf("tool calls = %+v, want %+v", calls, tt.toolCalls)
			}
			for i, c := range calls {
				w := tt.toolCalls[i]
				if c.ID != w.ID || c.Name != w.Name || !sameJSON(c.Input, w.Input) {
					t.Errorf("tool call %d = %s %s %s, want %s %s %s", i, c.ID, c.Name, c.Input, w.ID, w.Name, w.Input)
				}
			}
			if resp.Usage == nil || *resp.Usage != tt.usage {
				t.Errorf("usage = %+v, want %+v", resp.Usage, tt.usage)
			}
			if err := resp.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func TestRequestOnTheWire(t *testing.T) {
	srv := fp.NewOpenAI()
	defer srv.Close()
	srv.Push(fp.Reply{Text: []string{"done"}})
	req := &driver.Request{
		Model: "claude-test", MaxTokens: 100, System: "sys prompt",
		Messages: []driver.Message{
			{Role: driver.RoleUser, Content: []driver.Block{driver.TextBlock("task")}},
			{Role: driver.RoleAssistant, Content: []driver.Block{
				driver.TextBlock("calling"),
				driver.ToolCallBlock("call_a", "echo", json.RawMessage(`{"m":1}`)),
				driver.ToolCallBlock("call_b", "echo", json.RawMessage(`{"m":2}`)),
			}},
			{Role: driver.RoleTool, ToolCallID: "call_a", Content: []driver.Block{driver.TextBlock("one")}},
			{Role: driver.RoleTool, ToolCallID: "call_b", Content: []driver.Block{driver.TextBlock("two")}},
		},
		Tools: []driver.Tool{{Name: "echo", Description: "echoes", Parameters: json.RawMessage(
			`{"type":"object","properties":{"m":{"type":"integer"}},"required":["m"],"additionalProperties":false}`)}},
		Params: map[string]any{"temperature": 0.5},
	}
	if _, _, err := call(t, newDriver(t, srv.URL), req, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		t.Errorf("%s %s, want POST /v1/chat/completions", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("Authorization = %q", got)
	}
	want := `{
	  "model": "claude-test", "max_completion_tokens": 100, "stream": true, "temperature": 0.5,
	  "stream_options": {"include_usage": true},
	  "messages": [
	    {"role": "system", "content": "sys prompt"},
	    {"role": "user", "content": "task"},
	    {"role": "assistant", "content": "calling", "tool_calls": [
	      {"id": "call_a", "type": "function", "function": {"name": "echo", "arguments": "{\"m\":1}"}},
	      {"id": "call_b", "type": "function", "function": {"name": "echo", "arguments": "{\"m\":2}"}}]},
	    {"role": "tool", "tool_call_id": "call_a", "content": "one"},
	    {"role": "tool", "tool_call_id": "call_b", "content": "two"}
	  ],
	  "tools": [{"type": "function", "function": {"name": "echo", "description": "echoes", "parameters": {
	    "type": "object", "properties": {"m": {"type": "integer"}}, "required": ["m"], "additionalProperties": false}}}]
	}`
	if !sameJSON(r.Body, json.RawMessage(want)) {
		t.Errorf("body =\n%s\nwant\n%s", r.Body, want)
	}
}

func TestCallFailures(t *testing.T) {
	tests := []struct {
		name     string
		replies  []fp.Reply
		timeout  time.Duration
		kind     driver.Kind
		requests int
		contains string
	}{
		{name: "401 names the variable", replies: []fp.Reply{{Status: 401, Message: "Incorrect API key provided"}},
			kind: driver.KindKeyRefused, requests: 1, contains: "OPENAI_API_KEY"},
		{name: "429 after the retries", replies: []fp.Reply{{Status: 429, RetryAfter: "0"}, {Status: 429, RetryAfter: "0"}, {Status: 429, RetryAfter: "0"}},
			kind: driver.KindRateLimited, requests: 3},
		{name: "500 retried then error", replies: []fp.Reply{{Status: 500}, {Status: 500}, {Status: 500}},
			kind: driver.KindProvider, requests: 3, contains: "HTTP 500"},
		{name: "400 not retried", replies: []fp.Reply{{Status: 400, Message: "bad model"}},
			kind: driver.KindProvider, requests: 1, contains: "bad model"},
		{name: "error event mid-stream", replies: []fp.Reply{{StreamError: "Overloaded"}},
			kind: driver.KindProvider, requests: 1, contains: "Overloaded"},
		{name: "malformed JSON", replies: []fp.Reply{{Malformed: true}}, kind: driver.KindMalformed, requests: 1},
		{name: "stream cut mid-event", replies: []fp.Reply{{Text: []string{"a", "b", "c"}, CutAfter: 4}},
			kind: driver.KindIncomplete, requests: 1},
		{name: "hang bounded by the deadline", replies: []fp.Reply{{Hang: true}}, timeout: 300 * time.Millisecond,
			kind: driver.KindCanceled, requests: 1, contains: "deadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fp.NewOpenAI()
			defer srv.Close()
			srv.Push(tt.replies...)
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 20 * time.Second
			}
			_, _, err := call(t, newDriver(t, srv.URL), request(), timeout)
			if err == nil {
				t.Fatal("no error")
			}
			if k := driver.KindOf(err); k != tt.kind {
				t.Errorf("kind = %v, want %v (%v)", k, tt.kind, err)
			}
			if tt.contains != "" && !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not say %q", err, tt.contains)
			}
			if n := len(srv.Requests()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
			if tt.kind == driver.KindCanceled && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%v is not context.DeadlineExceeded", err)
			}
		})
	}
}

func TestRetryHonoursRetryAfterThenSucceeds(t *testing.T) {
	srv := fp.NewOpenAI()
	defer srv.Close()
	srv.Push(fp.Reply{Status: 429, RetryAfter: "0.05"}, fp.Reply{Status: 503, RetryAfter: "0"}, fp.Reply{Text: []string{"ok"}})
	resp, _, err := call(t, newDriver(t, srv.URL), request(), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != "ok" || len(srv.Requests()) != 3 {
		t.Errorf("text %q after %d requests", resp.Text(), len(srv.Requests()))
	}
}

// TestHostEnvironmentIsNeverRead sets every ANTHROPIC_* variable the SDK knows,
// and the proxy variables, to trap values pointing at a second server, and
// checks that only the configured key reaches only the configured endpoint.
func TestHostEnvironmentIsNeverRead(t *testing.T) {
	var trapped atomic.Int32
	trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trapped.Add(1)
		w.WriteHeader(http.StatusTeapot)
	}))
	defer trap.Close()
	for k, v := range map[string]string{
		"OPENAI_API_KEY":        "trap-api-key",
		"OPENAI_ADMIN_KEY":      "trap-admin-key",
		"OPENAI_BASE_URL":       trap.URL,
		"OPENAI_ORG_ID":         "org-trap",
		"OPENAI_PROJECT_ID":     "proj-trap",
		"OPENAI_WEBHOOK_SECRET": "trap",
		"OPENAI_CUSTOM_HEADERS": "X-Trap: yes",
		"HTTP_PROXY":            trap.URL,
		"HTTPS_PROXY":           trap.URL,
		"http_proxy":            trap.URL,
		"NO_PROXY":              "",
		"no_proxy":              "",
	} {
		t.Setenv(k, v)
	}
	srv := fp.NewOpenAI()
	defer srv.Close()
	srv.Push(fp.Reply{Text: []string{"clean"}})
	if _, _, err := call(t, newDriver(t, srv.URL), request(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := trapped.Load(); n != 0 {
		t.Errorf("the trap server got %d requests", n)
	}
	r := srv.Requests()[0]
	if got := fp.Key(r); got != key {
		t.Errorf("key sent = %q, want the configured key", got)
	}
	for _, h := range []string{"X-Trap", "OpenAI-Organization", "OpenAI-Project", "X-Api-Key"} {
		if v := r.Header.Get(h); v != "" {
			t.Errorf("header %s = %q leaked from the environment", h, v)
		}
	}
}

// TestKeyGoesToTheEndpointOnly: a redirect to another host is not followed, so
// the key never reaches it.
func TestKeyGoesToTheEndpointOnly(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	srv := fp.NewOpenAI()
	defer srv.Close()
	for range 3 {
		srv.Push(fp.Reply{RedirectTo: other.URL + "/v1/chat/completions"})
	}
	_, _, err := call(t, newDriver(t, srv.URL), request(), 20*time.Second)
	if driver.KindOf(err) != driver.KindProvider || !errors.Is(err, driver.ErrRedirect) {
		t.Errorf("err = %v, want a provider error for the redirect", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect target got %d requests", n)
	}
}

func TestUnreachable(t *testing.T) {
	srv := fp.NewOpenAI()
	url := srv.URL
	srv.Close()
	_, _, err := call(t, newDriver(t, url), request(), 20*time.Second)
	if driver.KindOf(err) != driver.KindUnreachable {
		t.Errorf("err = %v, want unreachable", err)
	}
}

// BenchmarkCall measures one streamed turn (three text chunks and a tool call
// in three pieces) against the loopback fake: the driver's per-call overhead
// plus the SDK's, with the fake's own cost in it too.
func BenchmarkCall(b *testing.B) {
	srv := fp.NewOpenAI()
	defer srv.Close()
	d, err := openai.New(driver.Config{Name: openai.Name, Version: "1", Endpoint: srv.URL, APIKey: key, KeyVariable: "K"})
	if err != nil {
		b.Fatal(err)
	}
	reply := fp.Reply{Text: []string{"a", "b", "c"}, ToolCalls: []fp.ToolCall{{ID: "call_1", Name: "echo", Pieces: []string{`{"m"`, `:`, `1}`}}}, InputTokens: 10, OutputTokens: 5}
	req := request()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		srv.Push(reply)
		if _, err := d.Call(ctx, req, func(string) {}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestKeyless: a local compatible server may need no key; none is sent, and
// the host's OPENAI_API_KEY is not used in its place.
func TestKeyless(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "trap-api-key")
	srv := fp.NewOpenAI()
	defer srv.Close()
	srv.Push(fp.Reply{Text: []string{"local"}})
	d, err := openai.New(driver.Config{Name: openai.Name, Version: "1", Endpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := call(t, d, request(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if h := srv.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q, want none", h)
	}
}

func TestMaxTokensField(t *testing.T) {
	srv := fp.NewOpenAI()
	defer srv.Close()
	srv.Push(fp.Reply{Text: []string{"x"}})
	d, err := openai.New(driver.Config{Name: openai.Name, Endpoint: srv.URL, APIKey: key,
		Settings: map[string]any{openai.SettingMaxTokensField: "max_tokens"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := call(t, d, request(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	body := srv.Requests()[0].JSON()
	if body["max_tokens"] != float64(256) || body["max_completion_tokens"] != nil {
		t.Errorf("body = %v", body)
	}
	if _, err := openai.New(driver.Config{Name: openai.Name, Settings: map[string]any{openai.SettingMaxTokensField: "tokens"}}); err == nil {
		t.Error("a bad max_tokens_field was accepted")
	}
}

// TestDeadlineBoundsEverything: a retry-after longer than the deadline, and a
// stream that stops mid-answer, both end the call by its deadline.
func TestDeadlineBoundsEverything(t *testing.T) {
	t.Run("long retry-after", func(t *testing.T) {
		srv := fp.NewOpenAI()
		defer srv.Close()
		srv.Push(fp.Reply{Status: 429, RetryAfter: "3600"}, fp.Reply{Text: []string{"late"}})
		_, _, err := call(t, newDriver(t, srv.URL), request(), 500*time.Millisecond)
		// The SDK either waits (and the deadline ends the wait) or gives up
		// at once on a wait it will not make; it never waits an hour.
		if k := driver.KindOf(err); k != driver.KindCanceled && k != driver.KindRateLimited {
			t.Errorf("err = %v, want canceled or rate limited", err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
	t.Run("stream stops mid-answer", func(t *testing.T) {
		srv := fp.NewOpenAI()
		defer srv.Close()
		srv.Push(fp.Reply{Text: []string{"a", "b", "c", "d"}, HangAfter: 4})
		_, chunks, err := call(t, newDriver(t, srv.URL), request(), 500*time.Millisecond)
		if !errors.Is(err, driver.ErrCanceled) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want canceled by the deadline", err)
		}
		if len(chunks) == 0 {
			t.Error("no chunk arrived before the stall")
		}
	})
}
