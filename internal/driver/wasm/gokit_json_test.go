package wasm_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/driver"
)

// TestGoKitDriverReadsAnyEventLayout: the Go-kit driver reads its JSON by
// hand (testdata/components/driver-anthropic-http/json.go), so a provider
// whose events put their fields in another order, with white space, escapes
// and surrogate pairs, CRLF line ends and fields the driver does not know,
// must give the same response; and the request it sends must be JSON that
// means what the normalized request says, strings escaped.
func TestGoKitDriverReadsAnyEventLayout(t *testing.T) {
	events := []string{
		"event: message_start\r\ndata: {\"message\" : {\"content\":[],\"usage\":{\"output_tokens\":1, \"input_tokens\" : 12},\"id\":\"m\"},\"type\":\"message_start\"}\r\n\r\n",
		"data: {\"type\":\"ping\"}\n\n",
		"data:  {\"index\":0,\"content_block\":{\"citations\":null,\"text\":\"\",\"type\":\"text\"},\"type\":\"content_block_start\"}\n\n",
		"data: {\"delta\":{\"text\":\"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\"\\n\",\"type\":\"text_delta\"},\"index\":0,\"type\":\"content_block_delta\"}\n\n",
		"data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
		"data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"input\":{},\"name\":\"local/echo\",\"id\":\"toolu_9\",\"type\":\"tool_use\"}}\n\n",
		"data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"partial_json\":\"{\\\"message\\\": \",\"type\":\"input_json_delta\"}}\n\n",
		"data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"h\\\\u00e9\\\"}\"}}\n\n",
		"data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
		"data: {\"usage\":{\"output_tokens\":7},\"delta\":{\"stop_sequence\":null,\"stop_reason\":\"tool_use\"},\"type\":\"message_delta\"}\n\n",
		"data: {\"type\":\"message_stop\"}\n\n",
	}
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("content-type", "text/event-stream")
		for _, e := range events {
			io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	d := httpDriver(t, srv.URL, "sk-real-key")
	req := toolTurnRequest()
	req.System = "be \"brief\"\n\ttab \u2028 <b>"
	req.Messages = append(req.Messages,
		driver.Message{Role: "assistant", Content: []driver.Block{driver.ToolCallBlock("toolu_1", "local/echo", json.RawMessage(`{"message":"x"}`))}},
		driver.Message{Role: "tool", ToolCallID: "toolu_1", Content: []driver.Block{driver.TextBlock("ok \x01 \u00e9")}})
	var chunks []string
	resp, err := d.Call(context.Background(), req, func(s string) { chunks = append(chunks, s) })
	if err != nil {
		t.Fatal(err)
	}
	if want := "café 😀 \"q\"\n"; resp.Text() != want || strings.Join(chunks, "") != want {
		t.Errorf("text %q, chunks %q", resp.Text(), chunks)
	}
	if tc := resp.ToolCalls(); len(tc) != 1 || tc[0].ID != "toolu_9" || tc[0].Name != "local/echo" || string(tc[0].Input) != `{"message": "h\u00e9"}` {
		t.Errorf("tool calls %+v", tc)
	}
	if resp.StopReason != "tool_call" || resp.Usage == nil || resp.Usage.InputTokens != 12 || resp.Usage.OutputTokens != 7 {
		t.Errorf("response %+v (usage %+v)", resp, resp.Usage)
	}
	var sent struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		System   string `json:"system"`
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
		Tools []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatalf("the request body is not JSON: %v\n%s", err, body)
	}
	if sent.System != req.System || !sent.Stream || len(sent.Messages) != 3 || len(sent.Tools) != 1 || sent.Tools[0]["input_schema"] == nil {
		t.Fatalf("request %s", body)
	}
	if m := sent.Messages[1].Content[0]; m["type"] != "tool_use" || m["id"] != "toolu_1" || m["input"].(map[string]any)["message"] != "x" {
		t.Errorf("tool_use block %v", m)
	}
	if m := sent.Messages[2]; m.Role != "user" || m.Content[0]["type"] != "tool_result" || m.Content[0]["tool_use_id"] != "toolu_1" || m.Content[0]["content"] != "ok \x01 \u00e9" {
		t.Errorf("tool_result message %+v", m)
	}
}
