//go:build wasip1

// Command driver-anthropic-http is a Go-kit driver component (contracts §14): each
// call is one turn. It maps the normalized request to an Anthropic Messages request,
// POSTs it with streaming to $MURMUR_INFERENCE_ENDPOINT/v1/messages through the
// kit's wasi:http client with x-api-key $MURMUR_INFERENCE_API_KEY (a placeholder the
// host replaces with the real key on the gateway request only), relays text deltas
// as murmur:text/chunks, and answers the normalized response.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/murmur-go/murmur/guest"
	"github.com/murmur-go/murmur/guest/wasihttp"
)

func init() { guest.Tool(turn) }

func main() {}

type block struct {
	Type  string          `json:"type"`
	Text  string          `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type request struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	System    string `json:"system"`
	Messages  []struct {
		Role       string  `json:"role"`
		Content    []block `json:"content"`
		ToolCallID string  `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"tools"`
}

type response struct {
	StopReason string  `json:"stop_reason"`
	Content    []block `json:"content"`
	Usage      struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
}

func turn(in guest.ToolInput) guest.ToolResult {
	if in.Data == nil {
		return failed("no request")
	}
	var req request
	if err := json.Unmarshal([]byte(*in.Data), &req); err != nil {
		return failed("the request is not JSON: " + err.Error())
	}
	out, err := call(req)
	if err != nil {
		return failed(err.Error())
	}
	b, _ := json.Marshal(out)
	return guest.ToolResult{Status: guest.StatusPassed, Data: guest.Some(string(b))}
}

func failed(msg string) guest.ToolResult {
	return guest.ToolResult{Status: guest.StatusFailed, Summary: guest.Some(msg)}
}

// wire is the Anthropic Messages request body.
func wire(req request) map[string]any {
	var msgs []map[string]any
	for _, m := range req.Messages {
		var content []map[string]any
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
	var tools []map[string]any
	for _, t := range req.Tools {
		tools = append(tools, map[string]any{"name": t.Name, "description": t.Description, "input_schema": t.Parameters})
	}
	if len(tools) > 0 {
		body["tools"] = tools
	}
	return body
}

func call(req request) (*response, error) {
	body, _ := json.Marshal(wire(req))
	hreq, err := http.NewRequest("POST", strings.TrimSuffix(os.Getenv("MURMUR_INFERENCE_ENDPOINT"), "/")+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("content-type", "application/json")
	hreq.Header.Set("accept", "text/event-stream")
	hreq.Header.Set("anthropic-version", "2023-06-01")
	hreq.Header.Set("x-api-key", os.Getenv("MURMUR_INFERENCE_API_KEY"))
	resp, err := (&http.Client{Transport: wasihttp.Transport()}).Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("provider answered %s: %s", resp.Status, b)
	}
	return stream(resp.Body)
}

// stream reads the Messages SSE stream into the normalized response.
func stream(r io.Reader) (*response, error) {
	out := &response{StopReason: "end_turn"}
	var cur *block
	var partial strings.Builder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Usage struct {
					InputTokens int64 `json:"input_tokens"`
				} `json:"usage"`
			} `json:"message"`
			ContentBlock block `json:"content_block"`
			Delta        struct {
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
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return nil, fmt.Errorf("a stream event is not JSON: %w", err)
		}
		switch ev.Type {
		case "message_start":
			out.Usage.InputTokens = ev.Message.Usage.InputTokens
		case "content_block_start":
			b := ev.ContentBlock
			cur = &b
			partial.Reset()
		case "content_block_delta":
			if cur == nil {
				continue
			}
			switch ev.Delta.Type {
			case "text_delta":
				cur.Text += ev.Delta.Text
				guest.EmitChunk(ev.Delta.Text)
			case "input_json_delta":
				partial.WriteString(ev.Delta.PartialJSON)
			}
		case "content_block_stop":
			if cur == nil {
				continue
			}
			if cur.Type == "tool_use" {
				in := partial.String()
				if in == "" {
					in = "{}"
				}
				out.Content = append(out.Content, block{Type: "tool_call", ID: cur.ID, Name: cur.Name, Input: json.RawMessage(in)})
			} else {
				out.Content = append(out.Content, block{Type: "text", Text: cur.Text})
			}
			cur = nil
		case "message_delta":
			out.Usage.OutputTokens = ev.Usage.OutputTokens
			switch ev.Delta.StopReason {
			case "tool_use":
				out.StopReason = "tool_call"
			case "max_tokens":
				out.StopReason = "max_tokens"
			case "end_turn", "stop_sequence", "":
				out.StopReason = "end_turn"
			default:
				out.StopReason = "error"
			}
		case "error":
			return nil, fmt.Errorf("provider stream error: %s", ev.Error.Message)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
