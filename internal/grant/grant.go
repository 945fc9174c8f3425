// Package grant decides what a component is granted: its environment, its
// filesystem (preopens), its limits, the process's descriptor bound and the
// work folder's size watch. The script runtime, the tool registry, hooks and
// drivers all build a component's world from here, so a capsule and the
// tools it invokes are held the same way (docs/running-capsules.md). A run
// ends on those grants, so EndingOf, the engine's errors read as the five
// endings, is here too. What the operating system confines (namespaces,
// Landlock, seccomp) is internal/contain's.
package grant

import (
	"sort"
	"time"

	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

// RuntimeMount is where a component sees the runtime dir; it is
// also the value of MURMUR_RUNTIME_DIR inside a component.
const RuntimeMount = "murmur-runtime"

// Env is a component's whole environment: the allow-listed names that are set
// in mur's own environment, plus the session identity (docs/running-capsules.md). The
// identity is the runtime's to set and is never inherited, even when a manifest
// lists one of its names; MURMUR_CAPSULE_URL is present only when the session
// has a URL (never for a script capsule). A formation member with callees
// also hands every component MURMUR_FORMATION_PEERS, their virtual
// addresses (formation.Callees.PeersEnv), runtime-owned the same way. Env is
// for WASM components only: a native process never sees the peers.
func Env(s *session.Session, allow []string, lookup func(string) (string, bool)) map[string]string {
	identity := map[string]string{
		"MURMUR_SESSION_ID":      s.ID,
		"MURMUR_CAPSULE_NAME":    s.Name,
		"MURMUR_CAPSULE_VERSION": s.Version,
		"MURMUR_RUNTIME_DIR":     RuntimeMount,
	}
	if s.CapsuleURL != "" {
		identity["MURMUR_CAPSULE_URL"] = s.CapsuleURL
	}
	if peers := s.Callees.PeersEnv(); peers != "" {
		identity[formation.EnvPeers] = peers
	}
	env := make(map[string]string, len(allow)+len(identity))
	names := append([]string(nil), allow...)
	sort.Strings(names)
	for _, n := range names {
		if _, isIdentity := identity[n]; isIdentity || n == "MURMUR_CAPSULE_URL" || n == formation.EnvPeers || n == trace.EnvCollector {
			continue
		}
		if v, ok := lookup(n); ok {
			env[n] = v
		}
	}
	for k, v := range identity {
		env[k] = v
	}
	return env
}

// Preopens is a component's whole filesystem: dir read-write as "." and the
// runtime dir read-only as "murmur-runtime". Each is also preopened under "/"
// and listed first: Go's wasip1 runtime takes its working directory from the
// first preopen and resolves paths by prefix, so with "." alone a Go component
// could not open "out/result.txt". The "/" view is the same folder, so an
// absolute path never reaches the host's filesystem.
func Preopens(dir, runtimeDir string) []wasmhost.Preopen {
	return []wasmhost.Preopen{
		{HostDir: dir, GuestPath: "/"},
		{HostDir: runtimeDir, GuestPath: "/" + RuntimeMount, ReadOnly: true},
		{HostDir: dir, GuestPath: "."},
		{HostDir: runtimeDir, GuestPath: RuntimeMount, ReadOnly: true},
	}
}

// Limits turns effective limits (defaults applied) into the engine's, which
// has no defaults of its own: the memory and table counts and the grace are
// the built-in values of internal/manifest.
func Limits(l manifest.EffLimits) wasmhost.Limits {
	return wasmhost.Limits{
		MemoryBytes:   l.MemoryBytes,
		TableElements: l.TableElements,
		Instances:     l.Instances,
		Memories:      manifest.DefaultMemories,
		Tables:        manifest.DefaultTables,
		Deadline:      time.Duration(l.DeadlineSeconds) * time.Second,
		Grace:         manifest.GraceSeconds * time.Second,
	}
}
