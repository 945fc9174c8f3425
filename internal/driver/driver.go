// Package driver holds the normalized driver protocol (docs/drivers.md): the one
// request and response shape every driver speaks, whatever provider or
// component sits behind it, and the Driver interface the agent loop calls once
// per turn.
//
// The Go types marshal to exactly the JSON a stored driver component receives
// in tool-input.data and answers in tool-result.data, so the WASM adapter uses
// them as the wire format unchanged. The built-in drivers live in the
// subpackages (anthropic, openai, replay); package builtin constructs them by
// name. Provider SDKs are imported only by their own subpackage, so nothing
// else links them.
package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// Roles of a message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool" // a tool's result; the message carries tool_call_id
)

// Block types.
const (
	BlockText     = "text"
	BlockToolCall = "tool_call"
)

// Stop reasons of a response.
const (
	StopEndTurn   = "end_turn"   // the model finished; no tool call asked for
	StopToolCall  = "tool_call"  // the content holds tool_call blocks to run
	StopMaxTokens = "max_tokens" // the output hit max_tokens
	StopError     = "error"      // a stored driver reports a failure it could not recover
)

// Implementations of a driver, for the trace's session_start.driver.
const (
	ImplementationBuiltin = "builtin"
	ImplementationWASM    = "wasm"
)

// Block is one content block: a text ({"type":"text","text"}) or a tool call
// ({"type":"tool_call","id","name","input"}). Input is the tool's input JSON,
// an object for any call the loop can run.
type Block struct {
	Type  string
	Text  string
	ID    string
	Name  string
	Input json.RawMessage
}

// TextBlock returns a text block.
func TextBlock(text string) Block { return Block{Type: BlockText, Text: text} }

// ToolCallBlock returns a tool_call block.
func ToolCallBlock(id, name string, input json.RawMessage) Block {
	return Block{Type: BlockToolCall, ID: id, Name: name, Input: input}
}

type textBlockJSON struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type toolCallBlockJSON struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// MarshalJSON writes the fields of the block's type only, so a text block never
// carries an empty "input" and a tool call always carries one ({} when unset).
func (b Block) MarshalJSON() ([]byte, error) {
	switch b.Type {
	case BlockText:
		return json.Marshal(textBlockJSON{Type: b.Type, Text: b.Text})
	case BlockToolCall:
		in := b.Input
		if len(bytes.TrimSpace(in)) == 0 {
			in = json.RawMessage("{}")
		}
		return json.Marshal(toolCallBlockJSON{Type: b.Type, ID: b.ID, Name: b.Name, Input: in})
	default:
		return nil, fmt.Errorf("driver: block type %q is neither %q nor %q", b.Type, BlockText, BlockToolCall)
	}
}

// UnmarshalJSON reads a block of either type; an unknown type is an error.
func (b *Block) UnmarshalJSON(data []byte) error {
	var raw struct {
		Type  string          `json:"type"`
		Text  *string         `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	switch raw.Type {
	case BlockText:
		if raw.Text == nil {
			return fmt.Errorf("text block without \"text\"")
		}
		*b = TextBlock(*raw.Text)
	case BlockToolCall:
		if raw.Name == "" {
			return fmt.Errorf("tool_call block without \"name\"")
		}
		*b = ToolCallBlock(raw.ID, raw.Name, raw.Input)
	default:
		return fmt.Errorf("block type %q is neither %q nor %q", raw.Type, BlockText, BlockToolCall)
	}
	return nil
}

// Message is one message of the conversation. A tool message holds the result of
// the tool call ToolCallID names, as text blocks.
type Message struct {
	Role       string  `json:"role"`
	Content    []Block `json:"content"`
	ToolCallID string  `json:"tool_call_id,omitempty"`
}

// UnmarshalJSON also accepts content given as a plain string (one text block), the
// form some published driver components write tool results in.
func (m *Message) UnmarshalJSON(data []byte) error {
	var raw struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*m = Message{Role: raw.Role, ToolCallID: raw.ToolCallID}
	c := bytes.TrimSpace(raw.Content)
	switch {
	case len(c) == 0 || bytes.Equal(c, []byte("null")):
	case c[0] == '"':
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return err
		}
		m.Content = []Block{TextBlock(s)}
	default:
		if err := json.Unmarshal(c, &m.Content); err != nil {
			return err
		}
	}
	return nil
}

// Text joins the message's text blocks.
func (m Message) Text() string { return joinText(m.Content) }

// Tool is one tool the model may call. Parameters is its input JSON Schema.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one turn's call (docs/drivers.md).
type Request struct {
	Model     string    `json:"model"`
	MaxTokens int64     `json:"max_tokens"`
	System    string    `json:"system"`
	Messages  []Message `json:"messages"`
	Tools     []Tool    `json:"tools"`
	// Params are provider parameters passed through as top-level fields of the
	// provider request (temperature, top_p, …), never interpreted by Murmur.
	Params map[string]any `json:"params"`
	// ContinuationID is set, for a stored driver that returned one, on the next
	// turn of the same task; Messages then holds only the messages added since.
	ContinuationID string `json:"continuation_id,omitempty"`
}

// MarshalJSON writes empty lists and maps as [] and {}, never null, so a component
// built for the published protocol can index them without a nil check.
func (r Request) MarshalJSON() ([]byte, error) {
	type plain Request
	p := plain(r)
	if p.Messages == nil {
		p.Messages = []Message{}
	}
	for i := range p.Messages {
		if p.Messages[i].Content == nil {
			p.Messages[i].Content = []Block{}
		}
	}
	if p.Tools == nil {
		p.Tools = []Tool{}
	}
	for i := range p.Tools {
		if len(p.Tools[i].Parameters) == 0 {
			p.Tools[i].Parameters = json.RawMessage(`{"type":"object"}`)
		}
	}
	if p.Params == nil {
		p.Params = map[string]any{}
	}
	return json.Marshal(p)
}

// Usage is the provider-reported token count of one call.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Response is one turn's answer (docs/drivers.md).
type Response struct {
	StopReason string  `json:"stop_reason"`
	Content    []Block `json:"content"`
	Usage      *Usage  `json:"usage,omitempty"`
	// ContinuationID is not part of the response JSON: the WASM adapter fills it
	// from the tool result's metadata, and the loop sends it back next turn.
	ContinuationID string `json:"-"`
}

// MarshalJSON writes an empty content list as [], never null.
func (r Response) MarshalJSON() ([]byte, error) {
	type plain Response
	p := plain(r)
	if p.Content == nil {
		p.Content = []Block{}
	}
	return json.Marshal(p)
}

// Text joins the response's text blocks.
func (r *Response) Text() string { return joinText(r.Content) }

// ToolCalls returns the response's tool_call blocks, in order.
func (r *Response) ToolCalls() []Block {
	var out []Block
	for _, b := range r.Content {
		if b.Type == BlockToolCall {
			out = append(out, b)
		}
	}
	return out
}

// Validate reports a response the loop cannot act on: an unknown stop reason, or
// a tool_call stop without a tool call.
func (r *Response) Validate() error {
	switch r.StopReason {
	case StopEndTurn, StopMaxTokens, StopError:
	case StopToolCall:
		if len(r.ToolCalls()) == 0 {
			return fmt.Errorf("stop_reason %q without a tool_call block", r.StopReason)
		}
	default:
		return fmt.Errorf("stop_reason %q is not end_turn, tool_call, max_tokens or error", r.StopReason)
	}
	return nil
}

func joinText(bs []Block) string {
	var s []byte
	for _, b := range bs {
		if b.Type == BlockText {
			s = append(s, b.Text...)
		}
	}
	return string(s)
}

// Info names a driver for the trace's session_start.driver.
type Info struct {
	Name           string `json:"name"`
	Version        string `json:"version"`
	Implementation string `json:"implementation"` // builtin | wasm
	// SHA256 is the hex digest of what the driver runs: a stored driver's
	// artifact (its .mur.zip); for the replay driver, the transcript's bytes; empty for the
	// provider built-ins, whose code is mur itself.
	SHA256 string `json:"sha256"`
}

// ChunkFunc receives streamed text as it arrives, in order. It may be nil.
type ChunkFunc func(text string)

// Driver runs one turn: it sends req to its model and returns the normalized
// answer, passing each piece of streamed text to chunk as it arrives (the
// concatenation of the pieces is the response's text). The call is bounded by
// ctx; a driver's own retries stay inside it. A failure is an *Error whose Kind
// says what went wrong. A Driver is safe for concurrent calls.
type Driver interface {
	Info() Info
	Call(ctx context.Context, req *Request, chunk ChunkFunc) (*Response, error)
}

// Config is what a built-in driver is constructed from: the manifest's driver
// artifact entry, with its key already resolved.
type Config struct {
	Name    string // the artifact name, e.g. murmur/driver-anthropic
	Version string // the version the manifest asks for
	// Endpoint is gateway.endpoint, the provider's base URL; empty selects the
	// provider's public one.
	Endpoint string
	// APIKey is the resolved gateway.api_key; the driver sends it to Endpoint
	// only.
	APIKey string
	// KeyVariable names the manifest variable the key came from (the NAME of
	// ${NAME}), for messages; empty when the key was a literal.
	KeyVariable string
	// Settings is the entry's config map ({} when it has none).
	Settings map[string]any
	// Dir is the manifest's directory: relative paths in Settings resolve
	// against it.
	Dir string
}
