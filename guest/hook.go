//go:build !wasip1 || murmur_hook || murmur_policy

package guest

// Hooks (contracts §16): a component of the hook world
// (murmur:runtime/hook@0.2.0) exports murmur:hook/lifecycle@0.5.0 and may import
// murmur:runtime/inference@0.2.0. Build one with
// `scripts/build-component.sh <dir> hook <out.wasm>`, which compiles the kit's
// hook exports in (build tag murmur_hook).

// HookMessage is murmur:hook/lifecycle's message.
type HookMessage struct{ Role, Content string }

// ToolManifest is murmur:hook/lifecycle's tool-manifest.
type ToolManifest struct{ BinaryName, Content string }

// OutputKind is the case of a hook-output, in WIT order (the wire encoding).
type OutputKind uint8

// The hook-output cases.
const (
	OutputNone OutputKind = iota
	OutputReplaceContext
	OutputWriteManifests
	OutputArtifact
	OutputReopenTask
)

// HookOutput is what a lifecycle function answers. The zero value is none.
type HookOutput struct {
	Kind      OutputKind
	Messages  []HookMessage  // replace-context
	Manifests []ToolManifest // write-manifests
	Text      string         // artifact, reopen-task
}

// None is the hook-output none: the runtime does nothing.
func None() HookOutput { return HookOutput{} }

// Artifact is an artifact update on the session's stream.
func Artifact(text string) HookOutput { return HookOutput{Kind: OutputArtifact, Text: text} }

// ReopenTask is the answer at on-task-end that runs the task again with reason
// appended as a user message (at most lifecycle.max_task_reopens times).
func ReopenTask(reason string) HookOutput { return HookOutput{Kind: OutputReopenTask, Text: reason} }

// WriteManifests is the answer at on-stage that writes tool manifests.
func WriteManifests(m ...ToolManifest) HookOutput {
	return HookOutput{Kind: OutputWriteManifests, Manifests: m}
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
	Turn                            uint32
	InputTokens, OutputTokens       uint64
	Decision                        string
	ToolName, Prompt, Output, Tools *string
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
	Messages            []HookMessage
	SessionTokens       uint64
	Threshold           float64
	Model, SystemPrompt *string
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
	Messages            []HookMessage
	SystemPrompt, Model *string
}

// InferenceResponse is murmur:runtime/inference's inference-response.
type InferenceResponse struct {
	Text, ModelUsed           string
	InputTokens, OutputTokens uint64
}

// Hooks holds a hook's lifecycle functions. A nil function answers none. A
// returned error is answered err(message): the runtime logs it and moves on.
type Hooks struct {
	OnStage        func(StageEvent) (HookOutput, error)
	OnSessionStart func(SessionContext) (HookOutput, error)
	OnTaskStart    func(TaskStartEvent) (HookOutput, error)
	OnInference    func(InferenceEvent) (HookOutput, error)
	OnToolCall     func(ToolEvent) (HookOutput, error)
	OnShell        func(ShellEvent) (HookOutput, error)
	OnCompaction   func(CompactionEvent) (HookOutput, error)
	OnTaskEnd      func(TaskEndEvent) (HookOutput, error)
	OnSessionEnd   func(SessionEndEvent) (HookOutput, error)
}

var hooks Hooks

// Hook registers a hook's lifecycle functions. Call it from an init function;
// the runtime keeps one instance per session and calls it at every event the
// hook is bound to, so package variables persist from one event to the next.
func Hook(h Hooks) { hooks = h }

// run calls fn when it is set (none otherwise).
func run[E any](fn func(E) (HookOutput, error), e E) (HookOutput, error) {
	if fn == nil {
		return None(), nil
	}
	return fn(e)
}

// (At the end of the file, so that the wasip1 build's line numbers, and so
// the committed components, do not move.)
//lint:file-ignore U1000 used by the wasip1 build's hook exports (hook_wasip1.go), which staticcheck on the host does not see
