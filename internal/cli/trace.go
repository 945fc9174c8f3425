package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/snapshot"
	"github.com/murmur-go/murmur/internal/trace"
)

func init() { register(newTraceCmd) }

func newTraceCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Read and remove session traces",
		// Without a subcommand: the help; with an unknown one: a usage error.
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q for %q: use ls, show or rm", args[0], cmd.CommandPath())}
			}
			return cmd.Help()
		},
		Long: `Read and remove the records a session leaves in
~/.murmur/records/<project dir>/<session id>/ (trace.jsonl, logs/, out/).`,
		Example: `  mur trace ls                   # this project's sessions, newest first, with their @N
  mur trace show @1              # the newest one's summary
  mur trace rm @3                # remove an old one's records`,
		Args: cobra.ArbitraryArgs,
	}
	var showJSON, showTree bool
	show := &cobra.Command{
		Use: "show [SESSION|@N|PATH]",
		Example: `  mur trace show                 # this project's newest session (@1)
  mur trace show @2              # the one before it
  mur trace show 13f0b6d2        # the session whose id ends so (8 or more characters)
  mur trace show --tree @1       # with every sub-capsule it delegated to
  mur trace show --json ~/.murmur/records/p/ses_…/trace.jsonl`,
		ValidArgsFunction: completeRecordedSessions(true),
		Short:             "Summarise one session's trace (default @1, the newest session of this project)",
		Long: `Summarise one session's trace: session, capsule, start, ending, duration,
each tool call with its status, latency and sizes, deadlines, pulls and sends.

The argument is one of:
  SESSION  a session id (ses_ and 32 hex digits), or a suffix of at least 4
           characters that ends one id only, looked up in this project's
           records first, then in every project's
  @N       the Nth newest session of this project (@1 is the newest; default)
  PATH     a trace.jsonl, or a session's records dir
  FORMATION  a formation id (frm_…): its members, their endings and durations

A session killed with SIGKILL has no session_end: its summary says so and
names its last event. With --json, the summary is one JSON object (its
tool_calls listed in order).

With --tree, it prints the session's whole delegation tree instead: the
session, then each sub-capsule it delegated to, followed into that child's
own records (under children/ of the parent's records dir) and so on down,
one line per node with its capsule, session, outcome and duration.`,
		Args: maxArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			ref := "@1"
			if len(args) == 1 {
				ref = args[0]
			}
			if strings.HasPrefix(ref, "frm_") {
				if showTree && showJSON {
					return usageError{fmt.Errorf("--tree and --json cannot be combined")}
				}
				return traceShowFormation(ref, showJSON, showTree, stdout)
			}
			path, err := resolveTrace(ref)
			if err != nil {
				return err
			}
			if showTree {
				if showJSON {
					return usageError{fmt.Errorf("--tree and --json cannot be combined")}
				}
				bw := bufio.NewWriter(stdout)
				err := renderTree(bw, path)
				if ferr := bw.Flush(); err == nil && ferr != nil {
					return fmt.Errorf("writing the tree of %s: %w", path, ferr)
				}
				return err
			}
			// Two passes, so a trace of any length is shown in bounded
			// memory: the summary, then its calls as they are read.
			sum, res, err := trace.SummarizeFile(path)
			if err != nil {
				return err
			}
			if sum.Events == 0 && sum.BadCount > 0 {
				return diag.New("E-TRC-009", "%s is not a trace: none of its %d line(s) is a trace event", path, sum.BadCount).
					WithHint("give a session's trace.jsonl, a session id, or @N")
			}
			each := func(fn func(trace.Line)) error { return trace.EachLine(path, res.Bytes, fn) }
			bw := bufio.NewWriterSize(stdout, 64<<10) // a line per call: one write each would dominate
			if showJSON {
				err = renderSummaryJSON(bw, path, sum, liveSession(sum.SessionID), each)
			} else {
				err = renderSummary(bw, path, sum, liveSession(sum.SessionID), each)
			}
			if ferr := bw.Flush(); err == nil && ferr != nil {
				return fmt.Errorf("writing the summary of %s: %w", path, ferr)
			}
			return err
		},
	}
	rm := &cobra.Command{
		Use:   "rm SESSION",
		Short: "Remove a session's records dir (trace, logs, results, children)",
		Long: `Remove the records dir of session SESSION: its trace.jsonl, logs/, out/,
completion.json and children/. SESSION is a session id, a suffix of at least
4 characters that ends one id only, or @N as 'mur trace ls' numbers this
project's sessions. Refused while the session is still running. The work
folder is not touched.`,
		Example: `  mur trace rm @3
  mur trace rm 13f0b6d2
  mur trace rm ses_0194a3c1e2f47b7d9a2c55e013f0b6d2`,
		ValidArgsFunction: completeRecordedSessions(false),
		Args:              exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return traceRm(args[0], stdout)
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print the summary as one JSON object")
	show.Flags().BoolVar(&showTree, "tree", false, "print the whole delegation tree: every sub-capsule, followed into its own records")
	cmd.AddCommand(newTraceLsCmd(stdout), show, rm)
	return cmd
}

// projectDir is the nearest directory at or above the working directory that
// holds a murmur.yaml, or the working directory itself.
func projectDir() (string, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return "", diag.Wrap(err, "E-TRC-006", "cannot read the current directory")
	}
	for d := cwd; ; d = filepath.Dir(d) {
		if st, err := os.Stat(filepath.Join(d, "murmur.yaml")); err == nil && !st.IsDir() {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return cwd, nil
		}
	}
}

// projectSessions lists the session ids recorded for the current project,
// newest first (ids carry their start time).
func projectSessions(homeDir string) (string, []string, error) {
	pd, err := projectDir()
	if err != nil {
		return "", nil, err
	}
	dir := home.ProjectRecords(homeDir, pd)
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return dir, nil, diag.Wrap(err, "E-TRC-003", "cannot list the sessions in %s", dir)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && ids.Valid(ids.Session, e.Name()) {
			out = append(out, e.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return dir, out, nil
}

// findSessionDir finds a session's records dir by its records: a dir whose
// trace.jsonl opens with a line naming the session, never a dir merely named
// like it (a --capsule run's project dir is its work folder, named after
// its own session, and may hold the records of others that shared it).
// This project's records are looked at first, then all of ~/.murmur/records.
func findSessionDir(homeDir, id string) (string, error) {
	if pd, err := projectDir(); err == nil {
		p := filepath.Join(home.ProjectRecords(homeDir, pd), id)
		if trace.Names(filepath.Join(p, trace.FileName), id) {
			return p, nil
		}
	}
	root := home.Records(homeDir)
	found := ""
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == root || !ids.Valid(ids.Session, d.Name()) {
			return nil
		}
		tp := filepath.Join(p, trace.FileName)
		if _, err := os.Lstat(tp); err != nil {
			return nil // not a session's records dir: a project dir named like one
		}
		if d.Name() == id && trace.Names(tp, id) {
			found = p
			return fs.SkipAll
		}
		return fs.SkipDir // another session's records: its children are not sessions of a project
	})
	if found == "" {
		return "", diag.New("E-TRC-004", "no records of session %s", id).
			WithHint("run 'mur trace show @1' for the newest session of this project, or give the path of a trace.jsonl")
	}
	return found, nil
}

// resolveTrace turns SESSION, @N or PATH into the path of a trace.jsonl.
// What is a file or a directory, or is written like a path, is a path;
// anything else names a session (sessionref.go).
func resolveTrace(ref string) (string, error) {
	homeDir, err := home.Dir()
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(ref); err == nil {
		if st.IsDir() {
			return filepath.Join(ref, trace.FileName), nil
		}
		return ref, nil
	}
	if strings.ContainsRune(ref, '/') || strings.HasSuffix(ref, ".jsonl") {
		return ref, nil // the reader names the missing file
	}
	r, err := parseSessionRef(ref)
	if err != nil {
		return "", err
	}
	id, err := recordedSessionID(homeDir, r)
	if err != nil {
		return "", err
	}
	if r.ordinal > 0 {
		dir, _, err := projectSessions(homeDir)
		if err != nil {
			return "", err
		}
		return filepath.Join(dir, id, trace.FileName), nil
	}
	dir, err := findSessionDir(homeDir, id)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, trace.FileName), nil
}

// liveSession returns the pid of the session's running process, or 0 when
// it is not running (no live record in ~/.murmur/running).
func liveSession(id string) int {
	homeDir, err := home.Dir()
	if id == "" || err != nil {
		return 0
	}
	entries, _ := running.Scan(home.Running(homeDir))
	for _, e := range entries {
		if e.State == running.Live && e.Record.SessionID == id {
			return e.Record.PID
		}
	}
	return 0
}

// renderSummary prints a trace summary; livePID is the session's process
// while it still runs (its trace has no session_end yet), else 0. each
// streams the trace's lines again for the lists of calls. Every string read
// from the trace is shown through safe: the guest chose many of them.
func renderSummary(w io.Writer, path string, s trace.Summary, livePID int, each func(func(trace.Line)) error) error {
	row := func(k, v string) { fmt.Fprintf(w, "%-10s %s\n", k+":", v) }
	row("session", safe(orDash(s.SessionID)))
	capsule := orDash(s.CapsuleName)
	if s.CapsuleVersion != "" {
		capsule += "@" + s.CapsuleVersion
	}
	if s.Kind != "" {
		capsule += " (" + s.Kind + ")"
	}
	row("capsule", safe(capsule))
	if !s.Started.IsZero() {
		row("started", s.Started.UTC().Format(time.RFC3339))
	}
	switch {
	case s.Ended:
		ending := s.ExitStatus
		if s.Reason != "" {
			ending += " (" + s.Reason + ")"
		}
		row("ending", safe(ending))
	case livePID > 0:
		row("ending", fmt.Sprintf("still running (pid %d); its last event so far is %s", livePID, safe(s.LastEvent)))
	case s.Events == 0:
		row("ending", "the trace holds no events")
	default:
		row("ending", "ended without a session_end; its last event is "+safe(s.LastEvent))
	}
	row("duration", fmtDur(s.Duration))
	agent := s.Kind == "agent" || len(s.Tasks) > 0
	if agent {
		renderTasks(w, s, livePID > 0)
		if err := renderPlans(w, each); err != nil {
			return err
		}
	}
	calls := fmt.Sprintf("%d", s.ToolCount)
	if s.ToolErrors > 0 {
		calls += fmt.Sprintf(" (%d failed)", s.ToolErrors)
	}
	row("tools", calls)
	if s.ToolCount > 0 {
		err := each(func(l trace.Line) {
			if l.EventType != trace.TypeToolCall {
				return
			}
			tc := trace.ToolCallLineOf(l)
			line := fmt.Sprintf("  %-24s %-5s %8s  in %d B, out %d B", safe(tc.Tool), safe(tc.Status), fmtDur(tc.Duration), tc.In, tc.Out)
			if tc.Error != "" {
				line += "  " + safe(tc.Error)
			}
			fmt.Fprintln(w, line)
		})
		if err != nil {
			return err
		}
	}
	if agent {
		row("shell", fmt.Sprintf("%d", s.ShellCount))
		if s.ShellCount > 0 {
			err := each(func(sh trace.Line) {
				if sh.EventType != trace.TypeShell {
					return
				}
				fmt.Fprintf(w, "  %-24s exit %-3d %8s  %s\n", safe(sh.Str("binary")), sh.Int("exit_code"),
					fmtDur(time.Duration(sh.Int("duration_ms"))*time.Millisecond), safe(clip(sh.Str("command"), 60)))
			})
			if err != nil {
				return err
			}
		}
	}
	if agent {
		if err := renderDenied(w, each); err != nil {
			return err
		}
	}
	for _, m := range s.MCPServers {
		ended := m.EndedReason
		if ended == "" {
			ended = "(still running)"
		}
		fmt.Fprintf(w, "mcp %s: %d start(s), %d calls, %d errors, ended %s\n", safe(m.Server), m.Starts, m.Calls, m.Errors, safe(ended))
	}
	if len(s.Delegations) > 0 {
		row("delegated", fmt.Sprintf("%d", len(s.Delegations)))
		for _, d := range s.Delegations {
			capsule := orDash(d.Capsule)
			if d.Version != "" {
				capsule += "@" + d.Version
			}
			outcome := d.Outcome
			switch {
			case outcome == "" && livePID > 0:
				outcome = "running"
			case outcome == "":
				outcome = "unfinished"
			}
			line := fmt.Sprintf("  %-36s %-24s %-10s child %s", safe(d.DelegationID), safe(capsule), safe(outcome), safe(orDash(d.ChildSession)))
			if d.Outcome != "" {
				line += "  " + fmtDur(d.Duration)
			}
			if d.Reason != "" {
				line += "  " + safe(d.Reason)
			}
			fmt.Fprintln(w, line)
		}
	}
	for _, d := range s.Deadlines {
		fmt.Fprintf(w, "deadline:  %s %s stopped while waiting on the runtime after %d ms\n", safe(d.Str("component")), safe(d.Str("call")), d.Int("deadline_ms"))
	}
	for _, p := range s.Pulls {
		fmt.Fprintf(w, "pulled:    %s@%s into the %s store\n", safe(p.Str("name")), safe(p.Str("version")), safe(p.Str("store")))
	}
	for _, a := range s.Sends {
		fmt.Fprintf(w, "sent:      %s task %s %s\n", safe(a.Str("peer_url")), safe(a.Str("task_id")), safe(a.Str("state")))
	}
	if s.Unlisted > 0 {
		fmt.Fprintf(w, "note:      %d more deadline, pull, send or rejected line(s) are not listed\n", s.Unlisted)
	}
	for _, d := range s.Disagreements {
		fmt.Fprintf(w, "disagrees: %s\n", safe(d))
	}
	if s.Truncated {
		fmt.Fprintln(w, "note:      the last line was cut off mid-write")
	}
	if s.BadCount > 0 {
		fmt.Fprintf(w, "note:      %d line(s) are not events and were skipped (line %d first)\n", s.BadCount, s.BadLines[0])
	}
	if livePID == 0 && s.SessionID != "" {
		renderAnswer(w, path, s)
	}
	row("trace", path)
	return nil
}

// answerShown bounds the answer trace show prints in full; a longer one is
// named by its path and size.
const answerShown = 2 << 10

// renderAnswer prints the session's answer (the records dir's out/result.txt)
// under the summary: the text when short, else its path.
func renderAnswer(w io.Writer, tracePath string, s trace.Summary) {
	p, ok := answerOf(tracePath, s)
	if !ok {
		switch {
		case s.Kind == "agent":
			fmt.Fprintf(w, "%-10s none (no task ended ok)\n", "answer:")
		case p == "":
			fmt.Fprintf(w, "%-10s out/result.txt in its work folder\n", "answer:")
		default:
			fmt.Fprintf(w, "%-10s out/result.txt in its work folder (not at %s)\n", "answer:", p)
		}
		return
	}
	st, err := os.Stat(p)
	if err != nil {
		return
	}
	fmt.Fprintf(w, "%-10s %s (%d bytes)\n", "answer:", p, st.Size())
	if st.Size() == 0 || st.Size() > answerShown {
		return
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return
	}
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		fmt.Fprintf(w, "  %s\n", safe(l))
	}
}

// answerOf is where a session's answer is, and whether it is there: an
// agent's in its records dir; a script's in its work folder, which the trace
// does not name, so it is looked for where the runtime puts one by default
// (<project>/workdir/<session>, or a --capsule run's ./workdir/<session>,
// which is its own project dir). A --workdir run's is not found.
func answerOf(tracePath string, s trace.Summary) (string, bool) {
	records := filepath.Dir(tracePath)
	if s.Kind == "agent" {
		p := filepath.Join(records, "out", "result.txt")
		return p, regularFile(p)
	}
	homeDir, err := home.Dir()
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(home.Records(homeDir), filepath.Dir(records))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	project := "/" + rel
	p := filepath.Join(project, "workdir", s.SessionID, "out", "result.txt")
	if filepath.Base(project) == s.SessionID {
		p = filepath.Join(project, "out", "result.txt")
	}
	return p, regularFile(p)
}

func regularFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// safe shows a string the guest may have chosen on one terminal line:
// control characters (C0, DEL, C1), the invisible format characters that
// reorder or hide text (bidi overrides, zero-width), and invalid UTF-8 are
// written as Go escapes, so a name cannot forge the rest of its line.
func safe(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, n := utf8.DecodeRuneInString(s[i:])
		w = n
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// renderTasks prints an agent session's tasks, its session totals and the
// messages its door rejected. A task with no task_end is running while the
// session lives, else unfinished (the session was killed mid-task).
func renderTasks(w io.Writer, s trace.Summary, live bool) {
	row := func(k, v string) { fmt.Fprintf(w, "%-10s %s\n", k+":", v) }
	row("tasks", fmt.Sprintf("%d", len(s.Tasks)))
	for _, t := range s.Tasks {
		status := t.Status
		switch {
		case status == "" && live:
			status = "running"
		case status == "":
			status = "unfinished"
		}
		line := fmt.Sprintf("  %-36s %-21s turns %d, tokens %d in / %d out, tools %d", safe(t.TaskID), safe(status),
			t.Turns, t.InputTokens, t.OutputTokens, t.ToolCalls)
		if t.ToolErrors > 0 {
			line += fmt.Sprintf(" (%d failed)", t.ToolErrors)
		}
		line += fmt.Sprintf(", shell %d", t.ShellCalls)
		if t.Status != "" {
			line += ", " + fmtDur(t.Duration)
		}
		if t.Phase != "" {
			line += ", canceled in " + safe(t.Phase)
		}
		fmt.Fprintln(w, line)
	}
	row("turns", fmt.Sprintf("%d", s.TotalTurns))
	row("tokens", fmt.Sprintf("%d in / %d out", s.InputTokens, s.OutputTokens))
	for _, r := range s.Rejected {
		fmt.Fprintf(w, "rejected:  %s %s\n", safe(r.Str("task_id")), safe(r.Str("reason")))
	}
}

// clip cuts s to at most n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.2f s", d.Seconds())
	default:
		return d.Round(time.Second).String()
	}
}

// traceRm removes a session's records dir, refusing while it runs. ref is
// a full id, a suffix or @N (sessionref.go).
func traceRm(ref string, stdout io.Writer) error {
	homeDir, err := home.Dir()
	if err != nil {
		return err
	}
	if strings.HasPrefix(ref, "frm_") {
		return traceRmFormation(homeDir, ref, stdout)
	}
	r, err := parseSessionRef(ref)
	if err != nil {
		return err
	}
	id, err := recordedSessionID(homeDir, r)
	if err != nil {
		return err
	}
	if entries, err := running.Scan(home.Running(homeDir)); err == nil {
		for _, e := range entries {
			if e.State == running.Live && e.Record.SessionID == id {
				return diag.New("E-TRC-007", "session %s is still running (pid %d)", id, e.Record.PID).
					WithHint("wait for it to end, then remove its records")
			}
		}
	}
	if session.Begun(home.Sessions(homeDir), id) {
		// Begun with no running record yet: it is starting.
		return diag.New("E-TRC-007", "session %s is still running (it is starting)", id).
			WithHint("wait for it to end, then remove its records")
	}
	dir, err := findSessionDir(homeDir, id)
	if err != nil {
		return err
	}
	if err := snapshot.Remove(dir); err != nil {
		return diag.Wrap(err, "E-TRC-008", "cannot remove %s", dir)
	}
	fmt.Fprintf(stdout, "removed %s\n", dir)
	// Its delegated children's records, which lie outside dir, under the
	// children's own work folders (docs/delegation.md "The tree").
	tree := session.ChildRecordsTree(home.Records(homeDir), dir)
	if _, err := os.Lstat(tree); err != nil {
		return nil
	}
	if err := session.RemoveChildRecords(home.Records(homeDir), dir); err != nil {
		return diag.Wrap(err, "E-TRC-008", "cannot remove the delegated children's records under %s", tree)
	}
	fmt.Fprintf(stdout, "removed %s\n", tree)
	return nil
}

// renderDenied lists the calls the policy gate stopped (call_denied lines):
// the tool, who denied it and why. Nothing is printed when there are none.
func renderDenied(w io.Writer, each func(func(trace.Line)) error) error {
	var rows []string
	err := each(func(l trace.Line) {
		if l.EventType != trace.TypeCallDenied {
			return
		}
		by := l.Str("by")
		if h := l.Str("hook"); h != "" {
			by += " " + h
		}
		rows = append(rows, fmt.Sprintf("  %-24s denied by %-20s %s", safe(l.Str("tool_name")), safe(by), safe(clip(l.Str("reason"), 120))))
	})
	if err != nil || len(rows) == 0 {
		return err
	}
	fmt.Fprintf(w, "%-10s %d\n", "denied:", len(rows))
	for _, r := range rows {
		fmt.Fprintln(w, r)
	}
	return nil
}
