package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/session"
)

func init() { register(newPsCmd) }

func newPsCmd(stdout, stderr io.Writer) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the capsules running on this host",
		Long: `List the sessions running on this host, from ~/.murmur/running, as a table:
SESSION CAPSULE STATUS UPTIME URL SPAWNED_BY (URL is - for a script capsule;
SPAWNED_BY is the session that delegated to it, - for one started by hand;
a delegated session is listed right after its parent). Prints
'no running capsules' when there are none. With --json, prints one JSON array
instead (empty when none), an object per session.

A record whose process is gone (or whose pid now belongs to another process),
and a record no mur can read, is removed, with a 'pruned:' line on stderr. So
is the runtime dir (~/.murmur/sessions/<id>) of a session that died without
removing it: one with no running record whose process no longer holds it.
The cgroups a runtime killed outright left behind (murmur-<pid>-<n>) are
removed as well.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			homeDir, err := home.Dir()
			if err != nil {
				return err
			}
			contain.SweepStaleCgroups()
			return runPs(home.Running(homeDir), time.Now(), asJSON, stdout, stderr)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the running sessions as one JSON array")
	return cmd
}

// psRow is one element of mur ps --json.
type psRow struct {
	SessionID  string  `json:"session_id"`
	Capsule    string  `json:"capsule"`
	Status     string  `json:"status"`
	StartedAt  string  `json:"started_at"`
	Uptime     string  `json:"uptime"`
	URL        *string `json:"url"`
	PID        int     `json:"pid"`
	Workdir    string  `json:"workdir"`
	RecordsDir string  `json:"records_dir"`
	SpawnedBy  *string `json:"spawned_by"`
	// FormationID and FormationMember are null for a session in no
	// formation (a delegated child or one started by hand has no member).
	FormationID     *string `json:"formation_id"`
	FormationMember *string `json:"formation_member"`
}

// removeRuntimeDir removes ~/.murmur/sessions/<id> of a stale record: a
// session killed with SIGKILL never removed its runtime dir (task.md,
// MURMUR.md, murmur.yaml), and its process is known to be gone. Only a
// well-formed id that names the record's own file is trusted as a path, and
// a dir whose begun lock is held is left alone (see session.RemoveOrphan).
func removeRuntimeDir(runningDir string, e running.Entry, stderr io.Writer) {
	id := e.Record.SessionID
	if e.State != running.Stale || !ids.Valid(ids.Session, id) || filepath.Base(e.File) != id+".json" {
		return
	}
	sessionsDir := filepath.Join(filepath.Dir(runningDir), filepath.Base(home.Sessions("")))
	if _, err := session.RemoveOrphan(sessionsDir, id); err != nil {
		fmt.Fprintf(stderr, "%s\n", diag.Warn("W-IO-052", "cannot remove the runtime dir %s: %v", filepath.Join(sessionsDir, id), err))
	}
}

// removeOrphans removes ~/.murmur/sessions/<id> of every session that has no
// live running record and whose begun lock nothing holds: a session killed
// with SIGKILL (or during start-up, before its record) never removed it.
func removeOrphans(runningDir string, live map[string]bool, stderr io.Writer) {
	sessionsDir := filepath.Join(filepath.Dir(runningDir), filepath.Base(home.Sessions("")))
	dirs, err := os.ReadDir(sessionsDir)
	if err != nil {
		if !os.IsNotExist(err) {
			fmt.Fprintf(stderr, "%s\n", diag.Warn("W-IO-052", "cannot read %s: %v", sessionsDir, err))
		}
		return
	}
	for _, d := range dirs {
		id := d.Name()
		if !d.IsDir() || live[id] || !ids.Valid(ids.Session, id) {
			continue
		}
		removed, err := session.RemoveOrphan(sessionsDir, id)
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "%s\n", diag.Warn("W-IO-052", "cannot remove the runtime dir %s: %v", filepath.Join(sessionsDir, id), err))
		case removed:
			fmt.Fprintf(stderr, "pruned: %s (orphaned runtime dir)\n", id)
		}
	}
}

// runPs lists live records and prunes the ones whose process is gone (or
// which no mur can read): mur ps is the one reader allowed to remove them.
func runPs(dir string, now time.Time, asJSON bool, stdout, stderr io.Writer) error {
	entries, err := running.Scan(dir)
	if err != nil {
		return diag.Wrap(err, "E-RUN-051", "cannot read the running-capsule records").
			WithHint("check the permissions of %s", dir)
	}
	var live []running.Record
	for _, e := range entries {
		switch e.State {
		case running.Live:
			live = append(live, e.Record)
		default:
			if err := os.Remove(e.File); err != nil && !os.IsNotExist(err) {
				fmt.Fprintf(stderr, "%s\n", diag.Warn("W-IO-052", "cannot prune %s: %v", e.File, err))
				continue
			}
			what := e.Record.SessionID
			if what == "" {
				what = e.File
			}
			fmt.Fprintf(stderr, "pruned: %s (%s)\n", what, e.State)
		}
	}
	liveIDs := make(map[string]bool, len(live))
	for _, r := range live {
		liveIDs[r.SessionID] = true
	}
	removeOrphans(dir, liveIDs, stderr)
	sort.Slice(live, func(i, j int) bool {
		if live[i].StartedAt != live[j].StartedAt {
			return live[i].StartedAt < live[j].StartedAt
		}
		return live[i].SessionID < live[j].SessionID
	})
	live = byFormation(byParent(live))
	if asJSON {
		rows := make([]psRow, 0, len(live))
		for _, r := range live {
			url := r.URL
			if url != nil && *url == "" {
				url = nil
			}
			var by *string
			if r.SpawnedBy != "" {
				by = &r.SpawnedBy
			}
			row := psRow{SessionID: r.SessionID, Capsule: capsuleRef(r.CapsuleName, r.CapsuleVersion), Status: "running",
				StartedAt: r.StartedAt, Uptime: uptime(r.StartedAt, now), URL: url, PID: r.PID, Workdir: r.Workdir, RecordsDir: r.RecordsDir,
				SpawnedBy: by}
			if r.FormationID != "" {
				f := r.FormationID
				row.FormationID = &f
			}
			if r.FormationMember != "" {
				m := r.FormationMember
				row.FormationMember = &m
			}
			rows = append(rows, row)
		}
		b, err := json.Marshal(rows)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, string(b))
		return err
	}
	if len(live) == 0 {
		fmt.Fprintln(stdout, "no running capsules")
		return nil
	}
	formations := false
	for _, r := range live {
		formations = formations || r.FormationID != ""
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	head := "SESSION\tCAPSULE\tSTATUS\tUPTIME\tURL\tSPAWNED_BY"
	if formations {
		head += "\tFORMATION\tMEMBER"
	}
	fmt.Fprintln(tw, head)
	for _, r := range live {
		url := "-"
		if r.URL != nil && *r.URL != "" {
			url = *r.URL
		}
		by := "-"
		if r.SpawnedBy != "" {
			by = r.SpawnedBy
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", r.SessionID, capsuleRef(r.CapsuleName, r.CapsuleVersion), "running", uptime(r.StartedAt, now), url, by)
		if formations {
			line += "\t" + orDash(r.FormationID) + "\t" + orDash(r.FormationMember)
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// byFormation keeps the sessions in no formation first, in their order,
// then one group per formation (by id): its sessions by session id, each
// delegated child right after its parent. Without any formation the order
// is unchanged.
func byFormation(live []running.Record) []running.Record {
	groups := map[string][]running.Record{}
	var out []running.Record
	for _, r := range live {
		if r.FormationID == "" {
			out = append(out, r)
		} else {
			groups[r.FormationID] = append(groups[r.FormationID], r)
		}
	}
	if len(groups) == 0 {
		return live
	}
	ids := make([]string, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		g := groups[id]
		sort.Slice(g, func(i, j int) bool { return g[i].SessionID < g[j].SessionID })
		out = append(out, byParent(g)...)
	}
	return out
}

// byParent orders sessions so that each delegated one follows its parent
// (depth first, in start order); a session whose parent is not running
// keeps its place among the top level.
func byParent(live []running.Record) []running.Record {
	present := map[string]bool{}
	for _, r := range live {
		present[r.SessionID] = true
	}
	kids := map[string][]running.Record{}
	var top []running.Record
	for _, r := range live {
		if r.SpawnedBy != "" && present[r.SpawnedBy] && r.SpawnedBy != r.SessionID {
			kids[r.SpawnedBy] = append(kids[r.SpawnedBy], r)
		} else {
			top = append(top, r)
		}
	}
	out := make([]running.Record, 0, len(live))
	done := map[string]bool{}
	var add func(r running.Record)
	add = func(r running.Record) {
		if done[r.SessionID] {
			return
		}
		done[r.SessionID] = true
		out = append(out, r)
		for _, k := range kids[r.SessionID] {
			add(k)
		}
	}
	for _, r := range top {
		add(r)
	}
	for _, r := range live { // a cycle of records made by hand: keep them all
		add(r)
	}
	return out
}

// capsuleRef is name@version, or the name alone when there is no version.
func capsuleRef(name, version string) string {
	if version == "" {
		return name
	}
	return name + "@" + version
}

// uptime renders the time since started (RFC 3339) compactly: 42s, 3m07s, 2h05m, 3d04h.
func uptime(started string, now time.Time) string {
	t, err := time.Parse(time.RFC3339, started)
	if err != nil {
		return "?"
	}
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	default:
		return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
	}
}
