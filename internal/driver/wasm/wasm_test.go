package wasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/wasm"
	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp"
	"github.com/murmur-go/murmur/internal/wit"
)

var testEngine *wasmhost.Engine

func TestMain(m *testing.M) {
	var err error
	testEngine, err = wasmhost.NewEngine(wasmhost.Config{NoCache: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	testEngine.Close()
	os.Exit(code)
}

// limits are the manifest's defaults with a short deadline, so a spinning
// fixture ends quickly.
func limits(deadline time.Duration) wasmhost.Limits {
	l := grant.Limits(manifest.EffLimits{
		DeadlineSeconds: 1, MemoryBytes: 64 << 20, TableElements: 10000, Instances: 10,
	})
	l.Deadline = deadline
	return l
}

type recorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *recorder) CallDeadline(component, call string, deadline time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf("%s %s %s", component, call, deadline))
}

func newDriver(t testing.TB, fixture string, mod func(*wasm.Config)) *wasm.Driver {
	t.Helper()
	src, err := os.ReadFile("testdata/" + fixture + ".wat")
	if err != nil {
		t.Fatal(err)
	}
	cfg := wasm.Config{
		Engine: testEngine, Name: "local/driver-" + fixture, Version: "1.0.0", Component: src,
		Limits: limits(2 * time.Second), Model: "test-model", Endpoint: "https://llm.example.com",
		Logger: slog.New(slog.DiscardHandler),
	}
	if mod != nil {
		mod(&cfg)
	}
	d, err := wasm.New(cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", fixture, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func userRequest(text string) *driver.Request {
	return &driver.Request{
		Model: "test-model", MaxTokens: 1024, System: "be brief",
		Messages: []driver.Message{{Role: driver.RoleUser, Content: []driver.Block{driver.TextBlock(text)}}},
		Tools:    []driver.Tool{{Name: "local/echo", Description: "Echoes.", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
}

func TestToolCallThenEndTurn(t *testing.T) {
	d := newDriver(t, "turns", nil)
	ctx := context.Background()
	full := userRequest("say hi through the echo tool")

	r1, err := d.Call(ctx, full, nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := r1.ToolCalls()
	if r1.StopReason != driver.StopToolCall || len(calls) != 1 || calls[0].Name != "local/echo" || calls[0].ID != "call_1" ||
		string(calls[0].Input) != `{"message":"hi"}` {
		t.Fatalf("turn 1 = %+v", r1)
	}
	if r1.Usage == nil || *r1.Usage != (driver.Usage{InputTokens: 12, OutputTokens: 7}) || r1.ContinuationID != "" {
		t.Errorf("turn 1 usage/continuation = %+v %q", r1.Usage, r1.ContinuationID)
	}

	full.Messages = append(full.Messages,
		driver.Message{Role: driver.RoleAssistant, Content: r1.Content},
		driver.Message{Role: driver.RoleTool, ToolCallID: "call_1", Content: []driver.Block{driver.TextBlock("hi")}})
	r2, err := d.Call(ctx, full, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r2.StopReason != driver.StopEndTurn || r2.Text() != "The echo tool said: hi" || len(r2.ToolCalls()) != 0 {
		t.Fatalf("turn 2 = %+v", r2)
	}
}

func TestInfo(t *testing.T) {
	d := newDriver(t, "turns", nil)
	info := d.Info()
	if info.Name != "local/driver-turns" || info.Version != "1.0.0" || info.Implementation != driver.ImplementationWASM || len(info.SHA256) != 64 {
		t.Errorf("Info = %+v", info)
	}
	given := newDriver(t, "turns", func(c *wasm.Config) { c.SHA256 = "abc" })
	if given.Info().SHA256 != "abc" {
		t.Errorf("a given sha256 is kept: %+v", given.Info())
	}
}

// TestContinuation runs two turns of one task through Continuation: the
// fixture streams the request it received, so the test sees exactly what the
// component got.
func TestContinuation(t *testing.T) {
	d := newDriver(t, "continuation", nil)
	ctx := context.Background()
	var c driver.Continuation
	full := userRequest("hello")

	var got []string
	record := func(s string) { got = append(got, s) }

	req := c.Next(full)
	r1, err := d.Call(ctx, req, record)
	if err != nil {
		t.Fatal(err)
	}
	c.Got(r1)
	if r1.ContinuationID != "cont-1" || c.ID() != "cont-1" || r1.StopReason != driver.StopToolCall {
		t.Fatalf("turn 1 = %+v (continuation %q)", r1, c.ID())
	}
	want1, _ := json.Marshal(full)
	if len(got) != 1 || got[0] != string(want1) {
		t.Fatalf("turn 1: the component got %q, want the whole request %s", got, want1)
	}

	added := []driver.Message{
		{Role: driver.RoleAssistant, Content: r1.Content},
		{Role: driver.RoleTool, ToolCallID: "call_1", Content: []driver.Block{driver.TextBlock("hi")}},
	}
	full.Messages = append(full.Messages, added...)
	got = nil
	req = c.Next(full)
	r2, err := d.Call(ctx, req, record)
	if err != nil {
		t.Fatal(err)
	}
	c.Got(r2)
	var sent driver.Request
	if len(got) != 1 {
		t.Fatalf("turn 2: chunks %q", got)
	}
	if err := json.Unmarshal([]byte(got[0]), &sent); err != nil {
		t.Fatal(err)
	}
	if sent.ContinuationID != "cont-1" || len(sent.Messages) != 2 || sent.Messages[0].Role != driver.RoleAssistant ||
		sent.Messages[1].ToolCallID != "call_1" {
		t.Fatalf("turn 2: the component got %s", got[0])
	}
	if len(full.Messages) != 3 || full.ContinuationID != "" {
		t.Errorf("Next modified the conversation: %+v", full)
	}
	if r2.StopReason != driver.StopEndTurn || r2.ContinuationID != "" || c.ID() != "" {
		t.Fatalf("turn 2 = %+v (continuation %q)", r2, c.ID())
	}
	// No id answered: the next turn resends the whole conversation.
	if next := c.Next(full); next != full {
		t.Errorf("without an id Next must send the whole conversation, got %+v", next)
	}
}

func TestContinuationHelper(t *testing.T) {
	msg := func(s string) driver.Message {
		return driver.Message{Role: driver.RoleUser, Content: []driver.Block{driver.TextBlock(s)}}
	}
	full := &driver.Request{Messages: []driver.Message{msg("a")}}
	var c driver.Continuation
	if c.Next(full) != full {
		t.Fatal("first turn: the whole request")
	}
	c.Got(&driver.Response{StopReason: driver.StopEndTurn, ContinuationID: "x"})
	full.Messages = append(full.Messages, msg("b"), msg("c"))
	r := c.Next(full)
	if r.ContinuationID != "x" || len(r.Messages) != 2 || r.Messages[0].Text() != "b" {
		t.Fatalf("second turn = %+v", r)
	}
	// A failed call (no Got): the retry sends the same.
	if r2 := c.Next(full); r2.ContinuationID != "x" || len(r2.Messages) != 2 {
		t.Fatalf("retry = %+v", r2)
	}
	c.Got(&driver.Response{StopReason: driver.StopEndTurn, ContinuationID: "y"})
	full.Messages = append(full.Messages, msg("d"))
	if r := c.Next(full); r.ContinuationID != "y" || len(r.Messages) != 1 || r.Messages[0].Text() != "d" {
		t.Fatalf("third turn = %+v", r)
	}
	// A rewritten, shorter history without Reset: the whole of it.
	short := &driver.Request{Messages: []driver.Message{msg("z")}}
	if r := c.Next(short); r.ContinuationID != "" || len(r.Messages) != 1 {
		t.Fatalf("shorter history = %+v", r)
	}
	c.Reset()
	if r := c.Next(full); r != full {
		t.Fatalf("after Reset = %+v", r)
	}
}

func TestChunksStream(t *testing.T) {
	d := newDriver(t, "chunks", nil)
	var got []string
	resp, err := d.Call(context.Background(), userRequest("hi"), func(s string) { got = append(got, s) })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "Hel|lo, |world" {
		t.Errorf("chunks = %q (thinking chunks are not streamed)", got)
	}
	if resp.Text() != strings.Join(got, "") {
		t.Errorf("text %q is not the chunks joined", resp.Text())
	}
	// A nil ChunkFunc is allowed.
	if _, err := d.Call(context.Background(), userRequest("hi"), nil); err != nil {
		t.Fatal(err)
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "host-secret")
	sess := &session.Session{ID: "ses_0123", Name: "local/agent", Version: "0.3.0", CapsuleURL: "http://127.0.0.1:4242"}
	tests := []struct {
		name string
		mod  func(*wasm.Config)
		want map[string]string
	}{
		{"with config and session", func(c *wasm.Config) {
			c.Session = sess
			c.Settings = map[string]any{"temperature": 0.5, "mode": "fast"}
		}, map[string]string{
			"MURMUR_SESSION_ID": "ses_0123", "MURMUR_CAPSULE_NAME": "local/agent", "MURMUR_CAPSULE_VERSION": "0.3.0",
			"MURMUR_CAPSULE_URL": "http://127.0.0.1:4242", "MURMUR_RUNTIME_DIR": grant.RuntimeMount,
			"MURMUR_INFERENCE_MODEL": "test-model", "MURMUR_INFERENCE_ENDPOINT": "https://llm.example.com",
			"MURMUR_INFERENCE_API_KEY":       wasm.DefaultKeyPlaceholder,
			"MURMUR_INFERENCE_DRIVER_CONFIG": `{"mode":"fast","temperature":0.5}`,
		}},
		{"no config, own placeholder", func(c *wasm.Config) {
			c.Session = sess
			c.KeyPlaceholder = "ph-123"
		}, map[string]string{
			"MURMUR_SESSION_ID": "ses_0123", "MURMUR_CAPSULE_NAME": "local/agent", "MURMUR_CAPSULE_VERSION": "0.3.0",
			"MURMUR_CAPSULE_URL": "http://127.0.0.1:4242", "MURMUR_RUNTIME_DIR": grant.RuntimeMount,
			"MURMUR_INFERENCE_MODEL": "test-model", "MURMUR_INFERENCE_ENDPOINT": "https://llm.example.com",
			"MURMUR_INFERENCE_API_KEY": "ph-123", "MURMUR_INFERENCE_DRIVER_CONFIG": `{}`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriver(t, "env", tc.mod)
			var b strings.Builder
			if _, err := d.Call(context.Background(), userRequest("hi"), func(s string) { b.WriteString(s) }); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
				k, v, _ := strings.Cut(line, "=")
				got[k] = v
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("the component's environment\n got %v\nwant %v", got, tc.want)
			}
			if fmt.Sprint(d.Env()) != fmt.Sprint(tc.want) {
				t.Errorf("Env() = %v", d.Env())
			}
		})
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		fixture, prompt string
		kind            driver.Kind
		ending          string
		msg             string
	}{
		{"trap", "hi", driver.KindProvider, trace.EndTrapped, "the component's run ended trapped"},
		{"balloon", "hi", driver.KindProvider, trace.EndResourceLimit, "the component's run ended resource_limit"},
		{"spin", "hi", driver.KindCanceled, trace.EndDeadlineExceeded, "the component's run ended deadline_exceeded (deadline 300ms)"},
		{"bad", "failme", driver.KindProvider, trace.EndFailed, "the component answered status error: upstream said no"},
		{"bad", "nodata", driver.KindMalformed, trace.EndFailed, "the component's result holds no data"},
		{"bad", "badstop", driver.KindMalformed, trace.EndFailed, `the component's response cannot be used: stop_reason "maybe"`},
		{"bad", "garbage", driver.KindMalformed, trace.EndFailed, "the component's tool-result.data is not a response JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.fixture+"/"+tc.prompt, func(t *testing.T) {
			rec := &recorder{}
			d := newDriver(t, tc.fixture, func(c *wasm.Config) {
				c.Limits = limits(300 * time.Millisecond)
				c.Limits.MemoryBytes = 8 << 20
				c.Recorder = rec
			})
			resp, err := d.Call(context.Background(), userRequest(tc.prompt), nil)
			if err == nil {
				t.Fatalf("no error, response %+v", resp)
			}
			var de *driver.Error
			if !errors.As(err, &de) || de.Kind != tc.kind || de.Driver != d.Info().Name {
				t.Fatalf("err = %#v, want a driver error of kind %v", err, tc.kind)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("message %q does not say %q", err.Error(), tc.msg)
			}
			if got, _ := wasm.Ending(err); got != tc.ending {
				t.Errorf("ending %q, want %q", got, tc.ending)
			}
			if (tc.kind == driver.KindCanceled) != errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("errors.Is(err, DeadlineExceeded) = %v", errors.Is(err, context.DeadlineExceeded))
			}
			if len(rec.lines) != 0 {
				t.Errorf("no call_deadline for a guest spinning in its own code: %q", rec.lines)
			}
		})
	}
}

// A deadline that passes while the component waits on the runtime (here: in
// the host's emit-chunk) is a call_deadline line naming the driver's run.
func TestDeadlineWhileWaitingOnRuntime(t *testing.T) {
	rec := &recorder{}
	d := newDriver(t, "chunks", func(c *wasm.Config) {
		c.Limits = limits(200 * time.Millisecond)
		c.Recorder = rec
	})
	release := make(chan struct{})
	defer close(release)
	_, err := d.Call(context.Background(), userRequest("hi"), func(string) { <-release })
	if driver.KindOf(err) != driver.KindCanceled || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if st, waited := wasm.Ending(err); st != trace.EndDeadlineExceeded || !waited {
		t.Errorf("Ending = %s, waited %v", st, waited)
	}
	if want := "local/driver-chunks " + wasm.RunCall + " 200ms"; len(rec.lines) != 1 || rec.lines[0] != want {
		t.Errorf("call_deadline lines %q, want %q", rec.lines, want)
	}
}

func TestCanceledByContext(t *testing.T) {
	d := newDriver(t, "spin", func(c *wasm.Config) { c.Limits = limits(time.Minute) })
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	_, err := d.Call(ctx, userRequest("hi"), nil)
	if driver.KindOf(err) != driver.KindCanceled || !errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "the call was canceled") {
		t.Errorf("message %q", err)
	}
}

func TestNewRefuses(t *testing.T) {
	tests := []struct {
		name      string
		component string
		want      string
	}{
		{"not wasm", "this is not a component", "driver local/bad cannot be loaded"},
		{"no tool/run", `(component)`, "does not export murmur:tool/run@0.1.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wasm.New(wasm.Config{Engine: testEngine, Name: "local/bad", Component: []byte(tc.component), Limits: limits(time.Second)})
			var d *diag.Diagnostic
			if !errors.As(err, &d) || d.Code != wasm.CodeUnloadable || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %s saying %q", err, wasm.CodeUnloadable, tc.want)
			}
		})
	}
}

// Concurrent calls each get their own instance.
func TestConcurrentCalls(t *testing.T) {
	d := newDriver(t, "turns", nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			r, err := d.Call(context.Background(), userRequest("hi"), nil)
			if err == nil && r.StopReason != driver.StopToolCall {
				err = fmt.Errorf("stop %s", r.StopReason)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// BenchmarkTurn is the per-turn overhead of a stored driver: a fresh
// instance, the request JSON in, the response JSON decoded and validated.
func BenchmarkTurn(b *testing.B) {
	d := newDriver(b, "turns", nil)
	req := userRequest("say hi through the echo tool")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Call(ctx, req, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// wasi:http is decided by the configured policy: by default the gateway
// grant (a request to another origin is refused), and a given policy sees
// the request the component built.
func TestHTTPPolicy(t *testing.T) {
	var seen []string
	// The policy records what it was asked and refuses it: the request must
	// not leave this machine (there is no llm.example.com here).
	recordAndRefuse := func(_ context.Context, req *wasihttp.Request) error {
		seen = append(seen, req.Method+" "+req.URL())
		return wit.ErrHTTPDenied
	}
	tests := []struct {
		name   string
		policy wit.HTTPPolicy
		want   string
	}{
		{"default: the gateway endpoint only", nil, "denied"},
		{"the policy decides", recordAndRefuse, "denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriver(t, "http", func(c *wasm.Config) {
				c.HTTP = tc.policy
				if tc.policy == nil {
					c.Endpoint = "https://gateway.example.net" // not the origin http.wat calls
				}
			})
			resp, err := d.Call(context.Background(), userRequest("hi"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text() != tc.want {
				t.Errorf("the component saw %q, want %q", resp.Text(), tc.want)
			}
		})
	}
	if len(seen) != 1 || seen[0] != "GET https://llm.example.com/v1/messages" {
		t.Errorf("the policy saw %q", seen)
	}
}

// BenchmarkTurnJSON is the JSON part of a turn alone (the request written,
// the response read and validated), the peer of BenchmarkTurn: the rest is
// the instance.
func BenchmarkTurnJSON(b *testing.B) {
	req := userRequest("say hi through the echo tool")
	answer := []byte(`{"stop_reason":"tool_call","content":[{"type":"text","text":"Let me echo that."},{"type":"tool_call","id":"call_1","name":"local/echo","input":{"message":"hi"}}],"usage":{"input_tokens":12,"output_tokens":7}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(req); err != nil {
			b.Fatal(err)
		}
		var resp driver.Response
		if err := json.Unmarshal(answer, &resp); err != nil {
			b.Fatal(err)
		}
		if err := resp.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}
