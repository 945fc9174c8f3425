package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/snapshot"
)

// Retain is trace.retain as a run applies it (manifest.Retain parses and
// validates max_age; this package only applies the figures).
type Retain struct {
	MaxSessions int           // 0 = no count limit
	MaxAge      time.Duration // 0 = no age limit
}

// ApplyRetain removes whole session records dirs under projectRecordsDir that
// trace.retain no longer keeps. It never removes current, a session that has
// begun and not ended (see Begun), nor one whose running record says it is
// still live. max_sessions counts the current session. runningDir is
// ~/.murmur/running; the marks of begun sessions are read from its sibling
// ~/.murmur/sessions. Failures to remove are returned as warnings; retention
// never stops a run.
//
// A dir is first renamed out of the listing, then removed: concurrent runs
// retaining at once remove each dir once, and a reader never sees half of one.
func ApplyRetain(projectRecordsDir, current string, r Retain, runningDir string, now time.Time) (removed []string, warnings []diag.Warning) {
	if r.MaxSessions <= 0 && r.MaxAge <= 0 {
		return nil, nil
	}
	entries, err := os.ReadDir(projectRecordsDir)
	if err != nil {
		return nil, nil
	}
	sessionsDir := filepath.Join(filepath.Dir(runningDir), "sessions")
	live := map[string]bool{}
	if recs, err := running.Scan(runningDir); err == nil {
		for _, e := range recs {
			if e.State == running.Live {
				live[e.Record.SessionID] = true
			}
		}
	}
	type sess struct {
		id string
		at time.Time
	}
	var others []sess
	for _, e := range entries {
		if !e.IsDir() || e.Name() == current || !ids.Valid(ids.Session, e.Name()) {
			continue
		}
		at, ok := ids.Time(ids.Session, e.Name())
		if !ok {
			info, err := e.Info()
			if err != nil {
				continue
			}
			at = info.ModTime()
		}
		others = append(others, sess{e.Name(), at})
	}
	sort.Slice(others, func(i, j int) bool { return others[i].at.After(others[j].at) }) // newest first
	var drop []string
	for i, s := range others {
		tooMany := r.MaxSessions > 0 && i+1 >= r.MaxSessions // +1: the current session counts
		tooOld := r.MaxAge > 0 && now.Sub(s.at) > r.MaxAge
		if (tooMany || tooOld) && !live[s.id] && !Begun(sessionsDir, s.id) {
			drop = append(drop, s.id)
		}
	}
	for _, id := range drop {
		dir := filepath.Join(projectRecordsDir, id)
		gone := filepath.Join(projectRecordsDir, fmt.Sprintf(".retained-%s-%d", id, os.Getpid()))
		if err := os.Rename(dir, gone); err != nil {
			if !errors.Is(err, fs.ErrNotExist) { // else another run removed it first
				warnings = append(warnings, diag.Warn("W-IO-051", "trace.retain could not remove the records of %s: %v", id, err))
			}
			continue
		}
		if err := snapshot.Remove(gone); err != nil {
			warnings = append(warnings, diag.Warn("W-IO-051", "trace.retain could not remove the records of %s: %v", id, err))
			continue
		}
		removed = append(removed, id)
	}
	return removed, warnings
}

// String renders r for logs.
func (r Retain) String() string {
	return fmt.Sprintf("max_sessions=%d max_age=%s", r.MaxSessions, r.MaxAge)
}
