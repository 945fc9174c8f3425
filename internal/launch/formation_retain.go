package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/running"
)

// retainFormations applies the entry's trace.retain to the formations of
// this roster's directory, once every member of this launch has exited:
// keep the newest max_sessions (the current one counts), remove those older
// than max_age (the time in the frm_ id). Never removed: the current one,
// one whose launcher is alive or which has a live member record, one whose
// formation.json is missing or unreadable. A formation goes with its records
// tree, renamed away first.
func (l *launcher) retainFormations() {
	r := l.a.Bound[l.a.Entry()].Manifest.Trace.Retain
	maxSessions := r.MaxSessions.Or(0)
	maxAge, hasAge := r.MaxAgeDuration()
	if maxSessions <= 0 && !hasAge {
		return
	}
	root := home.Formations(l.req.Home)
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	liveFormations := map[string]bool{}
	if recs, err := running.Scan(home.Running(l.req.Home)); err == nil {
		for _, e := range recs {
			if e.State == running.Live && e.Record.FormationID != "" {
				liveFormations[e.Record.FormationID] = true
			}
		}
	}
	type frm struct {
		id string
		at time.Time
	}
	var others []frm
	for _, e := range entries {
		id := e.Name()
		if !e.IsDir() || id == l.frm || !ids.Valid(ids.Formation, id) {
			continue
		}
		var ff formationFile
		b, err := os.ReadFile(filepath.Join(root, id, "formation.json"))
		if err != nil || json.Unmarshal(b, &ff) != nil || ff.ProjectDir != l.a.Dir {
			continue
		}
		if ff.Launcher.PID > 0 {
			if ps, err := running.ProcessStart(ff.Launcher.PID); err == nil && ps == ff.Launcher.ProcessStart {
				continue // its launcher is alive
			}
		}
		if liveFormations[id] {
			continue
		}
		at, _ := ids.Time(ids.Formation, id)
		others = append(others, frm{id, at})
	}
	sort.Slice(others, func(i, j int) bool { return others[i].at.After(others[j].at) }) // newest first
	now := time.Now()
	for i, f := range others {
		why := ""
		switch {
		case maxSessions > 0 && i+1 >= maxSessions: // +1: the current one counts
			why = "max_sessions"
		case hasAge && now.Sub(f.at) > maxAge:
			why = "max_age"
		default:
			continue
		}
		if err := removeFormation(l.req.Home, f.id); err != nil {
			fmt.Fprintln(l.req.Stderr, diag.Warn("W-IO-051", "trace.retain could not remove formation %s: %v", f.id, err))
			continue
		}
		fmt.Fprintf(l.req.Stderr, "retention: removed formation %s (%s)\n", f.id, why)
	}
}

// removeFormation removes ~/.murmur/formations/<frm>/ and its records tree,
// each renamed away first so a half-removed one is never read as whole.
func removeFormation(homeDir, id string) error {
	dir := filepath.Join(home.Formations(homeDir), id)
	for _, d := range []string{home.ProjectRecords(homeDir, dir), dir} {
		gone := filepath.Join(filepath.Dir(d), fmt.Sprintf(".retained-%s-%d", id, os.Getpid()))
		if err := os.Rename(d, gone); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return err
		}
		if err := os.RemoveAll(gone); err != nil {
			return err
		}
	}
	return nil
}
