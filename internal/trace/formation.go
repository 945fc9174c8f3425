package trace

// Formation trace lines (docs/formations.md).
const (
	TypeFormationEnded = "formation_ended"
	// EndFormationEnded is session_end.exit_status of a member whose
	// formation ended while it held a live or queued task.
	EndFormationEnded   = "formation_ended"
	TypeMemberCallBusy  = "member_call_busy"
	TypeMemberCallStart = "member_call_start"
	TypeMemberCall      = "member_call"
	// EndNoAnswer is task_end.exit_status of a task ended by
	// end-without-answer; it counts as ok for session_end.
	EndNoAnswer = "no_answer"
)

// FormationEnded is a launcher-started member reading EOF on its formation
// lifeline, written before every other line of its wind-down.
type FormationEnded struct {
	FormationID string `json:"formation_id"`
}

// MemberCallBusy is a call-member offer its member answered busy.
type MemberCallBusy struct {
	TaskID   string `json:"task_id"`
	CallID   string `json:"call_id"`
	Member   string `json:"member"`
	Offer    int    `json:"offer"` // 1-based
	WaitedMS int64  `json:"waited_ms"`
}

// MemberCallStart is a call-member offer its member took.
type MemberCallStart struct {
	TaskID       string `json:"task_id"`
	CallID       string `json:"call_id"`
	Member       string `json:"member"`
	MemberTaskID string `json:"member_task_id"`
	Offers       int    `json:"offers"`
}

// MemberCall closes one call-member call: written when it ends (its
// delivery is its id in a task_continued line).
type MemberCall struct {
	TaskID       string  `json:"task_id"`
	CallID       string  `json:"call_id"`
	Member       string  `json:"member"`
	MemberTaskID *string `json:"member_task_id"`
	Status       string  `json:"status"`
	Offers       int     `json:"offers"`
	DurationMS   int64   `json:"duration_ms"`
	AnswerBytes  int     `json:"answer_bytes"`
	Reason       *string `json:"reason"`
}

func formationTypeOf(v any) (string, bool) {
	switch v.(type) {
	case FormationEnded, *FormationEnded:
		return TypeFormationEnded, true
	case MemberCallBusy, *MemberCallBusy:
		return TypeMemberCallBusy, true
	case MemberCallStart, *MemberCallStart:
		return TypeMemberCallStart, true
	case MemberCall, *MemberCall:
		return TypeMemberCall, true
	}
	return "", false
}
