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
}

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
		}
	}
	if !s.Ended && len(f.Lines) > 0 {
		s.Duration = time.Duration(last-first) * time.Millisecond
	}
	return s
}
