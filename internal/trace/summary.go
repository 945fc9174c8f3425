package trace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
)

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
	// ToolCount counts the tool_call lines; ToolCalls holds them only when
	// the summary was made with the calls kept (Summarize, not
	// SummarizeFile, which stays bounded on a trace of any length).
	ToolCount  int
	ToolCalls  []ToolCallLine
	ToolErrors int
	// Deadlines, Pulls, Sends and Rejected hold at most MaxListed lines
	// each; Unlisted counts the lines of these kinds left out.
	Deadlines []Line // call_deadline lines
	Pulls     []Line
	Sends     []Line
	Unlisted  int
	Events    int
	Truncated bool
	// BadCount counts the lines that are not events; BadLines holds the
	// first of their numbers.
	BadCount int
	BadLines []int
	// Disagreements says, one sentence each, where the totals a trace
	// states (session_end's, task_end's) disagree with its own lines: a
	// trace that lost lines, or totals that were never brought to agree.
	Disagreements []string

	// An agent trace (docs/agent-capsules.md): its tasks in the order they started,
	// the messages the door rejected, the shell calls and delegations.
	Tasks       []TaskSummary
	Rejected    []Line // task_rejected lines (at most MaxListed)
	ShellCount  int    // shell lines
	ShellCalls  []Line // shell lines, when the calls are kept (see ToolCalls)
	Delegations []DelegationSummary
	// MCPServers are the session's MCP servers, in the order they first
	// started (docs/mcp.md).
	MCPServers []MCPServerSummary
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

// MCPServerSummary is one MCP server read back: its starts, the calls and
// errors of all of them, and how its last start ended ("" while running).
type MCPServerSummary struct {
	Server        string
	Starts        int
	Calls, Errors int64
	EndedReason   string
}

// DelegationSummary is one delegation of the session (docs/delegation.md): the
// delegation_start line, and the delegation line with its outcome.
type DelegationSummary struct {
	DelegationID, Capsule, Version, ChildSession string
	// Outcome is ok, error, crashed, terminated, refused or failed; "" while
	// no delegation line has been written for it.
	Outcome, Reason string
	Duration        time.Duration
}

// Trace lines of the shell tools and of delegation (docs/agent-capsules.md,
// docs/delegation.md), read here by name: their writers live with those
// features.
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

// MaxListed bounds each list of lines a Summary holds besides the calls.
const MaxListed = 100

// SummarizeFile streams the trace at path into a Summary without keeping its
// tool_call and shell lines, so memory stays bounded however long the trace.
// The ScanResult says how many bytes were read: a second pass (EachLine)
// reads no further, so both agree on a trace that is still growing.
func SummarizeFile(path string) (Summary, ScanResult, error) {
	z := NewSummarizer(false)
	res, err := scanFile(path, -1, z.Add)
	if err != nil {
		return Summary{}, res, err
	}
	return z.Summary(res), res, nil
}

// EachLine streams the first limit bytes of the trace at path (all of it
// when limit < 0) to fn, one event at a time.
func EachLine(path string, limit int64, fn func(Line)) error {
	_, err := scanFile(path, limit, fn)
	return err
}

func scanFile(path string, limit int64, fn func(Line)) (ScanResult, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return ScanResult{}, diag.New("E-TRC-002", "no trace at %s", path).
				WithHint("run 'mur trace show' with a session id, @N, or the path of a trace.jsonl")
		}
		return ScanResult{}, diag.Wrap(err, "E-TRC-003", "cannot read the trace %s", path)
	}
	defer f.Close()
	var r io.Reader = f
	if limit >= 0 {
		r = io.LimitReader(f, limit)
	}
	res, err := Scan(r, fn)
	if err != nil {
		return res, diag.Wrap(err, "E-TRC-003", "cannot read the trace %s", path)
	}
	return res, nil
}

// Summarizer builds a Summary from a trace's lines in order, one at a time.
type Summarizer struct {
	s         Summary
	keepCalls bool

	first, last int64
	n           int
	tasks       map[string]*TaskSummary
	order       []string
	ended       map[string]bool // tasks whose task_end was read
	dlgs        map[string]*DelegationSummary
	dlgOrder    []string
	end         *Line // session_end
	// What the lines add up to, to check the totals against.
	lineToolsOf, lineShellOf map[string]int64 // tool_call and shell lines per task
	endSums                  TaskSummary      // the sums over task_end lines
	taskEnds                 int64
	hookIn, hookOut          int64
}

// NewSummarizer starts a summary; keepCalls keeps every tool_call and shell
// line in it (unbounded: for traces read whole).
func NewSummarizer(keepCalls bool) *Summarizer {
	return &Summarizer{keepCalls: keepCalls, tasks: map[string]*TaskSummary{}, ended: map[string]bool{},
		dlgs: map[string]*DelegationSummary{}, lineToolsOf: map[string]int64{}, lineShellOf: map[string]int64{}}
}

func (z *Summarizer) task(id string) *TaskSummary {
	if id == "" {
		return nil
	}
	t, ok := z.tasks[id]
	if !ok {
		t = &TaskSummary{TaskID: id}
		z.tasks[id] = t
		z.order = append(z.order, id)
	}
	return t
}

func (z *Summarizer) dlg(l Line) *DelegationSummary {
	id := l.Str("delegation_id")
	d, ok := z.dlgs[id]
	if !ok {
		d = &DelegationSummary{DelegationID: id}
		z.dlgs[id] = d
		z.dlgOrder = append(z.dlgOrder, id)
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

func (z *Summarizer) list(dst *[]Line, l Line) {
	if len(*dst) < MaxListed {
		*dst = append(*dst, l)
	} else {
		z.s.Unlisted++
	}
}

// Add reads one line.
func (z *Summarizer) Add(l Line) {
	s := &z.s
	if z.n == 0 {
		z.first = l.Timestamp
	}
	z.n++
	z.last = l.Timestamp
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
		tc := ToolCallLineOf(l)
		s.ToolCount++
		if tc.Status != "ok" {
			s.ToolErrors++
		}
		if z.keepCalls {
			s.ToolCalls = append(s.ToolCalls, tc)
		}
		if t := z.task(l.Str("task_id")); t != nil {
			z.lineToolsOf[t.TaskID]++
			if !z.ended[t.TaskID] {
				t.ToolCalls++
				if tc.Status != "ok" {
					t.ToolErrors++
				}
			}
		}
	case TypeTaskStart:
		if t := z.task(l.Str("task_id")); t != nil {
			t.ContextID, t.Source, t.Origin = l.Str("context_id"), l.Str("source"), l.Str("origin")
		}
	case TypeInference:
		if t := z.task(l.Str("task_id")); t != nil && !z.ended[t.TaskID] {
			t.Turns++
			t.InputTokens += l.Int("input_tokens")
			t.OutputTokens += l.Int("output_tokens")
		}
	case TypeMCPServerStart, TypeMCPServerEnd:
		name := l.Str("server")
		i := slices.IndexFunc(s.MCPServers, func(m MCPServerSummary) bool { return m.Server == name })
		if i < 0 {
			if len(s.MCPServers) >= MaxListed {
				break
			}
			s.MCPServers = append(s.MCPServers, MCPServerSummary{Server: name})
			i = len(s.MCPServers) - 1
		}
		m := &s.MCPServers[i]
		if l.EventType == TypeMCPServerStart {
			m.Starts++
			m.EndedReason = ""
		} else {
			m.Calls += l.Int("calls")
			m.Errors += l.Int("errors")
			m.EndedReason = l.Str("reason")
		}
	case evShell:
		s.ShellCount++
		if z.keepCalls {
			s.ShellCalls = append(s.ShellCalls, l)
		}
		if t := z.task(l.Str("task_id")); t != nil {
			z.lineShellOf[t.TaskID]++
			if !z.ended[t.TaskID] {
				t.ShellCalls++
			}
		}
	case TypeTaskCanceled:
		if t := z.task(l.Str("task_id")); t != nil {
			t.Phase = l.Str("phase")
		}
	case TypeTaskEnd:
		if t := z.task(l.Str("task_id")); t != nil {
			z.ended[t.TaskID] = true
			t.Status = l.Str("exit_status")
			t.Turns = l.Int("turns")
			t.InputTokens, t.OutputTokens = l.Int("input_tokens"), l.Int("output_tokens")
			t.ToolCalls, t.ToolErrors = l.Int("tool_calls"), l.Int("tool_errors")
			t.ShellCalls = l.Int("shell_calls")
			t.Duration = time.Duration(l.Int("duration_ms")) * time.Millisecond
		}
		z.taskEnds++
		e := &z.endSums
		e.Turns += l.Int("turns")
		e.InputTokens += l.Int("input_tokens")
		e.OutputTokens += l.Int("output_tokens")
		e.ToolCalls += l.Int("tool_calls")
		e.ToolErrors += l.Int("tool_errors")
		e.ShellCalls += l.Int("shell_calls")
	case TypeHookCall:
		z.hookIn += l.Int("input_tokens")
		z.hookOut += l.Int("output_tokens")
	case TypeTaskRejected:
		z.list(&s.Rejected, l)
	case evDelegationStart:
		z.dlg(l)
	case evDelegation:
		d := z.dlg(l)
		d.Outcome, d.Reason = l.Str("outcome"), l.Str("reason")
		d.Duration = time.Duration(l.Int("duration_ms")) * time.Millisecond
	case TypeCallDeadline:
		z.list(&s.Deadlines, l)
	case TypeArtifactPulled:
		z.list(&s.Pulls, l)
	case TypeA2ASend:
		z.list(&s.Sends, l)
	case TypeSessionEnd:
		s.Ended = true
		s.ExitStatus = l.Str("exit_status")
		s.Reason = l.Str("reason")
		s.Duration = time.Duration(l.Int("duration_ms")) * time.Millisecond
		end := l
		z.end = &end
	}
}

// ToolCallLineOf reads a tool_call line.
func ToolCallLineOf(l Line) ToolCallLine {
	return ToolCallLine{
		Tool: l.Str("tool_name"), Status: l.Str("status"),
		Duration: time.Duration(l.Int("duration_ms")) * time.Millisecond,
		In:       l.Int("input_bytes"), Out: l.Int("output_bytes"), Error: l.Str("error"),
	}
}

// Summary is what the lines added so far come to; res is what the scan
// found besides them.
func (z *Summarizer) Summary(res ScanResult) Summary {
	s := z.s
	s.Events, s.Truncated, s.BadCount, s.BadLines = res.Events, res.Truncated, res.BadCount, res.Bad
	if !s.Ended && z.n > 0 {
		s.Duration = time.Duration(z.last-z.first) * time.Millisecond
	}
	s.Tasks = nil
	for _, id := range z.order {
		t := z.tasks[id]
		s.Tasks = append(s.Tasks, *t)
		s.TotalTurns += t.Turns
		s.InputTokens += t.InputTokens
		s.OutputTokens += t.OutputTokens
	}
	agentEnd := false
	if z.end != nil {
		if _, ok := z.end.Fields["total_turns"]; ok {
			agentEnd = true
			// session_end's totals also count hooks' run-inference tokens.
			s.TotalTurns = z.end.Int("total_turns")
			s.InputTokens, s.OutputTokens = z.end.Int("input_tokens"), z.end.Int("output_tokens")
		}
	}
	s.Delegations = nil
	for _, id := range z.dlgOrder {
		s.Delegations = append(s.Delegations, *z.dlgs[id])
	}
	s.Disagreements = z.disagreements(agentEnd)
	return s
}

// disagreements checks the totals a trace states against its lines: a
// script's session_end against its tool_call lines; an agent's session_end
// against the sums of its task_end lines (and hooks' tokens), and each
// task_end against the tool_call and shell lines of its task.
func (z *Summarizer) disagreements(agentEnd bool) []string {
	var out []string
	check := func(what string, stated, counted int64, of string) {
		if stated != counted {
			out = append(out, fmt.Sprintf("%s is %d, but "+of, what, stated, counted))
		}
	}
	for _, id := range z.order {
		t := z.tasks[id]
		if !z.ended[id] {
			continue
		}
		check("task_end.tool_calls of "+id, t.ToolCalls, z.lineToolsOf[id], "the trace holds %d tool_call line(s) of that task")
		check("task_end.shell_calls of "+id, t.ShellCalls, z.lineShellOf[id], "the trace holds %d shell line(s) of that task")
	}
	if z.end == nil {
		return out
	}
	e := z.end
	if !agentEnd {
		check("session_end.tool_calls", e.Int("tool_calls"), int64(z.s.ToolCount), "the trace holds %d tool_call line(s)")
		check("session_end.tool_errors", e.Int("tool_errors"), int64(z.s.ToolErrors), "%d of its tool_call lines are not ok")
		return out
	}
	sum := "the task_end lines add up to %d"
	check("session_end.tasks", e.Int("tasks"), z.taskEnds, "the trace holds %d task_end line(s)")
	check("session_end.total_turns", e.Int("total_turns"), z.endSums.Turns, sum)
	check("session_end.tool_calls", e.Int("tool_calls"), z.endSums.ToolCalls, sum)
	check("session_end.tool_errors", e.Int("tool_errors"), z.endSums.ToolErrors, sum)
	check("session_end.shell_calls", e.Int("shell_calls"), z.endSums.ShellCalls, sum)
	check("session_end.input_tokens", e.Int("input_tokens"), z.endSums.InputTokens+z.hookIn, sum+" with hooks' tokens")
	check("session_end.output_tokens", e.Int("output_tokens"), z.endSums.OutputTokens+z.hookOut, sum+" with hooks' tokens")
	return out
}
