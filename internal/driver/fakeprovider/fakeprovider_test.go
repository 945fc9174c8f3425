package fakeprovider_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	fp "github.com/murmur-go/murmur/internal/driver/fakeprovider"
)

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestWireFraming(t *testing.T) {
	tests := []struct {
		proto fp.Protocol
		path  string
		want  []string
	}{
		{fp.Anthropic, "/v1/messages", []string{
			"event: message_start\ndata: {", "event: ping\n",
			`"delta":{"partial_json":"{\"a\"","type":"input_json_delta"}`,
			`"stop_reason":"tool_use"`, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		}},
		{fp.OpenAI, "/chat/completions", []string{
			`"object":"chat.completion.chunk"`, `"finish_reason":"tool_calls"`,
			`"usage":{"completion_tokens":2,"prompt_tokens":1,"total_tokens":3}`, "data: [DONE]\n\n",
		}},
	}
	for _, tt := range tests {
		s := fp.New(tt.proto)
		s.Push(fp.Reply{ToolCalls: []fp.ToolCall{{ID: "x", Name: "t", Pieces: []string{`{"a"`, `:1}`}}}, InputTokens: 1, OutputTokens: 2})
		resp, body := post(t, s.URL+tt.path, `{"model":"m"}`)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Errorf("%s: %d %s", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		for _, w := range tt.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: body lacks %q:\n%s", tt.path, w, body)
			}
		}
		if r := s.Requests(); len(r) != 1 || r[0].JSON()["model"] != "m" {
			t.Errorf("recorded %+v", r)
		}
		// An empty queue and a wrong path are errors in the provider's shape.
		if resp, body := post(t, s.URL+tt.path, `{}`); resp.StatusCode != 500 || !strings.Contains(body, "no scripted reply") {
			t.Errorf("empty queue: %d %s", resp.StatusCode, body)
		}
		if resp, _ := post(t, s.URL+"/nope", `{}`); resp.StatusCode != 404 {
			t.Errorf("wrong path: %d", resp.StatusCode)
		}
		s.Close()
	}
}

func TestErrorAnswers(t *testing.T) {
	s := fp.NewAnthropic()
	defer s.Close()
	s.Push(fp.Reply{Status: 429, RetryAfter: "7"})
	resp, body := post(t, s.URL+"/v1/messages", `{}`)
	if resp.StatusCode != 429 || resp.Header.Get("retry-after") != "7" || !strings.Contains(body, `"type":"rate_limit_error"`) {
		t.Errorf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
}
