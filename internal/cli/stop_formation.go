package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/trace"
)

// formationStopWait bounds how long mur stop frm_… waits for every member
// after the launcher's SIGTERM; a launcher-started member still there then
// gets SIGKILL of its group.
const formationStopWait = 30 * time.Second

// formationJSON is what mur stop reads of formation.json.
type formationJSON struct {
	Launcher running.Launcher `json:"launcher"`
	Members  []struct {
		Name       string  `json:"name"`
		SessionID  *string `json:"session_id"`
		RecordsDir *string `json:"records_dir"`
	} `json:"members"`
}

// runStopFormation is mur stop frm_…: the launcher gets SIGTERM (it closes
// every lifeline, and its members wind down), members started by hand are
// stopped one by one, and mur waits until every member process is gone.
func runStopFormation(runningDir, ref string, timeout time.Duration, stdout io.Writer) error {
	if !ids.Valid(ids.Formation, ref) {
		return badSessionRef("%q names no formation: a formation id is frm_ followed by 32 lowercase hex digits", ref)
	}
	entries, err := running.Scan(runningDir)
	if err != nil {
		return diag.Wrap(err, "E-RUN-051", "cannot read the running-capsule records").
			WithHint("check the permissions of %s", runningDir)
	}
	var members []running.Record
	for _, e := range entries {
		if e.State == running.Live && e.Record.FormationID == ref {
			members = append(members, e.Record)
		}
	}
	var ff formationJSON
	fj := filepath.Join(filepath.Dir(runningDir), "formations", ref, "formation.json")
	if b, err := os.ReadFile(fj); err == nil {
		_ = json.Unmarshal(b, &ff)
	}
	var launcher *proc
	if ff.Launcher.PID > 0 {
		p, err := openProc(running.Record{SessionID: "the launcher of " + ref, PID: ff.Launcher.PID, ProcessStart: ff.Launcher.ProcessStart})
		if err != nil && !errors.Is(err, errGone) {
			return err
		}
		launcher = p
	}
	if launcher != nil {
		defer launcher.close()
	}
	if launcher == nil && len(members) == 0 {
		return diag.New("E-RUN-053", "no member of formation %s is running", ref).
			WithHint("'mur ps' lists what runs")
	}
	for _, m := range members {
		if l := m.FormationLauncher; l != nil && (l.PID != ff.Launcher.PID || l.ProcessStart != ff.Launcher.ProcessStart) {
			return diag.New("E-RUN-055", "member %s of formation %s names another launcher (pid %d) than formation.json (pid %d): nothing was signalled", m.SessionID, ref, l.PID, ff.Launcher.PID).
				WithHint("stop its sessions one by one with mur stop SESSION")
		}
	}
	started := time.Now()
	launcherLine := "launcher: none (already gone)"
	if launcher != nil {
		if err := launcher.signal(syscall.SIGTERM); err != nil {
			return err
		}
		launcherLine = fmt.Sprintf("launcher: pid %d, SIGTERM", ff.Launcher.PID)
		if !launcher.wait(timeout) {
			if err := launcher.signal(syscall.SIGKILL); err != nil {
				return err
			}
			launcherLine += fmt.Sprintf(", then SIGKILL after %v", timeout)
		}
	}
	// Members started by hand (no member name, no parent) are stopped one by one, newest first.
	sort.Slice(members, func(i, j int) bool { return members[i].SessionID > members[j].SessionID })
	var procs []*proc
	for _, m := range members {
		p, err := openProc(m)
		if err != nil {
			continue // gone already
		}
		defer p.close()
		procs = append(procs, p)
		if m.FormationMember == "" && m.SpawnedBy == "" {
			_ = p.signal(syscall.SIGTERM)
		}
	}
	for _, p := range procs {
		if p.wait(time.Until(started.Add(formationStopWait))) {
			continue
		}
		if p.rec.FormationMember != "" {
			_ = p.signal(syscall.SIGKILL)
			_ = syscall.Kill(-p.rec.PID, syscall.SIGKILL) // its group: launcher-started members lead their own
		}
		if !p.wait(killGrace) {
			return diag.New("E-RUN-055", "member %s of formation %s (pid %d) is still running after SIGKILL", p.rec.SessionID, ref, p.rec.PID).
				WithHint("check the process with ps; it may be stuck in the kernel")
		}
	}
	fmt.Fprintf(stdout, "stopped: %s\n%s\n", ref, launcherLine)
	seen := map[string]bool{}
	for _, m := range ff.Members {
		if m.SessionID == nil {
			// formation.json may not have caught up with a member the
			// launcher learnt of last (the entry): its record names it.
			for _, r := range members {
				if r.FormationMember == m.Name {
					sid, rd := r.SessionID, r.RecordsDir
					m.SessionID, m.RecordsDir = &sid, &rd
				}
			}
		}
		if m.SessionID == nil {
			continue
		}
		seen[*m.SessionID] = true
		fmt.Fprintf(stdout, "member: %s %s %s\n", m.Name, *m.SessionID, endingOf(m.RecordsDir))
	}
	for _, m := range members {
		if !seen[m.SessionID] {
			rd := m.RecordsDir
			fmt.Fprintf(stdout, "member: %s %s %s\n", orDash(m.FormationMember), m.SessionID, endingOf(&rd))
		}
	}
	return nil
}

// endingOf is a session's session_end.exit_status, or "no session_end".
func endingOf(recordsDir *string) string {
	if recordsDir == nil {
		return "no session_end"
	}
	f, err := trace.ReadFile(filepath.Join(*recordsDir, "trace.jsonl"))
	if err != nil {
		return "no session_end"
	}
	for i := len(f.Lines) - 1; i >= 0; i-- {
		if f.Lines[i].EventType == trace.TypeSessionEnd {
			return f.Lines[i].Str("exit_status")
		}
	}
	return "no session_end"
}
