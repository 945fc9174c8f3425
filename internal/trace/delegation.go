package trace

// Delegation event types (docs/delegation.md).
const (
	TypeDelegationStart = "delegation_start"
	TypeDelegation      = "delegation"
	TypeTaskWaiting     = "task_waiting"
	TypeTaskContinued   = "task_continued"
	TypeSpawnerEnded    = "spawner_ended"
)

// Snapshot is a workdir snapshot's record: delegation_start.workdir_snapshot
// and, with Restriction, the child's session_start.effective_grants.parent_workdir.
type Snapshot struct {
	Source      string         `json:"source"`
	Files       int            `json:"files"`
	Directories int            `json:"directories"`
	Symlinks    int            `json:"symlinks"`
	Bytes       int64          `json:"bytes"`
	Skipped     []SnapshotSkip `json:"skipped"`
	Restriction string         `json:"restriction,omitempty"`
}

// SnapshotSkip is one entry a snapshot left out, and why.
type SnapshotSkip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// DelegationStart is a delegation whose child reported itself started.
type DelegationStart struct {
	DelegationID    string    `json:"delegation_id"`
	Capsule         string    `json:"capsule"` // bare name
	Version         string    `json:"version"`
	ChildSessionID  string    `json:"child_session_id"`
	ChildWorkdir    string    `json:"child_workdir"`
	WorkdirSnapshot *Snapshot `json:"workdir_snapshot,omitempty"`
	// PlanCall marks a plan capsule step's delegation.
	PlanCall
}

// Delegation closes one delegation. Outcome is the completion's
// ok|error|crashed|terminated for one that started, the call's
// refused|failed for one that did not.
type Delegation struct {
	DelegationID   string  `json:"delegation_id"`
	Capsule        string  `json:"capsule"`
	Version        string  `json:"version"`
	ChildSessionID string  `json:"child_session_id"`
	DurationMS     int64   `json:"duration_ms"`
	Outcome        string  `json:"outcome"`
	Reason         *string `json:"reason"`
	// PlanCall marks a plan capsule step's delegation.
	PlanCall
}

// TaskWaiting is a task that ended its turn with delegations outstanding.
type TaskWaiting struct {
	TaskID string `json:"task_id"`
	// Outstanding counts delegations; MemberCalls the task's outstanding
	// call-member calls (docs/formations.md).
	Outstanding int `json:"outstanding"`
	MemberCalls int `json:"member_calls"`
}

// TaskContinued is the one continuation of a round of delegations.
type TaskContinued struct {
	TaskID      string   `json:"task_id"`
	Delegations []string `json:"delegations"`
	// MemberCalls are the call ids whose answers the continuation delivers.
	MemberCalls []string `json:"member_calls"`
}

// SpawnerEnded is a delegated child reading EOF on its spawner lifeline.
type SpawnerEnded struct{}

func delegationTypeOf(v any) (string, bool) {
	switch v.(type) {
	case DelegationStart, *DelegationStart:
		return TypeDelegationStart, true
	case Delegation, *Delegation:
		return TypeDelegation, true
	case TaskWaiting, *TaskWaiting:
		return TypeTaskWaiting, true
	case TaskContinued, *TaskContinued:
		return TypeTaskContinued, true
	case SpawnerEnded, *SpawnerEnded:
		return TypeSpawnerEnded, true
	}
	return "", false
}
