package trace

// Formation trace lines (docs/formations.md).
const (
	TypeFormationEnded = "formation_ended"
	// EndFormationEnded is session_end.exit_status of a member whose
	// formation ended while it held a live or queued task.
	EndFormationEnded = "formation_ended"
)

// FormationEnded is a launcher-started member reading EOF on its formation
// lifeline, written before every other line of its wind-down.
type FormationEnded struct {
	FormationID string `json:"formation_id"`
}

func formationTypeOf(v any) (string, bool) {
	switch v.(type) {
	case FormationEnded, *FormationEnded:
		return TypeFormationEnded, true
	}
	return "", false
}
