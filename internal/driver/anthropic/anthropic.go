// Package anthropic is the built-in driver murmur/driver-anthropic: the
// normalized driver protocol over the Anthropic Messages API (POST
// <endpoint>/v1/messages, streaming), on the official anthropic-sdk-go. It is
// the only package that imports that SDK.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/driver"
)

// Name is the built-in's artifact name.
const Name = "murmur/driver-anthropic"

// DefaultEndpoint is the provider's public base URL, used when gateway.endpoint
// is empty.
const DefaultEndpoint = "https://api.anthropic.com"

// MaxRetries is how often a call is retried (connection errors, 408, 409, 429,
// 5xx, honouring retry-after), always within the call's context.
const MaxRetries = 2

// CodeNoKey is the diagnostic of an entry whose key is empty.
const CodeNoKey = "E-RUN-087"

// Driver is a murmur/driver-anthropic instance.
type Driver struct {
	info   driver.Info
	keyVar string
	msgs   sdk.MessageService
}

// New builds the driver. The client is constructed with the SDK's environment
// defaults switched off and every setting given explicitly, so no host
// ANTHROPIC_* variable (API key, auth token, base URL, profile, custom headers,
// OpenTelemetry switches) is ever read.
func New(cfg driver.Config) (*Driver, error) {
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	if cfg.APIKey == "" {
		return nil, diag.New(CodeNoKey, "%s: the driver entry's gateway.api_key is empty", Name).
			WithHint("set gateway.api_key to ${ANTHROPIC_API_KEY} (or another variable) and export it")
	}
	client := sdk.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(endpoint),
		option.WithAPIKey(cfg.APIKey),
		option.WithHTTPClient(driver.HTTPClient()),
		option.WithMaxRetries(MaxRetries),
		// Murmur traces inference itself (capsule.inference); the SDK's own
		// spans and trace headers stay off, explicitly, so its
		// ANTHROPIC_OPEN_TELEMETRY* variables are never consulted either.
		option.WithoutOpenTelemetry(),
		option.WithOpenTelemetryPropagation(false),
		option.WithOpenTelemetryTracesContentMode(option.OpenTelemetryContentModeMetadataOnly),
		option.WithOpenTelemetryTracesMaxContentBytes(1),
	)
	return &Driver{
		info:   driver.Info{Name: cfg.Name, Version: cfg.Version, Implementation: driver.ImplementationBuiltin},
		keyVar: cfg.KeyVariable,
		msgs:   client.Messages,
	}, nil
}

// Info names the driver.
func (d *Driver) Info() driver.Info { return d.info }

// Call sends one streaming Messages request and assembles the answer: text
// deltas go to chunk as they arrive, tool_use inputs are joined from their
// input_json_delta pieces.
func (d *Driver) Call(ctx context.Context, req *driver.Request, chunk driver.ChunkFunc) (*driver.Response, error) {
	params, err := toParams(req)
	if err != nil {
		return nil, &driver.Error{Kind: driver.KindMalformed, Driver: d.info.Name, Message: "the request cannot be sent", Err: err}
	}
	var opts []option.RequestOption
	for k, v := range req.Params {
		opts = append(opts, option.WithJSONSet(k, v))
	}
	stream := d.msgs.NewStreaming(ctx, params, opts...)
	defer stream.Close()

	var acc sdk.Message
	stopped := false
	for stream.Next() {
		ev := stream.Current()
		if err := acc.Accumulate(ev); err != nil {
			return nil, &driver.Error{Kind: driver.KindMalformed, Driver: d.info.Name, Message: "the response stream is out of order", Err: err}
		}
		switch ev.Type {
		case "content_block_delta":
			if ev.Delta.Type == "text_delta" && chunk != nil && ev.Delta.Text != "" {
				chunk(ev.Delta.Text)
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		return nil, d.classify(ctx, err)
	}
	if !stopped {
		return nil, &driver.Error{Kind: driver.KindIncomplete, Driver: d.info.Name, Message: "the response stream ended before message_stop"}
	}
	return d.toResponse(&acc)
}

// classify turns an SDK error into a *driver.Error.
func (d *Driver) classify(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return driver.Canceled(d.info.Name, ctx)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		if apiErr.StatusCode == 0 || apiErr.StatusCode == http.StatusOK {
			// An error event inside an accepted stream.
			return &driver.Error{Kind: driver.KindProvider, Driver: d.info.Name, Message: "the provider reported an error mid-stream", Err: errors.New(apiErr.Message)}
		}
		return driver.StatusError(d.info.Name, d.keyVar, apiErr.StatusCode, errors.New(providerMessage(apiErr)))
	}
	return driver.TransportError(d.info.Name, err)
}

func providerMessage(e *sdk.Error) string {
	if e.Message != "" {
		return e.Message
	}
	return http.StatusText(e.StatusCode)
}

// toResponse maps the accumulated message to the normalized response.
func (d *Driver) toResponse(m *sdk.Message) (*driver.Response, error) {
	resp := &driver.Response{
		Usage: &driver.Usage{InputTokens: m.Usage.InputTokens, OutputTokens: m.Usage.OutputTokens},
	}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			resp.Content = append(resp.Content, driver.TextBlock(b.Text))
		case "tool_use":
			in := bytes.TrimSpace(b.Input)
			if len(in) == 0 {
				in = []byte("{}")
			}
			if !json.Valid(in) {
				return nil, &driver.Error{Kind: driver.KindMalformed, Driver: d.info.Name,
					Message: fmt.Sprintf("the input of tool call %s (%s) is not JSON: %.200s", b.ID, b.Name, in)}
			}
			resp.Content = append(resp.Content, driver.ToolCallBlock(b.ID, b.Name, json.RawMessage(in)))
		}
		// thinking and server-tool blocks carry nothing the loop acts on.
	}
	switch m.StopReason {
	case sdk.StopReasonToolUse:
		resp.StopReason = driver.StopToolCall
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		resp.StopReason = driver.StopMaxTokens
	case "":
		return nil, &driver.Error{Kind: driver.KindMalformed, Driver: d.info.Name, Message: "the response has no stop_reason"}
	default: // end_turn, stop_sequence, pause_turn, refusal: the turn is over
		resp.StopReason = driver.StopEndTurn
	}
	if resp.StopReason == driver.StopToolCall && len(resp.ToolCalls()) == 0 {
		return nil, &driver.Error{Kind: driver.KindMalformed, Driver: d.info.Name, Message: "stop_reason tool_use without a tool_use block"}
	}
	return resp, nil
}

// toParams maps the normalized request to Messages parameters. Tool messages
// become tool_result blocks of a user message; consecutive user-side messages
// merge into one, as the API wants results right after the assistant turn that
// asked for them.
func toParams(req *driver.Request) (sdk.MessageNewParams, error) {
	p := sdk.MessageNewParams{
		Model:     sdk.Model(req.Model),
		MaxTokens: req.MaxTokens,
	}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for _, t := range req.Tools {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return p, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		tp := &sdk.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tp})
	}
	type turn struct {
		role   string
		blocks []sdk.ContentBlockParamUnion
	}
	var turns []turn
	for i, m := range req.Messages {
		var blocks []sdk.ContentBlockParamUnion
		role := driver.RoleUser
		switch m.Role {
		case driver.RoleUser:
			blocks = textBlocks(m.Content)
		case driver.RoleTool:
			if m.ToolCallID == "" {
				return p, fmt.Errorf("message %d: a tool message without tool_call_id", i)
			}
			blocks = []sdk.ContentBlockParamUnion{sdk.NewToolResultBlock(m.ToolCallID, m.Text(), false)}
		case driver.RoleAssistant:
			role = driver.RoleAssistant
			for _, b := range m.Content {
				switch b.Type {
				case driver.BlockText:
					if b.Text != "" {
						blocks = append(blocks, sdk.NewTextBlock(b.Text))
					}
				case driver.BlockToolCall:
					in := b.Input
					if len(bytes.TrimSpace(in)) == 0 || !json.Valid(in) {
						in = json.RawMessage("{}")
					}
					blocks = append(blocks, sdk.NewToolUseBlock(b.ID, in, b.Name))
				}
			}
		default:
			return p, fmt.Errorf("message %d: role %q is not user, assistant or tool", i, m.Role)
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(turns); n > 0 && turns[n-1].role == role {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			continue
		}
		turns = append(turns, turn{role, blocks})
	}
	for _, t := range turns {
		if t.role == driver.RoleAssistant {
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(t.blocks...))
		} else {
			p.Messages = append(p.Messages, sdk.NewUserMessage(t.blocks...))
		}
	}
	return p, nil
}

// textBlocks keeps the non-empty text blocks: the API refuses empty ones.
func textBlocks(bs []driver.Block) []sdk.ContentBlockParamUnion {
	var out []sdk.ContentBlockParamUnion
	for _, b := range bs {
		if b.Type == driver.BlockText && b.Text != "" {
			out = append(out, sdk.NewTextBlock(b.Text))
		}
	}
	return out
}

// inputSchema maps a tool's JSON Schema to input_schema: properties and
// required in their fields, every other keyword kept as it is.
func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	// An empty properties object, never none: the SDK omits a zero
	// input_schema altogether, and the Messages API requires one.
	s := sdk.ToolInputSchemaParam{Properties: map[string]any{}}
	if len(bytes.TrimSpace(raw)) == 0 {
		return s, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return s, fmt.Errorf("parameters is not a JSON object: %w", err)
	}
	if t, ok := m["type"]; ok && t != "object" {
		return s, fmt.Errorf("parameters has type %v; a tool's input is an object", t)
	}
	delete(m, "type")
	if props, ok := m["properties"]; ok {
		s.Properties = props
		delete(m, "properties")
	}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				s.Required = append(s.Required, name)
			}
		}
		delete(m, "required")
	}
	if len(m) > 0 {
		s.ExtraFields = m
	}
	return s, nil
}
