// Package openai is the built-in driver murmur/driver-openai: the normalized
// driver protocol over OpenAI Chat Completions (POST <endpoint>/chat/completions,
// streaming), on the official openai-go, against OpenAI or any compatible
// server (vLLM, Ollama, …). It is the only package that imports that SDK.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/driver"
)

// Name is the built-in's artifact name.
const Name = "murmur/driver-openai"

// DefaultEndpoint is the provider's public base URL, used when gateway.endpoint
// is empty.
const DefaultEndpoint = "https://api.openai.com/v1"

// MaxRetries is how often a call is retried (connection errors, 408, 409, 429,
// 5xx, honouring retry-after), always within the call's context.
const MaxRetries = 2

// Settings keys of the driver entry's config.
const (
	// SettingMaxTokensField names the request field max_tokens goes in:
	// "max_completion_tokens" (the default, OpenAI's current field) or
	// "max_tokens" (older compatible servers).
	SettingMaxTokensField = "max_tokens_field"
)

// CodeBadConfig is the diagnostic of an entry whose config the driver cannot use.
const CodeBadConfig = "E-RUN-088"

// Driver is a murmur/driver-openai instance.
type Driver struct {
	info           driver.Info
	keyVar         string
	legacyMaxField bool
	completions    sdk.ChatCompletionService
}

// New builds the driver. It builds the chat-completions service directly from
// explicit options instead of through openai.NewClient, whose defaults read
// OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_ORG_ID, OPENAI_PROJECT_ID and the
// like from the host: none of them is ever read.
func New(cfg driver.Config) (*Driver, error) {
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	d := &Driver{
		info:   driver.Info{Name: cfg.Name, Version: cfg.Version, Implementation: driver.ImplementationBuiltin},
		keyVar: cfg.KeyVariable,
	}
	switch f := cfg.Settings[SettingMaxTokensField]; f {
	case nil, "max_completion_tokens":
	case "max_tokens":
		d.legacyMaxField = true
	default:
		return nil, diag.New(CodeBadConfig, "%s: the driver entry's config.%s is %v", Name, SettingMaxTokensField, f).
			WithHint("use max_completion_tokens (the default) or max_tokens")
	}
	opts := []option.RequestOption{
		option.WithBaseURL(endpoint),
		option.WithHTTPClient(driver.HTTPClient()),
		option.WithMaxRetries(MaxRetries),
	}
	// A local compatible server (Ollama, vLLM) may need no key.
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	d.completions = sdk.NewChatCompletionService(opts...)
	return d, nil
}

// Info names the driver.
func (d *Driver) Info() driver.Info { return d.info }

type toolAcc struct {
	index int64
	id    string
	name  string
	args  strings.Builder
}

// Call sends one streaming chat-completions request (with
// stream_options.include_usage) and assembles the answer: content deltas go to
// chunk as they arrive, tool calls are joined by index from their pieces.
func (d *Driver) Call(ctx context.Context, req *driver.Request, chunk driver.ChunkFunc) (*driver.Response, error) {
	params, err := d.toParams(req)
	if err != nil {
		return nil, &driver.Error{Kind: driver.KindMalformed, Driver: d.info.Name, Message: "the request cannot be sent", Err: err}
	}
	var opts []option.RequestOption
	for k, v := range req.Params {
		opts = append(opts, option.WithJSONSet(k, v))
	}
	// The response's media type, to name a server that answered with one
	// JSON object (it ignored stream: true) rather than an event stream.
	var mediaType atomic.Value
	opts = append(opts, option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(r)
		if res != nil {
			mediaType.Store(res.Header.Get("Content-Type"))
		}
		return res, err
	}))
	stream := d.completions.NewStreaming(ctx, params, opts...)
	defer stream.Close()

	var (
		text   strings.Builder
		tools  = map[int64]*toolAcc{}
		finish string
		usage  *driver.Usage
	)
	for stream.Next() {
		c := stream.Current()
		if c.JSON.Usage.Valid() {
			usage = &driver.Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens}
		}
		for _, ch := range c.Choices {
			if ch.Index != 0 {
				continue // one choice is asked for; others would be another answer
			}
			if s := ch.Delta.Content; s != "" {
				text.WriteString(s)
				if chunk != nil {
					chunk(s)
				}
			}
			for _, tc := range ch.Delta.ToolCalls {
				a := tools[tc.Index]
				if a == nil {
					a = &toolAcc{index: tc.Index}
					tools[tc.Index] = a
				}
				if tc.ID != "" {
					a.id = tc.ID
				}
				if tc.Function.Name != "" {
					a.name += tc.Function.Name
				}
				a.args.WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, d.classify(ctx, err)
	}
	if finish == "" {
		if ct, _ := mediaType.Load().(string); !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "text/event-stream") {
			return nil, &driver.Error{Kind: driver.KindMalformed, Driver: d.info.Name, Message: fmt.Sprintf(
				"the server answered with %q, not a stream: %s needs an OpenAI-compatible server that streams chat completions (\"stream\": true, answered as text/event-stream); turn streaming on in the server, or use one that supports it",
				ct, d.info.Name)}
		}
		return nil, &driver.Error{Kind: driver.KindIncomplete, Driver: d.info.Name, Message: "the response stream ended without a finish_reason"}
	}
	return d.toResponse(text.String(), tools, finish, usage)
}

func (d *Driver) toResponse(text string, tools map[int64]*toolAcc, finish string, usage *driver.Usage) (*driver.Response, error) {
	resp := &driver.Response{Usage: usage}
	if resp.Usage == nil {
		resp.Usage = &driver.Usage{}
	}
	if text != "" {
		resp.Content = append(resp.Content, driver.TextBlock(text))
	}
	order := make([]*toolAcc, 0, len(tools))
	for _, a := range tools {
		order = append(order, a)
	}
	sort.Slice(order, func(i, j int) bool { return order[i].index < order[j].index })
	for _, a := range order {
		if a.name == "" {
			return nil, &driver.Error{Kind: driver.KindMalformed, Driver: d.info.Name, Message: fmt.Sprintf("tool call %d has no function name", a.index)}
		}
		in := bytes.TrimSpace([]byte(a.args.String()))
		if len(in) == 0 {
			in = []byte("{}")
		}
		if !json.Valid(in) {
			return nil, &driver.Error{Kind: driver.KindMalformed, Driver: d.info.Name,
				Message: fmt.Sprintf("the arguments of tool call %s (%s) are not JSON: %.200s", a.id, a.name, in)}
		}
		resp.Content = append(resp.Content, driver.ToolCallBlock(a.id, a.name, json.RawMessage(in)))
	}
	switch finish {
	case "tool_calls", "function_call":
		resp.StopReason = driver.StopToolCall
	case "length":
		resp.StopReason = driver.StopMaxTokens
	default: // stop, content_filter: the turn is over
		resp.StopReason = driver.StopEndTurn
		if len(resp.ToolCalls()) > 0 {
			// Some compatible servers end a tool-calling turn with "stop".
			resp.StopReason = driver.StopToolCall
		}
	}
	if resp.StopReason == driver.StopToolCall && len(resp.ToolCalls()) == 0 {
		return nil, &driver.Error{Kind: driver.KindMalformed, Driver: d.info.Name, Message: "finish_reason tool_calls without a tool call"}
	}
	return resp, nil
}

// classify turns an SDK error into a *driver.Error.
func (d *Driver) classify(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return driver.Canceled(d.info.Name, ctx)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) && apiErr.StatusCode != 0 {
		msg := apiErr.Message
		if msg == "" {
			msg = http.StatusText(apiErr.StatusCode)
		}
		return driver.StatusError(d.info.Name, d.keyVar, apiErr.StatusCode, errors.New(msg))
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return &driver.Error{Kind: driver.KindProvider, Driver: d.info.Name, Message: "the provider reported an error mid-stream", Err: err}
	}
	return driver.TransportError(d.info.Name, err)
}

// toParams maps the normalized request to chat-completions parameters: the
// system prompt as the first (system) message, tool calls of an assistant
// message as its tool_calls, tool messages as role tool.
func (d *Driver) toParams(req *driver.Request) (sdk.ChatCompletionNewParams, error) {
	p := sdk.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.Model),
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)},
	}
	if req.MaxTokens > 0 {
		if d.legacyMaxField {
			p.MaxTokens = sdk.Int(req.MaxTokens)
		} else {
			p.MaxCompletionTokens = sdk.Int(req.MaxTokens)
		}
	}
	if req.System != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(req.System))
	}
	for _, t := range req.Tools {
		def := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			def.Description = sdk.String(t.Description)
		}
		if len(bytes.TrimSpace(t.Parameters)) > 0 {
			var m map[string]any
			if err := json.Unmarshal(t.Parameters, &m); err != nil {
				return p, fmt.Errorf("tool %s: parameters is not a JSON object: %w", t.Name, err)
			}
			def.Parameters = m
		} else {
			def.Parameters = shared.FunctionParameters{"type": "object"}
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionFunctionTool(def))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case driver.RoleUser:
			p.Messages = append(p.Messages, sdk.UserMessage(m.Text()))
		case driver.RoleTool:
			if m.ToolCallID == "" {
				return p, fmt.Errorf("message %d: a tool message without tool_call_id", i)
			}
			p.Messages = append(p.Messages, sdk.ToolMessage(m.Text(), m.ToolCallID))
		case driver.RoleAssistant:
			a := sdk.ChatCompletionAssistantMessageParam{}
			if s := m.Text(); s != "" {
				a.Content.OfString = sdk.String(s)
			}
			for _, b := range m.Content {
				if b.Type != driver.BlockToolCall {
					continue
				}
				args := string(bytes.TrimSpace(b.Input))
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID:       b.ID,
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.Name, Arguments: args},
					},
				})
			}
			p.Messages = append(p.Messages, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		default:
			return p, fmt.Errorf("message %d: role %q is not user, assistant or tool", i, m.Role)
		}
	}
	return p, nil
}
