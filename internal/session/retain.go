package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
	recordsRoot := filepath.Join(filepath.Dir(runningDir), "records")
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
		// Its delegated children's records go with it; only
		// the run that renamed the dir gets here, so they are removed once.
		if err := RemoveChildRecords(recordsRoot, dir); err != nil {
			warnings = append(warnings, diag.Warn("W-IO-051", "trace.retain could not remove the records of %s's delegated children: %v", id, err))
		}
		removed = append(removed, id)
	}
	return removed, warnings
}

// ChildRecordsTree is where the records of a session's delegated children
// lie: a child's work folder is <records dir>/children/<bare>-<hex>, and its
// own records dir follows the same layout under the records root, so every child of the
// session whose records dir is dir has its records beneath
// <records root>/<dir without its leading />/children.
func ChildRecordsTree(recordsRoot, dir string) string {
	return filepath.Join(recordsRoot, strings.TrimPrefix(filepath.Clean(dir), "/"), "children")
}

// RemoveChildRecords removes the records of every delegated child of the
// session whose records dir is dir (its path when it was written, even if
// the dir itself is gone or renamed), their own children's first, then the
// directories left empty between that tree and the records root. The
// session's own records dir is the caller's to remove. A tree that does not
// exist is not an error.
func RemoveChildRecords(recordsRoot, dir string) error {
	root := filepath.Clean(recordsRoot)
	tree := ChildRecordsTree(root, dir)
	if _, err := os.Lstat(tree); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	// A grandchild's records are not inside its parent's tree but beneath
	// the child's own records dir's mirror: follow every child session.
	_ = filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == tree {
			return nil
		}
		if ids.Valid(ids.Session, d.Name()) {
			if err := RemoveChildRecords(root, p); err != nil {
				errs = append(errs, err)
			}
			return fs.SkipDir
		}
		return nil
	})
	if err := snapshot.Remove(tree); err != nil {
		errs = append(errs, err)
	}
	// The mirrored path's directories hold nothing else once the tree is
	// gone, unless another session's children share them: remove the empty
	// ones, stopping at the first that is not.
	for p := filepath.Dir(tree); p != root && strings.HasPrefix(p, root+"/"); p = filepath.Dir(p) {
		if os.Remove(p) != nil {
			break
		}
	}
	return errors.Join(errs...)
}

// String renders r for logs.
func (r Retain) String() string {
	return fmt.Sprintf("max_sessions=%d max_age=%s", r.MaxSessions, r.MaxAge)
}
