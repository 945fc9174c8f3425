package driver_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/murmur-go/murmur/internal/driver"
)

func TestRequestWireFormat(t *testing.T) {
	req := driver.Request{
		Model: "m", MaxTokens: 8, System: "s",
		Messages: []driver.Message{
			{Role: "user", Content: []driver.Block{driver.TextBlock("")}},
			{Role: "assistant", Content: []driver.Block{driver.ToolCallBlock("c1", "t", nil)}},
			{Role: "tool", ToolCallID: "c1"},
		},
		Tools: []driver.Tool{{Name: "t", Description: "d"}},
	}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","max_tokens":8,"system":"s","messages":[` +
		`{"role":"user","content":[{"type":"text","text":""}]},` +
		`{"role":"assistant","content":[{"type":"tool_call","id":"c1","name":"t","input":{}}]},` +
		`{"role":"tool","content":[],"tool_call_id":"c1"}],` +
		`"tools":[{"name":"t","description":"d","parameters":{"type":"object"}}],"params":{}}`
	if string(b) != want {
		t.Errorf("wire =\n%s\nwant\n%s", b, want)
	}
	var back driver.Request
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Messages[1].Content[0].Name != "t" || back.Messages[2].ToolCallID != "c1" {
		t.Errorf("round trip = %+v", back)
	}
}

func TestResponseFromAComponent(t *testing.T) {
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"text", `{"stop_reason":"end_turn","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":3,"output_tokens":1}}`, true},
		{"tool call", `{"stop_reason":"tool_call","content":[{"type":"tool_call","id":"a","name":"t","input":{"x":1}}]}`, true},
		{"error", `{"stop_reason":"error","content":[{"type":"text","text":"quota"}]}`, true},
		{"tool stop without call", `{"stop_reason":"tool_call","content":[]}`, false},
		{"unknown stop", `{"stop_reason":"done","content":[]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r driver.Response
			err := json.Unmarshal([]byte(tt.in), &r)
			if err == nil {
				err = r.Validate()
			}
			if (err == nil) != tt.ok {
				t.Errorf("err = %v, want ok %v", err, tt.ok)
			}
		})
	}
	var r driver.Response
	if err := json.Unmarshal([]byte(`{"stop_reason":"end_turn","content":[{"type":"image"}]}`), &r); err == nil {
		t.Error("an unknown block type decoded")
	}
}

func TestToolMessageContentAsString(t *testing.T) {
	var m driver.Message
	if err := json.Unmarshal([]byte(`{"role":"tool","tool_call_id":"c","content":"result"}`), &m); err != nil {
		t.Fatal(err)
	}
	if m.Text() != "result" {
		t.Errorf("text = %q", m.Text())
	}
}

func TestErrorKinds(t *testing.T) {
	err := driver.KeyRefused("murmur/driver-anthropic", "MY_KEY", errors.New("invalid x-api-key"))
	if !errors.Is(err, driver.ErrKeyRefused) || errors.Is(err, driver.ErrRateLimited) || driver.KindOf(err) != driver.KindKeyRefused {
		t.Errorf("kinds of %v", err)
	}
	want := "murmur/driver-anthropic: the provider refused the key in MY_KEY (HTTP 401): check that MY_KEY holds a valid API key for this endpoint: invalid x-api-key"
	if err.Error() != want {
		t.Errorf("message =\n%s\nwant\n%s", err, want)
	}
	for status, kind := range map[int]driver.Kind{401: driver.KindKeyRefused, 429: driver.KindRateLimited, 500: driver.KindProvider, 403: driver.KindProvider} {
		if k := driver.KindOf(driver.StatusError("d", "K", status, nil)); k != kind {
			t.Errorf("status %d: kind %v, want %v", status, k, kind)
		}
	}
}
