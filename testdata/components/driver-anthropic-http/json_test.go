package main

// Host tests of the hand-written JSON (go test ./testdata/components/driver-anthropic-http/):
// encoding/json is the reference it must agree with.

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestReaderStringsAgreeWithEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`""`, `"plain"`, `"a\"b\\c\/d"`, `"\b\f\n\r\t"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`,
		`"\ud83d"`, `"\ude00x"`, `"\ud83dx"`, `"\ud83d\u0041"`, "\"caf\xc3\xa9\"", "\"bad \xff byte\"", "\"bad \xff\xfe bytes\"", "\"\\n then \xff\"",
		`"\u0000"`, `"\x"`, `"unterminated`, "\"tab\tinside\"", `"\u12"`, `"\uZZZZ"`, `null`,
	} {
		var want string
		werr := json.Unmarshal([]byte(in), &want)
		r := &reader{b: []byte(in)}
		got := r.str()
		r.end()
		if (werr == nil) != (r.err == nil) {
			t.Errorf("%q: encoding/json error %v, reader error %v", in, werr, r.err)
			continue
		}
		if werr == nil && got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestWriterStringRoundTrips(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " backslash \ slash /`, "\x00\x01\x1f\n\r\t", "é中😀", "bad \xff\xfe", "<>&\u2028"} {
		w := &writer{}
		w.str(s)
		var back string
		if err := json.Unmarshal(w.b, &back); err != nil {
			t.Fatalf("%q wrote %s: %v", s, w.b, err)
		}
		if want := string([]rune(s)); back != want {
			t.Errorf("%q wrote %s, read back %q", s, w.b, back)
		}
	}
}

func TestSkipAgreesWithValid(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `{"a":[1,2.5,-3e+2,true,false,null,{"b":"c"}]}`, ` { "a" : 1 , "b" : [ ] } `,
		`{"a":1,}`, `[1,]`, `{"a" 1}`, `01`, `1.`, `-`, `1e`, `tru`, `{"a":1}x`, `[`, `"\q"`,
	} {
		r := &reader{b: []byte(in)}
		r.skip()
		r.end()
		if json.Valid([]byte(in)) != (r.err == nil) {
			t.Errorf("%q: json.Valid %v, reader error %v", in, json.Valid([]byte(in)), r.err)
		}
	}
}

func FuzzReaderString(f *testing.F) {
	f.Add(`"\ud83d\ude00 \u00e9 \n"`)
	f.Add(`"\ud800\udbff"`)
	f.Fuzz(func(t *testing.T, in string) {
		var want string
		werr := json.Unmarshal([]byte(in), &want)
		r := &reader{b: []byte(in)}
		got := r.str()
		r.end()
		if werr == nil && (r.err != nil || got != want) {
			t.Fatalf("%q: got %q (%v), want %q", in, got, r.err, want)
		}
		if werr != nil && r.err == nil && strings.HasPrefix(in, `"`) {
			t.Fatalf("%q: encoding/json refuses it (%v), the reader read %q", in, werr, got)
		}
		w := &writer{}
		w.str(in)
		var back string
		if err := json.Unmarshal(w.b, &back); err != nil || back != string([]rune(in)) {
			t.Fatalf("writer: %q wrote %s, read back %q (%v)", in, w.b, back, err)
		}
		if !utf8.Valid(w.b) {
			t.Fatalf("writer: %q wrote invalid UTF-8", in)
		}
	})
}

// refWire is the request body as the driver wrote it with encoding/json
// before: the hand-written one must mean the same JSON.
func refWire(t *testing.T, in string) any {
	t.Helper()
	var req struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		System    string `json:"system"`
		Messages  []struct {
			Role    string `json:"role"`
			Content []struct {
				Type  string          `json:"type"`
				Text  string          `json:"text"`
				ID    string          `json:"id"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			} `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(in), &req); err != nil {
		t.Fatal(err)
	}
	var msgs []any
	for _, m := range req.Messages {
		content := []any{}
		for _, b := range m.Content {
			switch {
			case m.Role == "tool":
				content = append(content, map[string]any{"type": "tool_result", "tool_use_id": m.ToolCallID, "content": b.Text})
			case b.Type == "tool_call":
				content = append(content, map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": b.Input})
			default:
				content = append(content, map[string]any{"type": "text", "text": b.Text})
			}
		}
		role := m.Role
		if role == "tool" {
			role = "user"
		}
		msgs = append(msgs, map[string]any{"role": role, "content": content})
	}
	body := map[string]any{"model": req.Model, "max_tokens": req.MaxTokens, "messages": msgs, "stream": true}
	if req.System != "" {
		body["system"] = req.System
	}
	var tools []any
	for _, tl := range req.Tools {
		tools = append(tools, map[string]any{"name": tl.Name, "description": tl.Description, "input_schema": tl.Parameters})
	}
	if len(tools) > 0 {
		body["tools"] = tools
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	json.Unmarshal(b, &v)
	return v
}

func TestWireMatchesEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`{"model":"m","max_tokens":1024,"system":"be \"brief\"\n","messages":[{"role":"user","content":[{"type":"text","text":"echo hi \u00e9 😀"}]}],"tools":[],"params":{}}`,
		`{ "tools" : [ { "parameters" : {"type":"object","properties":{"m":{"type":"string"}}}, "description":"echoes", "name":"local/echo" } ],
		   "messages" : [
		     {"content":[{"input":{"message":"hi"},"name":"local/echo","id":"toolu_1","type":"tool_call"},{"text":"ok","type":"text"}],"role":"assistant"},
		     {"tool_call_id":"toolu_1","role":"tool","content":[{"type":"text","text":"hi\u0000\t"}]}
		   ],
		   "max_tokens" : 7, "model" : "claude", "continuation_id": "x", "params": {"temperature": 0.5, "stop": ["a", null]} }`,
	} {
		req, err := parseRequest([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		got := wire(req)
		var g any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("wire wrote %s: %v", got, err)
		}
		if want := refWire(t, in); !reflect.DeepEqual(g, want) {
			t.Errorf("wire wrote\n%s\nwant the same JSON as\n%v", got, want)
		}
	}
	if _, err := parseRequest([]byte(`{"model":"m",}`)); err == nil {
		t.Error("a request that is not JSON was read")
	}
}

func TestStreamEventsAnyOrderAndSpacing(t *testing.T) {
	sse := strings.Join([]string{
		`event: message_start`,
		`data: {"message":{"id":"msg_1","usage":{"output_tokens":1,"input_tokens":12},"content":[]},"type":"message_start"}`,
		``,
		`data: {"type":"ping"}`,
		`data: { "index" : 0 , "content_block" : { "text" : "" , "type" : "text" } , "type" : "content_block_start" }`,
		`data: {"delta":{"text":"Let me \u0065cho \"that\"","type":"text_delta"},"type":"content_block_delta","index":0}`,
		`data: {"type":"content_block_stop","index":0}`,
		`data: {"type":"content_block_start","index":1,"content_block":{"input":{},"name":"local/echo","id":"toolu_1","type":"tool_use"}}`,
		`data: {"type":"content_block_delta","index":1,"delta":{"partial_json":"{\"mess","type":"input_json_delta"}}`,
		`data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"age\":\"hi\"}"}}`,
		`data: {"type":"content_block_stop","index":1}`,
		`data: {"usage":{"output_tokens":7},"delta":{"stop_sequence":null,"stop_reason":"tool_use"},"type":"message_delta"}`,
		`data: {"type":"message_stop"}`,
	}, "\n")
	var chunks []string
	out, err := stream(strings.NewReader(sse), func(s string) { chunks = append(chunks, s) })
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.marshal(), &got); err != nil {
		t.Fatalf("%s: %v", out.marshal(), err)
	}
	var want map[string]any
	json.Unmarshal([]byte(`{"stop_reason":"tool_call","content":[{"type":"text","text":"Let me echo \"that\""},
		{"type":"tool_call","id":"toolu_1","name":"local/echo","input":{"message":"hi"}}],
		"usage":{"input_tokens":12,"output_tokens":7}}`), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("response %s", out.marshal())
	}
	if strings.Join(chunks, "|") != `Let me echo "that"` {
		t.Errorf("chunks %q", chunks)
	}
	for _, bad := range []string{
		`data: {"type":"content_block_start",}`,
		"data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}",
		`data: {"type":"content_block_start","content_block":{"type":"tool_use","id":"t","name":"n"}}` + "\n" +
			`data: {"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}` + "\n" +
			`data: {"type":"content_block_stop"}`,
	} {
		if _, err := stream(strings.NewReader(bad), func(string) {}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// refEvent is a stream event as the driver read it with encoding/json before.
type refEvent struct {
	Type    string `json:"type"`
	Message struct {
		Usage struct {
			InputTokens int64 `json:"input_tokens"`
		} `json:"usage"`
	} `json:"message"`
	ContentBlock struct {
		Type string `json:"type"`
		Text string `json:"text"`
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage struct {
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

// FuzzParseEvent: what parseEvent accepts is JSON, and where encoding/json
// reads an event (keys in lower case: encoding/json also matches other
// cases, which no provider sends) parseEvent reads the same fields.
func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"message_start","message":{"id":"m","usage":{"input_tokens":12,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}}`,
		`{ "delta" : { "text" : "caf\u00e9 \ud83d\ude00", "type" : "text_delta" }, "type" : "content_block_delta" }`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":7}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`,
		`{"type":"ping","extra":[1,2.5e3,true,null,{"a":"b"}]}`,
		`{"type":"content_block_start","content_block":{"type":"text"},"content_block":{"text":"x"},"delta":{"type":"a"},"delta":{"text":"b"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		ev, err := parseEvent([]byte(in))
		if err == nil && !json.Valid([]byte(in)) {
			t.Fatalf("%q is not JSON, parseEvent read %+v", in, ev)
		}
		var ref refEvent
		if json.Unmarshal([]byte(in), &ref) != nil || strings.ToLower(in) != in || !strings.HasPrefix(strings.TrimLeft(in, " \t\r\n"), "{") {
			return
		}
		if err != nil {
			t.Fatalf("%q: encoding/json reads it, parseEvent: %v", in, err)
		}
		want := event{Type: ref.Type, InputTokens: ref.Message.Usage.InputTokens, OutputTokens: ref.Usage.OutputTokens,
			Block:     block{Type: ref.ContentBlock.Type, Text: ref.ContentBlock.Text, ID: ref.ContentBlock.ID, Name: ref.ContentBlock.Name},
			DeltaType: ref.Delta.Type, Text: ref.Delta.Text, Partial: ref.Delta.PartialJSON, StopReason: ref.Delta.StopReason,
			ErrorMessage: ref.Error.Message}
		if !reflect.DeepEqual(ev, want) {
			t.Fatalf("%q:\nparseEvent   %+v\nencoding/json %+v", in, ev, want)
		}
	})
}
