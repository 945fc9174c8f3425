package trace

// Agent event types (docs/agent-capsules.md).
const (
	TypeTaskStart           = "task_start"
	TypeInference           = "inference"
	TypeTaskEnd             = "task_end"
	TypeA2ATaskReceived     = "a2a_task_received"
	TypeTaskRejected        = "task_rejected"
	TypeTaskCanceled        = "task_canceled"
	TypeSpendCeilingReached = "spend_ceiling_reached"
	TypeHookCall            = "hook_call"
)

// Agent task endings (task_end.exit_status, and an agent's session_end).
const (
	EndMaxTurnsReached     = "max_turns_reached"
	EndSpendCeilingReached = "spend_ceiling_reached"
	EndCanceled            = "canceled"
)

// DriverInfo is session_start.driver.
type DriverInfo struct {
	Name           string `json:"name"`
	Version        string `json:"version"`
	Implementation string `json:"implementation"` // builtin | wasm
	SHA256         string `json:"sha256"`
}

// AgentSessionStart is an agent capsule's session_start: a script's session_start fields plus
// the inference settings (the embedded struct's fields marshal flat).
type AgentSessionStart struct {
	SessionStart
	Model              string     `json:"model"`
	Driver             DriverInfo `json:"driver"`
	MaxTurns           int        `json:"max_turns"`
	MaxSessionTokens   *int       `json:"max_session_tokens"`
	TaskAcceptance     string     `json:"task_acceptance"`
	AfterTask          string     `json:"after_task"`
	URL                string     `json:"url"`
	SystemPromptSHA256 string     `json:"system_prompt_sha256"`
	Hooks              []string   `json:"hooks"`
	// PolicyHooks are the hooks that export the policy gate, in manifest
	// order; ApprovalRequired the model's names of the tools each of whose
	// calls waits for an operator; InputTimeoutSecs lifecycle.input_timeout_secs
	// (nil: none).
	PolicyHooks      []string `json:"policy_hooks"`
	ApprovalRequired []string `json:"approval_required"`
	InputTimeoutSecs *int     `json:"input_timeout_secs"`
	// MCPServers are the bare names of the MCP servers, in manifest order.
	MCPServers []string `json:"mcp_servers"`
}

// TaskStart opens one task; its lines go under it.
type TaskStart struct {
	TaskID       string `json:"task_id"`
	ContextID    string `json:"context_id"`
	Source       string `json:"source"` // task_md | a2a
	Origin       string `json:"origin"`
	MessageBytes int    `json:"message_bytes"`
	// TraceParent is the W3C header the task arrived with (not a field of
	// the line): its span goes under that remote parent.
	TraceParent string `json:"-"`
}

// Inference is one driver call (one turn); the turn's tool lines go under it.
type Inference struct {
	TaskID       string   `json:"task_id"`
	Turn         int      `json:"turn"`
	Model        string   `json:"model"`
	InputTokens  int      `json:"input_tokens"`
	OutputTokens int      `json:"output_tokens"`
	StopReason   string   `json:"stop_reason"`
	ToolCalls    []string `json:"tool_calls"`
	DurationMS   int64    `json:"duration_ms"`
	// Err is why the driver call failed (not a field of the line): its
	// span's error status.
	Err string `json:"-"`
}

// AgentToolCall is a tool call the model asked for: a script's tool_call fields plus
// where it belongs and how its component call ended.
type AgentToolCall struct {
	ToolCall
	TaskID     string `json:"task_id"`
	Turn       int    `json:"turn"`
	ToolCallID string `json:"tool_call_id"`
	Kind       string `json:"kind"`             // wasm | skill | runtime | shell | mcp
	Ending     string `json:"ending,omitempty"` // a component call's (or an MCP call's) ending
	// Server and MCPTool name an MCP call's server (bare name) and the
	// server's own name for the tool; empty for other kinds.
	Server  string `json:"server,omitempty"`
	MCPTool string `json:"mcp_tool,omitempty"`
	// MCPTransport ("pipe" or "tcp") and MCPProtocol are for the call's
	// span only, not written to the line.
	MCPTransport string `json:"-"`
	MCPProtocol  string `json:"-"`
	PlanCall            // a plan step's attempt: plan_id, step_id, attempt
}

// TaskEnd closes one task with its totals.
type TaskEnd struct {
	TaskID       string `json:"task_id"`
	ExitStatus   string `json:"exit_status"`
	Turns        int    `json:"turns"`
	InputTokens  int    `json:"input_tokens"`
	OutputTokens int    `json:"output_tokens"`
	ToolCalls    int    `json:"tool_calls"`
	ToolErrors   int    `json:"tool_errors"`
	ShellCalls   int    `json:"shell_calls"`
	// CallsDenied counts the calls the gate stopped (call_denied lines).
	CallsDenied int   `json:"calls_denied"`
	DurationMS  int64 `json:"duration_ms"`
}

// AgentSessionEnd is an agent capsule's session_end: each total the sum of
// the task_end lines (plus hooks' tokens).
type AgentSessionEnd struct {
	SessionEnd
	Tasks        int `json:"tasks"`
	TotalTurns   int `json:"total_turns"`
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	ShellCalls   int `json:"shell_calls"`
	CallsDenied  int `json:"calls_denied"`
}

// A2ATaskReceived is every message the door accepted.
type A2ATaskReceived struct {
	TaskID    string `json:"task_id"`
	ContextID string `json:"context_id"`
	MessageID string `json:"message_id"`
	Origin    string `json:"origin"`
	// CallerMember is the formation member whose token admitted the task.
	CallerMember string `json:"caller_member,omitempty"`
}

// TaskRejected is a message the door answered with a rejected task.
type TaskRejected struct {
	TaskID string `json:"task_id"`
	Reason string `json:"reason"`
}

// TaskCanceled is a task cancelled in some phase.
type TaskCanceled struct {
	TaskID        string   `json:"task_id"`
	Phase         string   `json:"phase"`
	DelegationIDs []string `json:"delegation_ids"`
	MemberCallIDs []string `json:"member_call_ids"`
}

// SpendCeilingReached is the admission check refusing the next call.
type SpendCeilingReached struct {
	TaskID    string `json:"task_id"`
	Ceiling   int    `json:"ceiling"`
	Used      int    `json:"used"`
	Requested int    `json:"requested"`
}

// HookCall is one lifecycle hook call (docs/agent-capsules.md).
type HookCall struct {
	Hook         string  `json:"hook"`
	Event        string  `json:"event"`
	DurationMS   int64   `json:"duration_ms"`
	Status       string  `json:"status"` // ok | error | trapped | deadline_exceeded | resource_limit | not_called
	Error        *string `json:"error"`
	Output       *string `json:"output"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	// StateStore is the state store the hook's component saw (absent when
	// it saw none).
	StateStore string `json:"state_store,omitempty"`
}

// agentTypeOf maps the agent events to their event_type.
func agentTypeOf(v any) (string, bool) {
	switch v.(type) {
	case AgentSessionStart, *AgentSessionStart:
		return TypeSessionStart, true
	case TaskStart, *TaskStart:
		return TypeTaskStart, true
	case Inference, *Inference:
		return TypeInference, true
	case AgentToolCall, *AgentToolCall:
		return TypeToolCall, true
	case TaskEnd, *TaskEnd:
		return TypeTaskEnd, true
	case AgentSessionEnd, *AgentSessionEnd:
		return TypeSessionEnd, true
	case A2ATaskReceived, *A2ATaskReceived:
		return TypeA2ATaskReceived, true
	case TaskRejected, *TaskRejected:
		return TypeTaskRejected, true
	case TaskCanceled, *TaskCanceled:
		return TypeTaskCanceled, true
	case SpendCeilingReached, *SpendCeilingReached:
		return TypeSpendCeilingReached, true
	case Shell, *Shell:
		return TypeShell, true
	case HookCall, *HookCall:
		return TypeHookCall, true
	}
	return "", false
}
