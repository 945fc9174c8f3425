package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
)

func main() {}

type block struct {
	Type, Text, ID, Name string
	Input                []byte // raw JSON
}

type message struct {
	Role       string
	Content    []block
	ToolCallID string
}

type tool struct {
	Name, Description string
	Parameters        []byte // raw JSON
}

// request is the normalized request (contracts §14), the fields this driver uses.
type request struct {
	Model     string
	MaxTokens int64
	System    string
	Messages  []message
	Tools     []tool
}

// response is the normalized response.
type response struct {
	StopReason                string
	Content                   []block
	InputTokens, OutputTokens int64
}

// parseRequest reads the normalized request. A message's content may be a
// list of blocks or a plain string (one text block).
func parseRequest(data []byte) (request, error) {
	var req request
	r := &reader{b: data}
	r.object(func(k string) {
		switch k {
		case "model":
			req.Model = r.str()
		case "max_tokens":
			req.MaxTokens = r.int()
		case "system":
			req.System = r.str()
		case "messages":
			req.Messages = nil // a repeated key: the last one counts, as in encoding/json
			r.array(func() { req.Messages = append(req.Messages, parseMessage(r)) })
		case "tools":
			req.Tools = nil
			r.array(func() {
				var t tool
				r.object(func(k string) {
					switch k {
					case "name":
						t.Name = r.str()
					case "description":
						t.Description = r.str()
					case "parameters":
						t.Parameters = r.skip()
					default:
						r.skip()
					}
				})
				req.Tools = append(req.Tools, t)
			})
		default:
			r.skip()
		}
	})
	r.end()
	return req, r.err
}

func parseMessage(r *reader) message {
	var m message
	r.object(func(k string) {
		switch k {
		case "role":
			m.Role = r.str()
		case "tool_call_id":
			m.ToolCallID = r.str()
		case "content":
			if r.peek() == '"' {
				m.Content = []block{{Type: "text", Text: r.str()}}
				return
			}
			m.Content = nil
			r.array(func() { m.Content = append(m.Content, parseBlock(r)) })
		default:
			r.skip()
		}
	})
	return m
}

func parseBlock(r *reader) block {
	var b block
	parseBlockInto(r, &b)
	return b
}

// parseBlockInto reads a block's fields into b (a repeated key merges into
// the same block, as encoding/json does).
func parseBlockInto(r *reader, b *block) {
	r.object(func(k string) {
		switch k {
		case "type":
			b.Type = r.str()
		case "text":
			b.Text = r.str()
		case "id":
			b.ID = r.str()
		case "name":
			b.Name = r.str()
		case "input":
			b.Input = r.skip()
		default:
			r.skip()
		}
	})
}

// rawOr is raw, or def when raw is empty or null.
func rawOr(raw []byte, def string) string {
	if len(raw) == 0 || string(raw) == "null" {
		return def
	}
	return string(raw)
}

// wire is the Anthropic Messages request body, streaming.
func wire(req request) []byte {
	w := &writer{b: make([]byte, 0, 1024)}
	w.raw(`{"model":`)
	w.str(req.Model)
	w.raw(`,"max_tokens":`)
	w.int(req.MaxTokens)
	w.raw(`,"stream":true`)
	if req.System != "" {
		w.raw(`,"system":`)
		w.str(req.System)
	}
	w.raw(`,"messages":[`)
	for i, m := range req.Messages {
		if i > 0 {
			w.raw(",")
		}
		role := m.Role
		if role == "tool" {
			role = "user"
		}
		w.raw(`{"role":`)
		w.str(role)
		w.raw(`,"content":[`)
		for j, b := range m.Content {
			if j > 0 {
				w.raw(",")
			}
			switch {
			case m.Role == "tool":
				w.raw(`{"type":"tool_result","tool_use_id":`)
				w.str(m.ToolCallID)
				w.raw(`,"content":`)
				w.str(b.Text)
			case b.Type == "tool_call":
				w.raw(`{"type":"tool_use","id":`)
				w.str(b.ID)
				w.raw(`,"name":`)
				w.str(b.Name)
				w.raw(`,"input":`)
				w.raw(rawOr(b.Input, "{}"))
			default:
				w.raw(`{"type":"text","text":`)
				w.str(b.Text)
			}
			w.raw("}")
		}
		w.raw("]}")
	}
	w.raw("]")
	if len(req.Tools) > 0 {
		w.raw(`,"tools":[`)
		for i, t := range req.Tools {
			if i > 0 {
				w.raw(",")
			}
			w.raw(`{"name":`)
			w.str(t.Name)
			w.raw(`,"description":`)
			w.str(t.Description)
			w.raw(`,"input_schema":`)
			w.raw(rawOr(t.Parameters, `{"type":"object"}`))
			w.raw("}")
		}
		w.raw("]")
	}
	w.raw("}")
	return w.b
}

// marshal writes the normalized response.
func (out *response) marshal() []byte {
	w := &writer{b: make([]byte, 0, 256)}
	w.raw(`{"stop_reason":`)
	w.str(out.StopReason)
	w.raw(`,"content":[`)
	for i, b := range out.Content {
		if i > 0 {
			w.raw(",")
		}
		if b.Type == "tool_call" {
			w.raw(`{"type":"tool_call","id":`)
			w.str(b.ID)
			w.raw(`,"name":`)
			w.str(b.Name)
			w.raw(`,"input":`)
			w.raw(rawOr(b.Input, "{}"))
		} else {
			w.raw(`{"type":"text","text":`)
			w.str(b.Text)
		}
		w.raw("}")
	}
	w.raw(`],"usage":{"input_tokens":`)
	w.int(out.InputTokens)
	w.raw(`,"output_tokens":`)
	w.int(out.OutputTokens)
	w.raw("}}")
	return w.b
}

// event is the fields of a Messages stream event this driver reads.
type event struct {
	Type                      string
	InputTokens, OutputTokens int64
	Block                     block // content_block
	DeltaType, Text, Partial  string
	StopReason, ErrorMessage  string
}

func parseEvent(data []byte) (event, error) {
	var ev event
	r := &reader{b: data}
	// fields reads an object's fields of interest: want names each key's reader.
	fields := func(want func(k string) bool) {
		r.object(func(k string) {
			if !want(k) {
				r.skip()
			}
		})
	}
	fields(func(k string) bool {
		switch k {
		case "type":
			ev.Type = r.str()
		case "message":
			fields(func(k string) bool {
				if k != "usage" {
					return false
				}
				fields(func(k string) bool {
					if k != "input_tokens" {
						return false
					}
					ev.InputTokens = r.int()
					return true
				})
				return true
			})
		case "content_block":
			parseBlockInto(r, &ev.Block)
		case "delta":
			fields(func(k string) bool {
				switch k {
				case "type":
					ev.DeltaType = r.str()
				case "text":
					ev.Text = r.str()
				case "partial_json":
					ev.Partial = r.str()
				case "stop_reason":
					ev.StopReason = r.str()
				default:
					return false
				}
				return true
			})
		case "usage":
			fields(func(k string) bool {
				if k != "output_tokens" {
					return false
				}
				ev.OutputTokens = r.int()
				return true
			})
		case "error":
			fields(func(k string) bool {
				if k != "message" {
					return false
				}
				ev.ErrorMessage = r.str()
				return true
			})
		default:
			return false
		}
		return true
	})
	r.end()
	ev.Block.Input = nil // the scanner's buffer: not kept
	return ev, r.err
}

// stream reads the Messages SSE stream into the normalized response,
// handing each text delta to emit as it comes.
func stream(body io.Reader, emit func(string)) (*response, error) {
	out := &response{StopReason: "end_turn"}
	var cur *block
	var partial strings.Builder
	sc := bufio.NewScanner(body)
	// A small first buffer: every page the guest touches is one the host
	// restores after the turn. It grows as long lines need.
	sc.Buffer(make([]byte, 4<<10), 8<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		ev, err := parseEvent(data)
		if err != nil {
			return nil, errors.New("a stream event is not JSON: " + err.Error())
		}
		switch ev.Type {
		case "message_start":
			out.InputTokens = ev.InputTokens
		case "content_block_start":
			b := ev.Block
			cur = &b
			partial.Reset()
		case "content_block_delta":
			if cur == nil {
				continue
			}
			switch ev.DeltaType {
			case "text_delta":
				cur.Text += ev.Text
				emit(ev.Text)
			case "input_json_delta":
				partial.WriteString(ev.Partial)
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
				v := &reader{b: []byte(in)}
				v.skip()
				v.end()
				if v.err != nil {
					return nil, errors.New("the tool call's input is not JSON: " + v.err.Error())
				}
				out.Content = append(out.Content, block{Type: "tool_call", ID: cur.ID, Name: cur.Name, Input: []byte(in)})
			} else {
				out.Content = append(out.Content, block{Type: "text", Text: cur.Text})
			}
			cur = nil
		case "message_delta":
			out.OutputTokens = ev.OutputTokens
			switch ev.StopReason {
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
			return nil, errors.New("provider stream error: " + ev.ErrorMessage)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
