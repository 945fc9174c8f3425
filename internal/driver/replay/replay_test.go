package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/replay"
)

const transcript = `version: 1
responses:
  - chunks: ["Let me ", "echo that."]
    content:
      - {type: text, text: "Let me echo that."}
      - {type: tool_call, id: call_1, name: murmur/echo, input: {message: hi}}
  - content:
      - {type: tool_call, name: murmur/echo}
  - content:
      - {type: text, text: "Done."}
  - stop_reason: max_tokens
    content:
      - {type: text, text: "long"}
`

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "transcript.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReplayInOrderThenExhausted(t *testing.T) {
	d, err := replay.New(replay.Name, "1.0.0", write(t, transcript))
	if err != nil {
		t.Fatal(err)
	}
	if info := d.Info(); info.Implementation != driver.ImplementationBuiltin || len(info.SHA256) != 64 || info.Version != "1.0.0" {
		t.Errorf("info = %+v", info)
	}
	want := []struct {
		stop   string
		text   string
		chunks string
		calls  string
	}{
		{driver.StopToolCall, "Let me echo that.", "Let me |echo that.", `call_1 murmur/echo {"message":"hi"}`},
		{driver.StopToolCall, "", "", `replay_2_1 murmur/echo {}`},
		{driver.StopEndTurn, "Done.", "Done.", ""},
		{driver.StopMaxTokens, "long", "long", ""},
	}
	for i, w := range want {
		var chunks []string
		resp, err := d.Call(context.Background(), &driver.Request{}, func(s string) { chunks = append(chunks, s) })
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		var calls []string
		for _, c := range resp.ToolCalls() {
			calls = append(calls, c.ID+" "+c.Name+" "+string(c.Input))
		}
		if resp.StopReason != w.stop || resp.Text() != w.text || strings.Join(chunks, "|") != w.chunks || strings.Join(calls, ";") != w.calls {
			t.Errorf("call %d = %s %q %q %q, want %s %q %q %q", i+1, resp.StopReason, resp.Text(), chunks, calls, w.stop, w.text, w.chunks, w.calls)
		}
		if resp.Usage == nil || *resp.Usage != (driver.Usage{}) {
			t.Errorf("call %d usage = %+v, want zero", i+1, resp.Usage)
		}
	}
	_, err = d.Call(context.Background(), &driver.Request{}, nil)
	if !errors.Is(err, driver.ErrExhausted) || !strings.Contains(err.Error(), "exhausted") {
		t.Errorf("fifth call: %v, want exhausted", err)
	}
}

func TestReplayAcceptsJSON(t *testing.T) {
	d, err := replay.New(replay.Name, "0", write(t, `{"version":1,"responses":[{"content":[{"type":"text","text":"hi"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := d.Call(context.Background(), nil, nil)
	if err != nil || resp.Text() != "hi" || resp.StopReason != driver.StopEndTurn {
		t.Fatalf("%+v %v", resp, err)
	}
	b, _ := json.Marshal(resp)
	if string(b) != `{"stop_reason":"end_turn","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":0,"output_tokens":0}}` {
		t.Errorf("wire = %s", b)
	}
}

func TestBadTranscripts(t *testing.T) {
	tests := []struct {
		name, body, code, says string
	}{
		{"not yaml", "version: [1", replay.CodeInvalid, "transcript"},
		{"empty", "", replay.CodeInvalid, "empty"},
		{"wrong version", "version: 2\nresponses: [{content: [{type: text, text: x}]}]", replay.CodeInvalid, "version is 2"},
		{"no version", "responses: [{content: [{type: text, text: x}]}]", replay.CodeInvalid, "version is 0"},
		{"no responses", "version: 1\nresponses: []", replay.CodeInvalid, "responses is empty"},
		{"unknown field", "version: 1\nresponse: []", replay.CodeInvalid, "unknown field"},
		{"unknown block", "version: 1\nresponses: [{content: [{type: image}]}]", replay.CodeInvalid, "image"},
		{"input not an object", "version: 1\nresponses: [{content: [{type: tool_call, name: t, input: [1]}]}]", replay.CodeInvalid, "not an object"},
		{"chunks do not join", "version: 1\nresponses: [{chunks: [a], content: [{type: text, text: b}]}]", replay.CodeInvalid, "chunks join"},
		{"tool_call stop without a call", "version: 1\nresponses: [{stop_reason: tool_call, content: [{type: text, text: b}]}]", replay.CodeInvalid, "without a tool_call"},
		{"bad stop", "version: 1\nresponses: [{stop_reason: done, content: []}]", replay.CodeInvalid, "done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := write(t, tt.body)
			_, err := replay.New(replay.Name, "0", p)
			if diag.Code(err) != tt.code || !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), p) {
				t.Errorf("err = %v, want %s saying %q and naming the file", err, tt.code, tt.says)
			}
		})
	}
	_, err := replay.New(replay.Name, "0", filepath.Join(t.TempDir(), "missing.yaml"))
	if diag.Code(err) != replay.CodeUnreadable {
		t.Errorf("missing file: %v, want %s", err, replay.CodeUnreadable)
	}
}

func TestCanceledContext(t *testing.T) {
	d, err := replay.New(replay.Name, "0", write(t, transcript))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Call(ctx, nil, nil); !errors.Is(err, context.Canceled) || d.Remaining() != 4 {
		t.Errorf("err = %v, remaining %d", err, d.Remaining())
	}
}

// BenchmarkCall measures one replayed turn with a tool call and two chunks.
func BenchmarkCall(b *testing.B) {
	p := filepath.Join(b.TempDir(), "t.yaml")
	body := "version: 1\nresponses:\n  - chunks: [\"a\", \"b\"]\n    content: [{type: text, text: ab}, {type: tool_call, name: echo, input: {m: 1}}]\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		b.Fatal(err)
	}
	d, err := replay.New(replay.Name, "0", p)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		replay.Rewind(d)
		if _, err := d.Call(ctx, nil, func(string) {}); err != nil {
			b.Fatal(err)
		}
	}
}
