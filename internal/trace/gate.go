package trace

// The policy gate's lines (docs/policy.md): a call a policy hook or the
// operator stopped, and an operator's approval asked and given.
const (
	TypeCallDenied        = "call_denied"
	TypeApprovalRequested = "approval_requested"
	TypeCallApproved      = "call_approved"
)

// Who stopped a call (call_denied.by).
const (
	DeniedByHook     = "hook"
	DeniedByOperator = "operator"
	DeniedByTimeout  = "timeout"
)

// CallDenied is a call the gate stopped before it ran: it ran nothing and
// counts in calls_denied, not tool_calls, shell_calls or tool_errors.
type CallDenied struct {
	TaskID     string  `json:"task_id"`
	Turn       int     `json:"turn"`
	ToolCallID string  `json:"tool_call_id"`
	ToolName   string  `json:"tool_name"`
	Kind       string  `json:"kind"`
	Binary     *string `json:"binary"`
	By         string  `json:"by"`
	Hook       *string `json:"hook"`
	Reason     string  `json:"reason"`
	DurationMS int64   `json:"duration_ms"`
	PlanID     *string `json:"plan_id,omitempty"`
	StepID     *string `json:"step_id,omitempty"`
}

// ApprovalRequested is an operator's approval asked for one call.
type ApprovalRequested struct {
	TaskID      string  `json:"task_id"`
	Turn        int     `json:"turn"`
	ToolCallID  string  `json:"tool_call_id"`
	ToolName    string  `json:"tool_name"`
	Kind        string  `json:"kind"`
	InputBytes  int     `json:"input_bytes"`
	TimeoutSecs *int    `json:"timeout_secs"`
	PlanID      *string `json:"plan_id,omitempty"`
	StepID      *string `json:"step_id,omitempty"`
}

// CallApproved is the operator's approval of one call, which then runs.
type CallApproved struct {
	TaskID     string  `json:"task_id"`
	ToolCallID string  `json:"tool_call_id"`
	ToolName   string  `json:"tool_name"`
	WaitedMS   int64   `json:"waited_ms"`
	MessageID  string  `json:"message_id"`
	PlanID     *string `json:"plan_id,omitempty"`
	StepID     *string `json:"step_id,omitempty"`
}

// gateTypeOf maps the gate's events to their event_type.
func gateTypeOf(v any) (string, bool) {
	switch v.(type) {
	case CallDenied, *CallDenied:
		return TypeCallDenied, true
	case ApprovalRequested, *ApprovalRequested:
		return TypeApprovalRequested, true
	case CallApproved, *CallApproved:
		return TypeCallApproved, true
	}
	return "", false
}
