package hostapi

import (
	"sort"
	"time"

	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

// RuntimeMount is where a component sees the runtime dir (contracts §5).
const RuntimeMount = "murmur-runtime"

// identityNames are the identity variables every component sees (contracts
// §10); MURMUR_CAPSULE_URL is absent for a script capsule.
var identityNames = []string{"MURMUR_SESSION_ID", "MURMUR_CAPSULE_NAME", "MURMUR_CAPSULE_VERSION", "MURMUR_RUNTIME_DIR"}

// toolEnv is a tool's whole environment: the env.allow names of its grant
// that are set in mur's own environment, plus the session identity, which
// is the runtime's to set and is never inherited. It matches what the
// script runtime gives the capsule itself.
func toolEnv(s *session.Session, allow []string, lookup func(string) (string, bool)) map[string]string {
	identity := map[string]string{
		"MURMUR_SESSION_ID":      s.ID,
		"MURMUR_CAPSULE_NAME":    s.Name,
		"MURMUR_CAPSULE_VERSION": s.Version,
		"MURMUR_RUNTIME_DIR":     RuntimeMount,
	}
	if s.CapsuleURL != "" {
		identity["MURMUR_CAPSULE_URL"] = s.CapsuleURL
	}
	env := make(map[string]string, len(allow)+len(identity))
	names := append([]string(nil), allow...)
	sort.Strings(names)
	for _, n := range names {
		if _, isIdentity := identity[n]; isIdentity || n == "MURMUR_CAPSULE_URL" {
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

// toolPreopens is a tool's whole filesystem, laid out as the script runtime
// lays out the capsule's: its folder read-write as "/" and ".", the runtime
// dir read-only as "/murmur-runtime" and "murmur-runtime". The "/" views come
// first because Go's wasip1 runtime takes its working directory from the
// first preopen; "/" is the same folder, so no absolute path reaches the
// host's filesystem.
func toolPreopens(dir, runtimeDir string) []wasmhost.Preopen {
	return []wasmhost.Preopen{
		{HostDir: dir, GuestPath: "/"},
		{HostDir: runtimeDir, GuestPath: "/" + RuntimeMount, ReadOnly: true},
		{HostDir: dir, GuestPath: "."},
		{HostDir: runtimeDir, GuestPath: RuntimeMount, ReadOnly: true},
	}
}

// toolLimits turns a tool's narrowed limits (defaults applied) into the
// engine's.
func toolLimits(l manifest.EffLimits) wasmhost.Limits {
	return wasmhost.Limits{
		MemoryBytes:   l.MemoryBytes,
		TableElements: l.TableElements,
		Instances:     l.Instances,
		Deadline:      time.Duration(l.DeadlineSeconds) * time.Second,
	}
}
