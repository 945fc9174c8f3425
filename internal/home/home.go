// Package home is the one rule for finding the user's home directory and the
// one map of what Murmur keeps under it (docs/stores.md,
// docs/running-capsules.md "Session files"):
//
//	~/.murmur/artifacts   the global artifact store
//	~/.murmur/compiled    compiled components (wasmtime's cache)
//	~/.murmur/keys        the compile cache's MAC key, apart from the cache
//	~/.murmur/records     every session's records dir, by project
//	~/.murmur/sessions    every live session's runtime dir
//	~/.murmur/running     running-capsule records
//	~/.murmur/spend       spend ledgers (agent capsules)
//
// Every package that needs one of these paths asks here, so the layout has
// one home and a reader can find it by its name. The project-side store
// (<project>/.murmur/artifacts) is here too, for the same reason.
package home

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/murmur-go/murmur/internal/diag"
)

// Dir returns $HOME, which must be set and absolute: every path Murmur keeps
// hangs off it, and a relative one would change meaning with the working
// directory. Anything else is E-IO-003.
func Dir() (string, error) { return FromEnv(os.LookupEnv) }

// FromEnv is Dir over an explicit environment lookup (mur-roost checks the
// environment it was started with; tests pass their own).
func FromEnv(lookup func(string) (string, bool)) (string, error) {
	h, _ := lookup("HOME")
	if h == "" || !filepath.IsAbs(h) {
		what := "not set"
		if h != "" {
			what = "not an absolute path: " + h
		}
		// mur-roost prints this message as it is: its words are the spec's.
		return "", diag.New("E-IO-003", "the home directory could not be resolved: HOME is %s", what).
			WithHint("set HOME to an absolute path")
	}
	return filepath.Clean(h), nil
}

// Murmur is ~/.murmur, the root of everything below.
func Murmur(home string) string { return filepath.Join(home, ".murmur") }

// Artifacts is the global store's root.
func Artifacts(home string) string { return filepath.Join(home, ".murmur", "artifacts") }

// Compiled is the compiled-component cache.
func Compiled(home string) string { return filepath.Join(home, ".murmur", "compiled") }

// CacheKey is the compile cache's MAC key: outside Compiled, so that a
// reader of the cache directory cannot forge an entry (RATIONALE.md in
// internal/wasmhost).
func CacheKey(home string) string { return filepath.Join(home, ".murmur", "keys", "compiled.key") }

// HostProbe is the containment probe's answer, kept for the next launch
// on the same host state (internal/contain, ProbeCached).
func HostProbe(home string) string { return filepath.Join(home, ".murmur", "host-probe.json") }

// Records is the root of every records dir.
func Records(home string) string { return filepath.Join(home, ".murmur", "records") }

// ProjectRecords is the records dir root of one project directory:
// ~/.murmur/records/<project dir's absolute path without its leading />.
func ProjectRecords(home, projectDir string) string {
	return filepath.Join(Records(home), strings.TrimPrefix(filepath.Clean(projectDir), "/"))
}

// Sessions is the root of every live session's directory.
func Sessions(home string) string { return filepath.Join(home, ".murmur", "sessions") }

// Session is one session's directory; its runtime dir is Runtime.
func Session(home, sessionID string) string { return filepath.Join(Sessions(home), sessionID) }

// Runtime is one session's runtime dir ($MURMUR_RUNTIME_DIR).
func Runtime(home, sessionID string) string {
	return filepath.Join(Session(home, sessionID), "runtime")
}

// Running is the running-capsule records directory.
func Running(home string) string { return filepath.Join(home, ".murmur", "running") }

// Spend is the spend ledgers' directory.
func Spend(home string) string { return filepath.Join(home, ".murmur", "spend") }

// Project is a project's own folder: <project>/.murmur.
func Project(projectDir string) string { return filepath.Join(projectDir, ".murmur") }

// ProjectArtifacts is a project's own store: <project>/.murmur/artifacts.
func ProjectArtifacts(projectDir string) string {
	return filepath.Join(Project(projectDir), "artifacts")
}

// State is the folder of the durable state stores, one folder per store
// (~/.murmur/state), each with its lock file beside it.
func State(home string) string { return filepath.Join(home, ".murmur", "state") }

// StateStore is one store's folder (~/.murmur/state/<store>).
func StateStore(home, store string) string { return filepath.Join(State(home), store) }

// StateLock is the lock file of one store (~/.murmur/state/<store>.lock),
// beside the store and out of its component's sight.
func StateLock(home, store string) string { return filepath.Join(State(home), store+".lock") }

// Formations is where mur run --roster keeps each formation's folder
// (formation.json and its members' work folders).
func Formations(home string) string { return filepath.Join(home, ".murmur", "formations") }
