package trace

import "time"

// Summary is what `mur trace show` tells a person about one trace.
type Summary struct {
	SessionID      string
	CapsuleName    string
	CapsuleVersion string
	Kind           string
	Started        time.Time // zero when the trace has no session_start
	// Ended is false when the trace has no session_end: the session was
	// killed (or is still running). LastEvent then names the last line.
	Ended      bool
	ExitStatus string
	Reason     string
	Duration   time.Duration // from session_end, else first to last line
	LastEvent  string
	ToolCalls  []ToolCallLine
	ToolErrors int
	Deadlines  []Line // call_deadline lines
	Pulls      []Line
	Sends      []Line
	Events     int
	Truncated  bool
	BadLines   []int

	// An agent trace (contracts §13): its tasks in the order they started,
	// the messages the door rejected, the shell calls and delegations.
	Tasks       []TaskSummary
	Rejected    []Line // task_rejected lines
	ShellCalls  []Line // shell lines
	Delegations []DelegationSummary
	// Turns and tokens of the whole session: session_end's totals, else
	// the sums over Tasks.
	TotalTurns                int64
	InputTokens, OutputTokens int64
}

// TaskSummary is one agent task read back: task_end's totals when the task
// ended, else what its inference, tool_call and shell lines add up to.
type TaskSummary struct {
	TaskID, ContextID, Source, Origin string
	// Status is task_end.exit_status; "" when the trace holds no task_end
	// for the task (it was still running, or the session was killed).
	Status                    string
	Phase                     string // task_canceled.phase, when cancelled
	Turns                     int64
	InputTokens, OutputTokens int64
	ToolCalls, ToolErrors     int64
	ShellCalls                int64
	Duration                  time.Duration
}

// DelegationSummary is one delegation of the session (contracts §18): the
// delegation_start line, and the delegation line with its outcome.
type DelegationSummary struct {
	DelegationID, Capsule, Version, ChildSession string
	// Outcome is ok, error, crashed, terminated, refused or failed; "" while
	// no delegation line has been written for it.
	Outcome, Reason string
	Duration        time.Duration
}

// Trace lines of the shell tools and of delegation (contracts §13, §18),
// read here by name: their writers live with those features.
const (
	evShell           = "shell"
	evDelegationStart = "delegation_start"
	evDelegation      = "delegation"
)

// ToolCallLine is one tool_call read back.
type ToolCallLine struct {
	Tool     string
	Status   string
	Duration time.Duration
	In, Out  int64
	Error    string
}

// Summarize reads the facts a summary shows out of a trace.
func Summarize(f *File) Summary {
	s := Summary{Events: len(f.Lines), Truncated: f.Truncated, BadLines: f.Bad}
	var first, last int64
	tasks := map[string]*TaskSummary{}
	var order []string
	task := func(id string) *TaskSummary {
		if id == "" {
			return nil
		}
		t, ok := tasks[id]
		if !ok {
			t = &TaskSummary{TaskID: id}
			tasks[id] = t
			order = append(order, id)
		}
		return t
	}
	ended := map[string]bool{} // tasks whose task_end was read
	dlgs := map[string]*DelegationSummary{}
	var dlgOrder []string
	dlg := func(l Line) *DelegationSummary {
		id := l.Str("delegation_id")
		d, ok := dlgs[id]
		if !ok {
			d = &DelegationSummary{DelegationID: id}
			dlgs[id] = d
			dlgOrder = append(dlgOrder, id)
		}
		if v := l.Str("capsule"); v != "" {
			d.Capsule = v
		}
		if v := l.Str("version"); v != "" {
			d.Version = v
		}
		if v := l.Str("child_session_id"); v != "" {
			d.ChildSession = v
		}
		return d
	}
	var sessionTotals *Line
	for i, l := range f.Lines {
		if i == 0 {
			first = l.Timestamp
		}
		last = l.Timestamp
		s.LastEvent = l.EventType
		if s.SessionID == "" {
			s.SessionID = l.SessionID
		}
		switch l.EventType {
		case TypeSessionStart:
			s.CapsuleName = l.Str("capsule_name")
			s.CapsuleVersion = l.Str("capsule_version")
			s.Kind = l.Str("kind")
			s.Started = time.UnixMilli(l.Timestamp)
		case TypeToolCall:
			tc := ToolCallLine{
				Tool: l.Str("tool_name"), Status: l.Str("status"),
				Duration: time.Duration(l.Int("duration_ms")) * time.Millisecond,
				In:       l.Int("input_bytes"), Out: l.Int("output_bytes"), Error: l.Str("error"),
			}
			if tc.Status != "ok" {
				s.ToolErrors++
			}
			s.ToolCalls = append(s.ToolCalls, tc)
			if t := task(l.Str("task_id")); t != nil && !ended[t.TaskID] {
				t.ToolCalls++
				if tc.Status != "ok" {
					t.ToolErrors++
				}
			}
		case TypeTaskStart:
			if t := task(l.Str("task_id")); t != nil {
				t.ContextID, t.Source, t.Origin = l.Str("context_id"), l.Str("source"), l.Str("origin")
			}
		case TypeInference:
			if t := task(l.Str("task_id")); t != nil && !ended[t.TaskID] {
				t.Turns++
				t.InputTokens += l.Int("input_tokens")
				t.OutputTokens += l.Int("output_tokens")
			}
		case evShell:
			s.ShellCalls = append(s.ShellCalls, l)
			if t := task(l.Str("task_id")); t != nil && !ended[t.TaskID] {
				t.ShellCalls++
			}
		case TypeTaskCanceled:
			if t := task(l.Str("task_id")); t != nil {
				t.Phase = l.Str("phase")
			}
		case TypeTaskEnd:
			if t := task(l.Str("task_id")); t != nil {
				ended[t.TaskID] = true
				t.Status = l.Str("exit_status")
				t.Turns = l.Int("turns")
				t.InputTokens, t.OutputTokens = l.Int("input_tokens"), l.Int("output_tokens")
				t.ToolCalls, t.ToolErrors = l.Int("tool_calls"), l.Int("tool_errors")
				t.ShellCalls = l.Int("shell_calls")
				t.Duration = time.Duration(l.Int("duration_ms")) * time.Millisecond
			}
		case TypeTaskRejected:
			s.Rejected = append(s.Rejected, l)
		case evDelegationStart:
			dlg(l)
		case evDelegation:
			d := dlg(l)
			d.Outcome, d.Reason = l.Str("outcome"), l.Str("reason")
			d.Duration = time.Duration(l.Int("duration_ms")) * time.Millisecond
		case TypeCallDeadline:
			s.Deadlines = append(s.Deadlines, l)
		case TypeArtifactPulled:
			s.Pulls = append(s.Pulls, l)
		case TypeA2ASend:
			s.Sends = append(s.Sends, l)
		case TypeSessionEnd:
			s.Ended = true
			s.ExitStatus = l.Str("exit_status")
			s.Reason = l.Str("reason")
			s.Duration = time.Duration(l.Int("duration_ms")) * time.Millisecond
			if _, ok := l.Fields["total_turns"]; ok {
				sessionTotals = &f.Lines[i]
			}
		}
	}
	if !s.Ended && len(f.Lines) > 0 {
		s.Duration = time.Duration(last-first) * time.Millisecond
	}
	for _, id := range order {
		t := tasks[id]
		s.Tasks = append(s.Tasks, *t)
		s.TotalTurns += t.Turns
		s.InputTokens += t.InputTokens
		s.OutputTokens += t.OutputTokens
	}
	if sessionTotals != nil {
		// session_end's totals also count hooks' run-inference tokens.
		s.TotalTurns = sessionTotals.Int("total_turns")
		s.InputTokens, s.OutputTokens = sessionTotals.Int("input_tokens"), sessionTotals.Int("output_tokens")
	}
	for _, id := range dlgOrder {
		s.Delegations = append(s.Delegations, *dlgs[id])
	}
	return s
}
