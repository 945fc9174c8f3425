package fakeprovider

import "strings"

// anthropicEvents is the Messages stream of rep: message_start, one
// content_block_start/delta…/stop per block, message_delta with the stop
// reason and usage, message_stop — with a ping after the start, as the API
// sends one.
func anthropicEvents(rep Reply, model string) []event {
	if rep.Malformed {
		return []event{
			{Name: "message_start", Data: `{"type":"message_start","message":{"id":"msg_fake","type":"message","role":"assistant"`},
		}
	}
	stop := rep.RawStop
	if stop == "" {
		stop = map[string]string{"end_turn": "end_turn", "tool_call": "tool_use", "max_tokens": "max_tokens"}[stopOf(rep)]
	}
	usageStart := map[string]any{"input_tokens": rep.InputTokens, "output_tokens": 1}
	if rep.NoUsage {
		usageStart = map[string]any{"input_tokens": 0, "output_tokens": 0}
	}
	evs := []event{
		{Name: "message_start", Data: mustJSON(map[string]any{
			"type": "message_start",
			"message": map[string]any{
				"id": "msg_fake01", "type": "message", "role": "assistant", "model": model,
				"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
				"usage": usageStart,
			},
		})},
		{Name: "ping", Data: `{"type": "ping"}`},
	}
	idx := 0
	if len(rep.Text) > 0 {
		evs = append(evs, event{Name: "content_block_start", Data: mustJSON(map[string]any{
			"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "text", "text": ""},
		})})
		for _, t := range rep.Text {
			evs = append(evs, event{Name: "content_block_delta", Data: mustJSON(map[string]any{
				"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "text_delta", "text": t},
			})})
		}
		evs = append(evs, event{Name: "content_block_stop", Data: mustJSON(map[string]any{"type": "content_block_stop", "index": idx})})
		idx++
	}
	for _, tc := range rep.ToolCalls {
		evs = append(evs, event{Name: "content_block_start", Data: mustJSON(map[string]any{
			"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}},
		})})
		for _, p := range tc.Pieces {
			evs = append(evs, event{Name: "content_block_delta", Data: mustJSON(map[string]any{
				"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": p},
			})})
		}
		evs = append(evs, event{Name: "content_block_stop", Data: mustJSON(map[string]any{"type": "content_block_stop", "index": idx})})
		idx++
	}
	usage := map[string]any{"output_tokens": rep.OutputTokens}
	if rep.NoUsage {
		usage = map[string]any{"output_tokens": 0}
	}
	evs = append(evs,
		event{Name: "message_delta", Data: mustJSON(map[string]any{
			"type":  "message_delta",
			"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
			"usage": usage,
		})},
		event{Name: "message_stop", Data: `{"type":"message_stop"}`},
	)
	return evs
}

// openaiEvents is the Chat Completions stream of rep: data-only events of
// chat.completion.chunk objects — the role first, text deltas, tool calls by
// index (id, type and name in the first piece, arguments spread over the
// rest), a finish_reason chunk, a usage chunk with empty choices (as
// stream_options.include_usage asks), then [DONE].
func openaiEvents(rep Reply, model string) []event {
	if rep.Malformed {
		return []event{{Data: `{"id":"chatcmpl-fake","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"`}, {Data: "[DONE]"}}
	}
	finish := rep.RawStop
	if finish == "" {
		finish = map[string]string{"end_turn": "stop", "tool_call": "tool_calls", "max_tokens": "length"}[stopOf(rep)]
	}
	chunk := func(delta map[string]any, finishReason any) event {
		c := map[string]any{
			"id": "chatcmpl-fake01", "object": "chat.completion.chunk", "created": 1700000000,
			"model": model, "system_fingerprint": "fp_fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finishReason}},
		}
		if !rep.NoUsage {
			c["usage"] = nil
		}
		return event{Data: mustJSON(c)}
	}
	evs := []event{chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)}
	for _, t := range rep.Text {
		evs = append(evs, chunk(map[string]any{"content": t}, nil))
	}
	for i, tc := range rep.ToolCalls {
		evs = append(evs, chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""},
		}}}, nil))
		for _, p := range tc.Pieces {
			evs = append(evs, chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": p},
			}}}, nil))
		}
	}
	evs = append(evs, chunk(map[string]any{}, finish))
	if !rep.NoUsage {
		evs = append(evs, event{Data: mustJSON(map[string]any{
			"id": "chatcmpl-fake01", "object": "chat.completion.chunk", "created": 1700000000,
			"model": model, "system_fingerprint": "fp_fake", "choices": []any{},
			"usage": map[string]any{
				"prompt_tokens": rep.InputTokens, "completion_tokens": rep.OutputTokens,
				"total_tokens": rep.InputTokens + rep.OutputTokens,
			},
		})})
	}
	evs = append(evs, event{Data: "[DONE]"})
	return evs
}

// Joined concatenates a tool call's pieces: the input the model meant.
func (tc ToolCall) Joined() string { return strings.Join(tc.Pieces, "") }
