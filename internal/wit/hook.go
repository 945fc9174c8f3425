package wit

import (
	"context"
	"fmt"

	"github.com/murmur-go/murmur/internal/wasmhost"
)

// The hook world (docs/agent-capsules.md): murmur:hook/lifecycle@0.5.0 (exported by a
// hook) and murmur:runtime/inference@0.2.0 (what a hook may import), as Go
// records with their conversions, a typed caller per lifecycle function, the
// run-inference host helper and the check a runtime makes before it keeps a
// component as a hook.

// Lifecycle function names, in the order of the WIT (which is also the order
// a session reaches them, but for on-compaction).
const (
	HookOnStage        = "on-stage"
	HookOnSessionStart = "on-session-start"
	HookOnTaskStart    = "on-task-start"
	HookOnInference    = "on-inference"
	HookOnToolCall     = "on-tool-call"
	HookOnShell        = "on-shell"
	HookOnCompaction   = "on-compaction"
	HookOnTaskEnd      = "on-task-end"
	HookOnSessionEnd   = "on-session-end"

	// RunInferenceFunc is murmur:runtime/inference's one function.
	RunInferenceFunc = "run-inference"
)

// HookEvents lists every lifecycle function, in WIT order.
var HookEvents = []string{HookOnStage, HookOnSessionStart, HookOnTaskStart, HookOnInference,
	HookOnToolCall, HookOnShell, HookOnCompaction, HookOnTaskEnd, HookOnSessionEnd}

// hook-output cases.
const (
	OutputNone           = "none"
	OutputReplaceContext = "replace-context"
	OutputWriteManifests = "write-manifests"
	OutputArtifact       = "artifact"
	OutputReopenTask     = "reopen-task"
)

// HookMessage is murmur:hook/lifecycle's message.
type HookMessage struct{ Role, Content string }

// ToolManifest is murmur:hook/lifecycle's tool-manifest.
type ToolManifest struct{ BinaryName, Content string }

// HookOutput is a hook-output value. Case is one of the Output* names;
// Messages is replace-context's payload, Manifests write-manifests', Text
// artifact's and reopen-task's.
type HookOutput struct {
	Case      string
	Messages  []HookMessage
	Manifests []ToolManifest
	Text      string
}

// SessionContext is on-session-start's argument.
type SessionContext struct {
	CapsuleName, CapsuleVersion, SessionID, Model string
	Capabilities                                  []string
}

// StageEvent is on-stage's argument.
type StageEvent struct{ ShellAllow []string }

// TaskStartEvent is on-task-start's argument.
type TaskStartEvent struct {
	TaskID, ContextID, Source string
	InputBytes                uint64
}

// TaskEndEvent is on-task-end's argument.
type TaskEndEvent struct{ TaskID, ExitStatus string }

// InferenceEvent is on-inference's argument.
type InferenceEvent struct {
	Turn                      uint32
	InputTokens, OutputTokens uint64
	Decision                  string
	ToolName, Prompt, Output  *string
	Tools                     *string
}

// ToolEvent is on-tool-call's argument.
type ToolEvent struct {
	Turn                                uint32
	ToolName                            string
	InputBytes, OutputBytes, DurationMS uint64
	Status                              string
}

// ShellEvent is on-shell's argument.
type ShellEvent struct {
	Turn                                 uint32
	Binary, Command                      string
	ExitCode                             int32
	Stdout, Stderr                       string
	StdoutBytes, StderrBytes, DurationMS uint64
}

// CompactionEvent is on-compaction's argument.
type CompactionEvent struct {
	Messages      []HookMessage
	SessionTokens uint64
	Threshold     float64
	Model         *string
	SystemPrompt  *string
}

// SessionEndEvent is on-session-end's argument.
type SessionEndEvent struct {
	TotalTurns                          uint32
	TotalInputTokens, TotalOutputTokens uint64
	TotalToolCalls, TotalShellCalls     uint32
	DurationMS                          uint64
	ExitStatus                          string
}

// InferenceRequest is murmur:runtime/inference's inference-request.
type InferenceRequest struct {
	Messages     []HookMessage
	SystemPrompt *string
	Model        *string
}

// InferenceResponse is murmur:runtime/inference's inference-response.
type InferenceResponse struct {
	Text, ModelUsed           string
	InputTokens, OutputTokens uint64
}

func strList(s []string) wasmhost.List {
	l := make(wasmhost.List, len(s))
	for i, x := range s {
		l[i] = x
	}
	return l
}

func messages(m []HookMessage) wasmhost.List {
	l := make(wasmhost.List, len(m))
	for i, x := range m {
		l[i] = x.Value()
	}
	return l
}

// Value returns the WIT value of m.
func (m HookMessage) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "role", Value: m.Role}, {Name: "content", Value: m.Content}}
}

// Value returns the WIT value of c.
func (c SessionContext) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "capsule-name", Value: c.CapsuleName}, {Name: "capsule-version", Value: c.CapsuleVersion},
		{Name: "session-id", Value: c.SessionID}, {Name: "model", Value: c.Model}, {Name: "capabilities", Value: strList(c.Capabilities)}}
}

// Value returns the WIT value of e.
func (e StageEvent) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "shell-allow", Value: strList(e.ShellAllow)}}
}

// Value returns the WIT value of e.
func (e TaskStartEvent) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "task-id", Value: e.TaskID}, {Name: "context-id", Value: e.ContextID},
		{Name: "source", Value: e.Source}, {Name: "input-bytes", Value: e.InputBytes}}
}

// Value returns the WIT value of e.
func (e TaskEndEvent) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "task-id", Value: e.TaskID}, {Name: "exit-status", Value: e.ExitStatus}}
}

// Value returns the WIT value of e.
func (e InferenceEvent) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "turn", Value: e.Turn}, {Name: "input-tokens", Value: e.InputTokens},
		{Name: "output-tokens", Value: e.OutputTokens}, {Name: "decision", Value: e.Decision},
		{Name: "tool-name", Value: optS(e.ToolName)}, {Name: "prompt", Value: optS(e.Prompt)},
		{Name: "output", Value: optS(e.Output)}, {Name: "tools", Value: optS(e.Tools)}}
}

// Value returns the WIT value of e.
func (e ToolEvent) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "turn", Value: e.Turn}, {Name: "tool-name", Value: e.ToolName},
		{Name: "input-bytes", Value: e.InputBytes}, {Name: "output-bytes", Value: e.OutputBytes},
		{Name: "duration-ms", Value: e.DurationMS}, {Name: "status", Value: e.Status}}
}

// Value returns the WIT value of e.
func (e ShellEvent) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "turn", Value: e.Turn}, {Name: "binary", Value: e.Binary}, {Name: "command", Value: e.Command},
		{Name: "exit-code", Value: e.ExitCode}, {Name: "stdout", Value: e.Stdout}, {Name: "stderr", Value: e.Stderr},
		{Name: "stdout-bytes", Value: e.StdoutBytes}, {Name: "stderr-bytes", Value: e.StderrBytes},
		{Name: "duration-ms", Value: e.DurationMS}}
}

// Value returns the WIT value of e.
func (e CompactionEvent) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "messages", Value: messages(e.Messages)}, {Name: "session-tokens", Value: e.SessionTokens},
		{Name: "threshold", Value: e.Threshold}, {Name: "model", Value: optS(e.Model)},
		{Name: "system-prompt", Value: optS(e.SystemPrompt)}}
}

// Value returns the WIT value of e.
func (e SessionEndEvent) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "total-turns", Value: e.TotalTurns}, {Name: "total-input-tokens", Value: e.TotalInputTokens},
		{Name: "total-output-tokens", Value: e.TotalOutputTokens}, {Name: "total-tool-calls", Value: e.TotalToolCalls},
		{Name: "total-shell-calls", Value: e.TotalShellCalls}, {Name: "duration-ms", Value: e.DurationMS},
		{Name: "exit-status", Value: e.ExitStatus}}
}

// Value returns the WIT value of r.
func (r InferenceRequest) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "messages", Value: messages(r.Messages)}, {Name: "system-prompt", Value: optS(r.SystemPrompt)},
		{Name: "model", Value: optS(r.Model)}}
}

// Value returns the WIT value of r.
func (r InferenceResponse) Value() wasmhost.Value {
	return wasmhost.Record{{Name: "text", Value: r.Text}, {Name: "model-used", Value: r.ModelUsed},
		{Name: "input-tokens", Value: r.InputTokens}, {Name: "output-tokens", Value: r.OutputTokens}}
}

// Value returns the WIT value of o.
func (o HookOutput) Value() wasmhost.Value {
	switch o.Case {
	case OutputReplaceContext:
		return wasmhost.Variant{Case: o.Case, Value: messages(o.Messages)}
	case OutputWriteManifests:
		l := make(wasmhost.List, len(o.Manifests))
		for i, m := range o.Manifests {
			l[i] = wasmhost.Record{{Name: "binary-name", Value: m.BinaryName}, {Name: "content", Value: m.Content}}
		}
		return wasmhost.Variant{Case: o.Case, Value: l}
	case OutputArtifact, OutputReopenTask:
		return wasmhost.Variant{Case: o.Case, Value: o.Text}
	}
	return wasmhost.Variant{Case: OutputNone}
}

func (d *decoder) messages(v wasmhost.Value) []HookMessage {
	l, ok := v.(wasmhost.List)
	if !ok {
		d.fail("want list<message>, got %T", v)
		return nil
	}
	out := make([]HookMessage, 0, len(l))
	for _, e := range l {
		r := d.record(e, 2)
		out = append(out, HookMessage{Role: d.str(r[0].Value), Content: d.str(r[1].Value)})
	}
	return out
}

// DecodeHookOutput converts a guest's hook-output value.
func DecodeHookOutput(v wasmhost.Value) (HookOutput, error) {
	var d decoder
	vr, ok := v.(wasmhost.Variant)
	if !ok {
		return HookOutput{}, fmt.Errorf("hook-output: want variant, got %T", v)
	}
	o := HookOutput{Case: vr.Case}
	switch vr.Case {
	case OutputNone:
	case OutputReplaceContext:
		o.Messages = d.messages(vr.Value)
	case OutputWriteManifests:
		l, ok := vr.Value.(wasmhost.List)
		if !ok {
			d.fail("write-manifests: want list, got %T", vr.Value)
		}
		for _, e := range l {
			r := d.record(e, 2)
			o.Manifests = append(o.Manifests, ToolManifest{BinaryName: d.str(r[0].Value), Content: d.str(r[1].Value)})
		}
	case OutputArtifact, OutputReopenTask:
		o.Text = d.str(vr.Value)
	default:
		d.fail("hook-output: unknown case %q", vr.Case)
	}
	if d.err != nil {
		return HookOutput{}, fmt.Errorf("hook-output: %w", d.err)
	}
	return o, nil
}

// DecodeInferenceRequest converts a guest's inference-request value.
func DecodeInferenceRequest(v wasmhost.Value) (InferenceRequest, error) {
	var d decoder
	r := d.record(v, 3)
	req := InferenceRequest{Messages: d.messages(r[0].Value), SystemPrompt: d.optStr(r[1].Value), Model: d.optStr(r[2].Value)}
	if d.err != nil {
		return InferenceRequest{}, fmt.Errorf("inference-request: %w", d.err)
	}
	return req, nil
}

// HookError is a hook's own err(string) answer to a lifecycle call: the
// hook ran and returned normally, reporting a failure.
type HookError struct{ Message string }

func (e *HookError) Error() string { return e.Message }

// CallHook calls one lifecycle function of the hook instance exporting iface
// (the exact name HookExports found) with its event record. Its
// error is the engine's typed ending, a *HookError for the hook's own
// err(string), or a decoding error.
func CallHook(ctx context.Context, inst *wasmhost.Instance, iface, event string, arg wasmhost.Value) (HookOutput, error) {
	v, err := inst.Call(ctx, iface, event, arg)
	if err != nil {
		return HookOutput{}, err
	}
	res, ok := v.(wasmhost.Result)
	if !ok {
		return HookOutput{}, fmt.Errorf("%s: want result<hook-output, string>, got %T", event, v)
	}
	if res.IsErr {
		s, _ := res.Value.(string)
		return HookOutput{}, &HookError{Message: s}
	}
	return DecodeHookOutput(res.Value)
}

// GrantInference grants murmur:runtime/inference@0.2.0 (run-inference). A
// returned error is answered err(message) and the hook goes on (wrap it with
// fatal to trap).
func GrantInference(h Definer, fn func(ctx context.Context, req InferenceRequest) (InferenceResponse, error)) {
	// Defined without its version, so any 0.2.x import links to it.
	h.Define("murmur:runtime/inference", RunInferenceFunc, func(ctx context.Context, a []wasmhost.Value) (wasmhost.Value, error) {
		if len(a) != 1 {
			return nil, fmt.Errorf("run-inference: %d arguments", len(a))
		}
		req, err := DecodeInferenceRequest(a[0])
		if err != nil {
			return nil, fmt.Errorf("run-inference: %w", err)
		}
		res, err := fn(ctx, req)
		if err != nil {
			return errValue(err)
		}
		return wasmhost.Ok(res.Value()), nil
	})
}

// The WIT types of the hook world, for the shape check.
var (
	hString  = &wasmhost.Type{Kind: wasmhost.KindString}
	hU32     = &wasmhost.Type{Kind: wasmhost.KindU32}
	hU64     = &wasmhost.Type{Kind: wasmhost.KindU64}
	hS32     = &wasmhost.Type{Kind: wasmhost.KindS32}
	hF64     = &wasmhost.Type{Kind: wasmhost.KindF64}
	hOptStr  = &wasmhost.Type{Kind: wasmhost.KindOption, Elem: hString}
	hStrList = &wasmhost.Type{Kind: wasmhost.KindList, Elem: hString}
	hMessage = hRecord("role", hString, "content", hString)
	hMsgList = &wasmhost.Type{Kind: wasmhost.KindList, Elem: hMessage}
	hOutput  = &wasmhost.Type{Kind: wasmhost.KindVariant, Cases: []wasmhost.Case{
		{Name: OutputNone}, {Name: OutputReplaceContext, Type: hMsgList},
		{Name: OutputWriteManifests, Type: &wasmhost.Type{Kind: wasmhost.KindList, Elem: hRecord("binary-name", hString, "content", hString)}},
		{Name: OutputArtifact, Type: hString}, {Name: OutputReopenTask, Type: hString}}}
	hResult = &wasmhost.Type{Kind: wasmhost.KindResult, Ok: hOutput, Err: hString}

	// hookParams is each lifecycle function's one parameter type.
	hookParams = map[string]*wasmhost.Type{
		HookOnStage: hRecord("shell-allow", hStrList),
		HookOnSessionStart: hRecord("capsule-name", hString, "capsule-version", hString, "session-id", hString,
			"model", hString, "capabilities", hStrList),
		HookOnTaskStart: hRecord("task-id", hString, "context-id", hString, "source", hString, "input-bytes", hU64),
		HookOnInference: hRecord("turn", hU32, "input-tokens", hU64, "output-tokens", hU64, "decision", hString,
			"tool-name", hOptStr, "prompt", hOptStr, "output", hOptStr, "tools", hOptStr),
		HookOnToolCall: hRecord("turn", hU32, "tool-name", hString, "input-bytes", hU64, "output-bytes", hU64,
			"duration-ms", hU64, "status", hString),
		HookOnShell: hRecord("turn", hU32, "binary", hString, "command", hString, "exit-code", hS32,
			"stdout", hString, "stderr", hString, "stdout-bytes", hU64, "stderr-bytes", hU64, "duration-ms", hU64),
		HookOnCompaction: hRecord("messages", hMsgList, "session-tokens", hU64, "threshold", hF64,
			"model", hOptStr, "system-prompt", hOptStr),
		HookOnTaskEnd: hRecord("task-id", hString, "exit-status", hString),
		HookOnSessionEnd: hRecord("total-turns", hU32, "total-input-tokens", hU64, "total-output-tokens", hU64,
			"total-tool-calls", hU32, "total-shell-calls", hU32, "duration-ms", hU64, "exit-status", hString),
	}

	runInferenceType = &wasmhost.FuncType{
		Params: []wasmhost.Param{{Name: "request", Type: hRecord("messages", hMsgList, "system-prompt", hOptStr, "model", hOptStr)}},
		Result: &wasmhost.Type{Kind: wasmhost.KindResult, Err: hString,
			Ok: hRecord("text", hString, "model-used", hString, "input-tokens", hU64, "output-tokens", hU64)},
	}
)

func hRecord(kv ...any) *wasmhost.Type {
	t := &wasmhost.Type{Kind: wasmhost.KindRecord}
	for i := 0; i < len(kv); i += 2 {
		t.Fields = append(t.Fields, wasmhost.Field{Name: kv[i].(string), Type: kv[i+1].(*wasmhost.Type)})
	}
	return t
}

// sameFunc compares two signatures by their types (parameter names are the
// component's own and do not matter to a caller).
func sameFunc(a, b *wasmhost.FuncType) bool {
	if a == nil || b == nil || len(a.Params) != len(b.Params) {
		return false
	}
	for i := range a.Params {
		if a.Params[i].Type.String() != b.Params[i].Type.String() {
			return false
		}
	}
	return (a.Result == nil) == (b.Result == nil) && (a.Result == nil || a.Result.String() == b.Result.String())
}

func hasFuncs(it wasmhost.Item) bool {
	for _, m := range it.Exports {
		if m.Kind == wasmhost.ItemFunc {
			return true
		}
	}
	return false
}
