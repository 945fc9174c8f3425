package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/trace"
)

// summaryJSON is mur trace show --json: the summary's facts, keyed as the
// trace's own lines key them. Strings are the trace's, unescaped: JSON
// quoting already keeps a guest-chosen name on its line.
type summaryJSON struct {
	SessionID      string   `json:"session_id"`
	Capsule        string   `json:"capsule"`
	CapsuleName    string   `json:"capsule_name"`
	CapsuleVersion string   `json:"capsule_version"`
	Kind           string   `json:"kind"`
	Started        *string  `json:"started"`
	Ended          bool     `json:"ended"`
	ExitStatus     *string  `json:"exit_status"` // null without a session_end
	Reason         string   `json:"reason,omitempty"`
	RunningPID     int      `json:"running_pid,omitempty"`
	LastEvent      string   `json:"last_event"`
	DurationMS     int64    `json:"duration_ms"`
	ToolCount      int      `json:"tool_count"`
	ToolErrors     int      `json:"tool_errors"`
	ShellCount     int      `json:"shell_count"`
	Tasks          int      `json:"tasks"`
	Delegations    int      `json:"delegations"`
	Disagreements  []string `json:"disagreements"`
	Truncated      bool     `json:"truncated"`
	BadLines       int      `json:"bad_lines"`
	Events         int      `json:"events"`
	Trace          string   `json:"trace"`
}

// toolCallJSON is one element of the summary's tool_calls.
type toolCallJSON struct {
	ToolName    string `json:"tool_name"`
	Status      string `json:"status"`
	DurationMS  int64  `json:"duration_ms"`
	InputBytes  int64  `json:"input_bytes"`
	OutputBytes int64  `json:"output_bytes"`
	Error       string `json:"error,omitempty"`
}

func newSummaryJSON(path string, s trace.Summary, livePID int) summaryJSON {
	j := summaryJSON{
		SessionID: s.SessionID, Capsule: capsuleRef(s.CapsuleName, s.CapsuleVersion), CapsuleName: s.CapsuleName,
		CapsuleVersion: s.CapsuleVersion, Kind: s.Kind, Ended: s.Ended, Reason: s.Reason, LastEvent: s.LastEvent,
		DurationMS: s.Duration.Milliseconds(), ToolCount: s.ToolCount, ToolErrors: s.ToolErrors, ShellCount: s.ShellCount,
		Tasks: len(s.Tasks), Delegations: len(s.Delegations), Disagreements: s.Disagreements, Truncated: s.Truncated,
		BadLines: s.BadCount, Events: s.Events, Trace: path,
	}
	if j.Disagreements == nil {
		j.Disagreements = []string{}
	}
	if !s.Started.IsZero() {
		t := s.Started.UTC().Format(time.RFC3339)
		j.Started = &t
	}
	if s.Ended {
		st := s.ExitStatus
		j.ExitStatus = &st
	} else {
		j.RunningPID = livePID
	}
	return j
}

// renderSummaryJSON writes the summary as one JSON object. Its tool_calls
// array is streamed from the trace, so a trace of any length is shown in
// bounded memory, as the text summary is.
func renderSummaryJSON(w io.Writer, path string, s trace.Summary, livePID int, each func(func(trace.Line)) error) error {
	head, err := json.Marshal(newSummaryJSON(path, s, livePID))
	if err != nil {
		return err
	}
	w.Write(head[:len(head)-1]) // reopened to append tool_calls
	io.WriteString(w, `,"tool_calls":[`)
	n := 0
	var werr error
	err = each(func(l trace.Line) {
		if l.EventType != trace.TypeToolCall || werr != nil {
			return
		}
		tc := trace.ToolCallLineOf(l)
		b, err := json.Marshal(toolCallJSON{ToolName: tc.Tool, Status: tc.Status, DurationMS: tc.Duration.Milliseconds(),
			InputBytes: tc.In, OutputBytes: tc.Out, Error: tc.Error})
		if err != nil {
			werr = err
			return
		}
		if n > 0 {
			io.WriteString(w, ",")
		}
		n++
		w.Write(b)
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, "]}\n")
	return err
}

// lsRow is one session of mur trace ls --json.
type lsRow struct {
	N          int     `json:"n"`
	SessionID  string  `json:"session_id"`
	Capsule    string  `json:"capsule"`
	Started    *string `json:"started"`
	ExitStatus *string `json:"exit_status"` // null: no session_end (running, or killed)
	Reason     string  `json:"reason,omitempty"`
	RunningPID int     `json:"running_pid,omitempty"`
	RecordsDir string  `json:"records_dir"`
}

func newTraceLsCmd(stdout io.Writer) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List this project's recorded sessions, newest first",
		Long: `List the sessions recorded for this project (the nearest directory at or
above this one holding a murmur.yaml), newest first, as a table:
@N SESSION CAPSULE STARTED ENDING. @N is what 'mur trace show @N' takes.
ENDING is the session_end's exit status, 'running' while its process lives,
or - when the session ended without one (killed). Prints 'no recorded
sessions in this project' when there are none. With --json, one JSON array.`,
		Args: exactArgs(0),
		RunE: func(_ *cobra.Command, _ []string) error {
			return traceLs(asJSON, stdout)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the sessions as one JSON array")
	return cmd
}

func traceLs(asJSON bool, stdout io.Writer) error {
	homeDir, err := home.Dir()
	if err != nil {
		return err
	}
	dir, list, err := projectSessions(homeDir)
	if err != nil {
		return err
	}
	rows := make([]lsRow, 0, len(list))
	for i, id := range list {
		r := lsRow{N: i + 1, SessionID: id, RecordsDir: filepath.Join(dir, id)}
		s, _, err := trace.SummarizeFile(filepath.Join(r.RecordsDir, trace.FileName))
		if err == nil {
			r.Capsule = capsuleRef(s.CapsuleName, s.CapsuleVersion)
			if !s.Started.IsZero() {
				t := s.Started.UTC().Format(time.RFC3339)
				r.Started = &t
			}
			if s.Ended {
				st := s.ExitStatus
				r.ExitStatus, r.Reason = &st, s.Reason
			} else {
				r.RunningPID = liveSession(id)
			}
		}
		rows = append(rows, r)
	}
	bw := bufio.NewWriter(stdout)
	defer bw.Flush()
	if asJSON {
		b, err := json.Marshal(rows)
		if err != nil {
			return err
		}
		fmt.Fprintln(bw, string(b))
		return nil
	}
	if len(rows) == 0 {
		fmt.Fprintln(bw, "no recorded sessions in this project")
		return nil
	}
	tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "@N\tSESSION\tCAPSULE\tSTARTED\tENDING")
	for _, r := range rows {
		started, ending := "-", "-"
		if r.Started != nil {
			started = *r.Started
		}
		switch {
		case r.ExitStatus != nil:
			ending = *r.ExitStatus
		case r.RunningPID > 0:
			ending = "running"
		}
		fmt.Fprintf(tw, "@%d\t%s\t%s\t%s\t%s\n", r.N, r.SessionID, safe(orDash(r.Capsule)), started, safe(ending))
	}
	return tw.Flush()
}
