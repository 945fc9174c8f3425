package cli

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/trace"
)

// One way to name a session, for every command that takes one (mur stop,
// mur trace show, mur trace rm): its full id, a suffix of at least
// minSuffix characters that ends one session's id only, or @N, the Nth
// newest session of this project as 'mur trace ls' numbers them. The errors
// are the same everywhere: E-RUN-052 for what names no session at all (exit
// status 2), E-RUN-053 for a suffix no session ends with, E-RUN-054 for one
// several do.

// minSuffix is the shortest session-id suffix a command takes: `mur stop`
// takes a unique suffix of ≥ 4 characters (docs/running-capsules.md "Naming
// a session"), and every command that names a session takes the same. A suffix that several ids end with is
// E-RUN-054, never a guess.
const minSuffix = 4

// sessionRef is a SESSION argument, read.
type sessionRef struct {
	id      string // a full session id
	ordinal int    // @N; 0 when not given
	suffix  string // a suffix of one; "" when not given
}

// sessionAlphabet is what a session id's 32 hex digits are written in.
const sessionAlphabet = "0123456789abcdef"

// parseSessionRef reads ref as a full id, @N or a suffix, or refuses it with
// E-RUN-052.
func parseSessionRef(ref string) (sessionRef, error) {
	switch {
	case ids.Valid(ids.Session, ref):
		return sessionRef{id: ref}, nil
	case strings.HasPrefix(ref, "@"):
		n, err := strconv.Atoi(ref[1:])
		if err != nil || n < 1 || strconv.Itoa(n) != ref[1:] {
			return sessionRef{}, badSessionRef("%q is not a session ordinal: @1 is the newest session of this project, @2 the one before", ref)
		}
		return sessionRef{ordinal: n}, nil
	case !couldEndSessionID(ref):
		return sessionRef{}, badSessionRef("%q does not name a session: give its id (ses_ and 32 hex digits), a suffix of at least %d characters of it, or @N", ref, minSuffix)
	case len(ref) < minSuffix:
		return sessionRef{}, badSessionRef("%q is too short to name a session: give its id or a suffix of at least %d characters", ref, minSuffix)
	}
	return sessionRef{suffix: ref}, nil
}

func badSessionRef(format string, args ...any) error {
	return diag.New("E-RUN-052", format, args...).WithExit(diag.ExitUsage).
		WithHint("'mur ps' lists the running sessions, 'mur trace ls' this project's recorded ones with their @N")
}

// couldEndSessionID reports whether s is the end of some well-formed
// session id (hex digits, possibly reaching back into "ses_").
func couldEndSessionID(s string) bool {
	const hexLen = 32
	if s == "" || len(s) > len(ids.Session)+hexLen {
		return false
	}
	hex := s
	if len(s) > hexLen {
		head := s[:len(s)-hexLen]
		if !strings.HasSuffix(ids.Session, head) {
			return false
		}
		hex = s[len(s)-hexLen:]
	}
	return strings.Trim(hex, sessionAlphabet) == ""
}

// pickBySuffix finds the one id among candidates that ends with suffix;
// what names the candidates in the errors ("running session").
func pickBySuffix(suffix string, candidates []string, what, hint string) (string, error) {
	var matches []string
	for _, c := range candidates {
		if strings.HasSuffix(c, suffix) {
			matches = append(matches, c)
		}
	}
	sort.Strings(matches)
	matches = dedupe(matches)
	switch len(matches) {
	case 0:
		return "", diag.New("E-RUN-053", "no %s matches %q", what, suffix).WithHint("%s", hint)
	case 1:
		return matches[0], nil
	}
	return "", diag.New("E-RUN-054", "%q matches %d %ss: %s", suffix, len(matches), what, strings.Join(matches, ", ")).
		WithHint("give more of the session id")
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// ordinalSession is the id @n names: the nth newest recorded session of
// this project, or E-TRC-004 when there are fewer.
func ordinalSession(homeDir string, n int) (string, error) {
	dir, list, err := projectSessions(homeDir)
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "", diag.New("E-TRC-004", "no session of this project has been recorded yet (its records would be under %s)", dir).
			WithHint("run it with 'mur run' first, or give a session id or the path of a trace.jsonl (a --capsule run is recorded under its work folder, not here: give its session id)")
	}
	if n > len(list) {
		return "", diag.New("E-TRC-004", "this project has %d recorded session(s), so there is no @%d", len(list), n).
			WithHint("sessions of this project are recorded under %s", dir)
	}
	return list[n-1], nil
}

// recordedSessionID resolves a SESSION argument of mur trace show and mur
// trace rm to a full id: @N and a full id as they are, a suffix among this
// project's recorded sessions first, then among every project's.
func recordedSessionID(homeDir string, r sessionRef) (string, error) {
	switch {
	case r.id != "":
		return r.id, nil
	case r.ordinal > 0:
		return ordinalSession(homeDir, r.ordinal)
	}
	const hint = "'mur trace ls' lists this project's recorded sessions"
	_, list, err := projectSessions(homeDir)
	if err != nil {
		return "", err
	}
	id, err := pickBySuffix(r.suffix, list, "recorded session", hint)
	if !diag.Is(err, "E-RUN-053") {
		return id, err
	}
	return pickBySuffix(r.suffix, allRecordedSessions(homeDir), "recorded session", hint)
}

// allRecordedSessions lists the ids of every top-level session recorded
// under ~/.murmur/records, whichever project: a directory named like a
// session that holds a trace.jsonl (a delegated child's records, under its
// parent's children/, are not listed).
func allRecordedSessions(homeDir string) []string {
	root := home.Records(homeDir)
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == root || !ids.Valid(ids.Session, d.Name()) {
			return nil
		}
		if _, err := os.Lstat(filepath.Join(p, trace.FileName)); err != nil {
			return nil // a --capsule run's project dir, named like a session
		}
		out = append(out, d.Name())
		return fs.SkipDir
	})
	return out
}

// ordinalOf is "@N" for id in this project's recorded sessions, "" when
// it is not one of them.
func ordinalOf(list []string, id string) string {
	for i, s := range list {
		if s == id {
			return fmt.Sprintf("@%d", i+1)
		}
	}
	return ""
}
