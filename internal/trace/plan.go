package trace

// Plan event types (docs/plans.md).
const (
	TypePlanStart     = "plan_start"
	TypePlanStepStart = "plan_step_start"
	TypePlanStep      = "plan_step"
	TypePlanEnd       = "plan_end"
)

// PlanStart is a plan that passed validation and starts.
type PlanStart struct {
	TaskID     string          `json:"task_id"`
	Turn       int             `json:"turn"`
	ToolCallID string          `json:"tool_call_id"`
	PlanID     string          `json:"plan_id"`
	File       string          `json:"file"`
	InputBytes int             `json:"input_bytes"`
	StepCount  int             `json:"step_count"`
	Steps      []PlanStartStep `json:"steps"`
}

// PlanStartStep is one step as plan_start lists it.
type PlanStartStep struct {
	StepID       string   `json:"step_id"`
	Kind         string   `json:"kind"`
	DependsOn    []string `json:"depends_on"`
	HasCondition bool     `json:"has_condition"`
	OnError      string   `json:"on_error"`
	Retries      int      `json:"retries"`
}

// PlanStepStart is a step dispatched.
type PlanStepStart struct {
	PlanID    string   `json:"plan_id"`
	StepID    string   `json:"step_id"`
	Kind      string   `json:"kind"`
	DependsOn []string `json:"depends_on"`
}

// PlanStep is a step settled.
type PlanStep struct {
	PlanID      string   `json:"plan_id"`
	StepID      string   `json:"step_id"`
	Kind        string   `json:"kind"`
	Status      string   `json:"status"`
	Attempts    int      `json:"attempts"`
	DurationMS  int64    `json:"duration_ms"`
	OutputBytes *int     `json:"output_bytes"`
	Error       *string  `json:"error"`
	CallIDs     []string `json:"call_ids"`
}

// PlanEnd is a plan ended, or refused.
type PlanEnd struct {
	PlanID         string   `json:"plan_id"`
	File           string   `json:"file"`
	Outcome        string   `json:"outcome"` // completed | failed | canceled | refused
	FailedStep     *string  `json:"failed_step"`
	StepsTotal     int      `json:"steps_total"`
	StepsSucceeded int      `json:"steps_succeeded"`
	StepsFailed    int      `json:"steps_failed"`
	StepsSkipped   int      `json:"steps_skipped"`
	DurationMS     int64    `json:"duration_ms"`
	Reason         *string  `json:"reason"`
	Errors         []string `json:"errors"`
}

// PlanCall marks a tool_call or shell line as a plan step's attempt.
type PlanCall struct {
	PlanID  string `json:"plan_id,omitempty"`
	StepID  string `json:"step_id,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
}

func planTypeOf(v any) (string, bool) {
	switch v.(type) {
	case PlanStart, *PlanStart:
		return TypePlanStart, true
	case PlanStepStart, *PlanStepStart:
		return TypePlanStepStart, true
	case PlanStep, *PlanStep:
		return TypePlanStep, true
	case PlanEnd, *PlanEnd:
		return TypePlanEnd, true
	}
	return "", false
}
