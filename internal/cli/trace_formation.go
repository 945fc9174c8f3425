package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/trace"
)

// formationShow is formation.json as mur trace show reads it.
type formationShow struct {
	FormationID string           `json:"formation_id"`
	Roster      string           `json:"roster"`
	ProjectDir  string           `json:"project_dir"`
	Launcher    running.Launcher `json:"launcher"`
	StartedAt   string           `json:"started_at"`
	EndedAt     *string          `json:"ended_at"`
	ExitStatus  *int             `json:"exit_status"`
	Members     []struct {
		Name       string  `json:"name"`
		Entry      bool    `json:"entry"`
		Capsule    string  `json:"capsule"`
		Version    string  `json:"version"`
		SessionID  *string `json:"session_id"`
		RecordsDir *string `json:"records_dir"`
	} `json:"members"`
}

type formationMemberJSON struct {
	Name       string  `json:"name"`
	Entry      bool    `json:"entry"`
	Capsule    string  `json:"capsule"`
	SessionID  *string `json:"session_id"`
	RecordsDir *string `json:"records_dir"`
	ExitStatus *string `json:"exit_status"`
	DurationMS *int64  `json:"duration_ms"`
}

// formationCallJSON is one call-member call as mur trace show frm_… lists it.
type formationCallJSON struct {
	CallID       string  `json:"call_id"`
	From         string  `json:"from"`
	To           string  `json:"to"`
	Status       string  `json:"status"`
	DurationMS   *int64  `json:"duration_ms"`
	Offers       int64   `json:"offers"`
	MemberTaskID *string `json:"member_task_id"`
	busy         int
}

// memberCalls gathers a member's calls from its trace lines: one per
// call_id, "outstanding" until its member_call line.
func memberCalls(from string, lines []trace.Line) []*formationCallJSON {
	byID := map[string]*formationCallJSON{}
	var out []*formationCallJSON
	for _, l := range lines {
		switch l.EventType {
		case trace.TypeMemberCallBusy, trace.TypeMemberCallStart, trace.TypeMemberCall:
		default:
			continue
		}
		id := l.Str("call_id")
		c := byID[id]
		if c == nil {
			c = &formationCallJSON{CallID: id, From: from, To: l.Str("member"), Status: "outstanding"}
			byID[id] = c
			out = append(out, c)
		}
		switch l.EventType {
		case trace.TypeMemberCallBusy:
			c.busy++
			c.Offers = max(c.Offers, l.Int("offer"))
		case trace.TypeMemberCallStart:
			c.Offers = max(c.Offers, l.Int("offers"))
		case trace.TypeMemberCall:
			c.Status, c.Offers = l.Str("status"), l.Int("offers")
			d := l.Int("duration_ms")
			c.DurationMS = &d
		}
		if mt := l.Str("member_task_id"); mt != "" {
			c.MemberTaskID = &mt
		}
	}
	return out
}

// traceShowFormation is mur trace show frm_…: the formation's members,
// their endings and the calls between them.
func traceShowFormation(ref string, asJSON, tree bool, stdout io.Writer) error {
	if !ids.Valid(ids.Formation, ref) {
		return badSessionRef("%q names no formation: a formation id is frm_ followed by 32 lowercase hex digits", ref)
	}
	homeDir, err := home.Dir()
	if err != nil {
		return err
	}
	fj := filepath.Join(home.Formations(homeDir), ref, "formation.json")
	b, err := os.ReadFile(fj)
	var f formationShow
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil {
		return diag.Wrap(err, "E-TRC-004", "no formation %s is recorded (%s)", ref, fj).
			WithHint("a formation's records go with its folder under ~/.murmur/formations (trace.retain may have removed it)")
	}
	launcherAlive := false
	if f.Launcher.PID > 0 {
		if ps, err := running.ProcessStart(f.Launcher.PID); err == nil && ps == f.Launcher.ProcessStart {
			launcherAlive = true
		}
	}
	var rows []formationMemberJSON
	calls := []*formationCallJSON{}
	ending := "-"
	for _, m := range f.Members {
		row := formationMemberJSON{Name: m.Name, Entry: m.Entry, Capsule: m.Capsule + "@" + m.Version, SessionID: m.SessionID, RecordsDir: m.RecordsDir}
		if m.RecordsDir != nil {
			if tf, err := trace.ReadFile(filepath.Join(*m.RecordsDir, "trace.jsonl")); err == nil {
				for i := len(tf.Lines) - 1; i >= 0; i-- {
					if l := tf.Lines[i]; l.EventType == trace.TypeSessionEnd {
						st, d := l.Str("exit_status"), l.Int("duration_ms")
						row.ExitStatus, row.DurationMS = &st, &d
						break
					}
				}
				calls = append(calls, memberCalls(m.Name, tf.Lines)...)
			}
		}
		if m.Entry && row.ExitStatus != nil {
			ending = *row.ExitStatus
		}
		rows = append(rows, row)
	}
	if launcherAlive {
		ending = "running"
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i].CallID < calls[j].CallID })
	if asJSON {
		out := struct {
			FormationID string                `json:"formation_id"`
			Roster      string                `json:"roster"`
			ProjectDir  string                `json:"project_dir"`
			Started     string                `json:"started"`
			Ended       *string               `json:"ended"`
			ExitStatus  *int                  `json:"exit_status"`
			Members     []formationMemberJSON `json:"members"`
			Calls       []*formationCallJSON  `json:"calls"`
		}{f.FormationID, f.Roster, f.ProjectDir, f.StartedAt, f.EndedAt, f.ExitStatus, rows, calls}
		return printJSON(stdout, out)
	}
	bw := bufio.NewWriter(stdout)
	defer bw.Flush()
	fmt.Fprintf(bw, "formation: %s\nroster:    %s\nstarted:   %s\nending:    %s\nmembers:\n", f.FormationID, f.Roster, f.StartedAt, ending)
	tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		role := "peer"
		if r.Entry {
			role = "entry"
		}
		ses, st, dur := "-", "no session_end", "-"
		if r.SessionID != nil {
			ses = *r.SessionID
		}
		if r.ExitStatus != nil {
			st, dur = *r.ExitStatus, fmtDur(time.Duration(*r.DurationMS)*time.Millisecond)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", r.Name, role, r.Capsule, ses, st, dur)
	}
	tw.Flush()
	fmt.Fprintf(bw, "calls: %d\n", len(calls))
	for _, c := range calls {
		dur := "-"
		if c.DurationMS != nil {
			dur = fmtDur(time.Duration(*c.DurationMS) * time.Millisecond)
		}
		fmt.Fprintf(tw, "  %s\t%s → %s\t%s\t%s", c.CallID, c.From, c.To, c.Status, dur)
		if c.busy > 0 {
			fmt.Fprintf(tw, "\tbusy ×%d", c.busy)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if tree {
		for _, r := range rows {
			if r.RecordsDir == nil {
				continue
			}
			fmt.Fprintf(bw, "\nmember %s:\n", r.Name)
			if err := renderTree(bw, filepath.Join(*r.RecordsDir, "trace.jsonl")); err != nil {
				fmt.Fprintf(bw, "  (no trace: %v)\n", err)
			}
		}
	}
	return nil
}

// traceRmFormation is mur trace rm frm_…: the formation's folder and its
// records tree, each renamed away first; refused while its launcher or a
// member lives (E-TRC-007).
func traceRmFormation(homeDir, ref string, stdout io.Writer) error {
	if !ids.Valid(ids.Formation, ref) {
		return badSessionRef("%q names no formation: a formation id is frm_ followed by 32 lowercase hex digits", ref)
	}
	dir := filepath.Join(home.Formations(homeDir), ref)
	b, err := os.ReadFile(filepath.Join(dir, "formation.json"))
	var f formationShow
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil {
		return diag.Wrap(err, "E-TRC-004", "no formation %s is recorded", ref).
			WithHint("'mur ps' and ~/.murmur/formations show the formations there are")
	}
	if f.Launcher.PID > 0 {
		if ps, err := running.ProcessStart(f.Launcher.PID); err == nil && ps == f.Launcher.ProcessStart {
			return diag.New("E-TRC-007", "formation %s is still running (launcher pid %d)", ref, f.Launcher.PID).
				WithHint("stop it with 'mur stop %s', then remove it", ref)
		}
	}
	if entries, err := running.Scan(home.Running(homeDir)); err == nil {
		for _, e := range entries {
			if e.State == running.Live && e.Record.FormationID == ref {
				return diag.New("E-TRC-007", "formation %s is still running (session %s, pid %d)", ref, e.Record.SessionID, e.Record.PID).
					WithHint("stop it with 'mur stop %s', then remove it", ref)
			}
		}
	}
	for _, d := range []string{home.ProjectRecords(homeDir, dir), dir} {
		gone := filepath.Join(filepath.Dir(d), fmt.Sprintf(".removed-%s-%d", ref, os.Getpid()))
		if err := os.Rename(d, gone); err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return diag.Wrap(err, "E-TRC-003", "cannot remove %s", d)
		}
		if err := os.RemoveAll(gone); err != nil {
			return diag.Wrap(err, "E-TRC-003", "cannot remove %s", gone)
		}
	}
	_, err = fmt.Fprintf(stdout, "removed: %s\n", ref)
	return err
}
