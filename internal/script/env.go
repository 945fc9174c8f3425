package script

import (
	"sort"

	"github.com/murmur-go/murmur/internal/session"
)

// RuntimeMount is where a component sees the runtime dir.
const RuntimeMount = "murmur-runtime"

// Env builds the component's environment: only the capabilities.env.allow
// names that are set in mur's own environment, plus the session identity
// (contracts §10). A script capsule has no URL, so MURMUR_CAPSULE_URL is absent.
func Env(s *session.Session, allow []string, lookup func(string) (string, bool)) [][2]string {
	seen := map[string]bool{}
	var out [][2]string
	identity := map[string]string{
		"MURMUR_SESSION_ID":      s.ID,
		"MURMUR_CAPSULE_NAME":    s.Name,
		"MURMUR_CAPSULE_VERSION": s.Version,
		"MURMUR_RUNTIME_DIR":     RuntimeMount,
	}
	names := append([]string(nil), allow...)
	sort.Strings(names)
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if _, isIdentity := identity[n]; isIdentity {
			continue // identity is the runtime's to set, never inherited
		}
		if v, ok := lookup(n); ok {
			out = append(out, [2]string{n, v})
		}
	}
	for _, n := range []string{"MURMUR_SESSION_ID", "MURMUR_CAPSULE_NAME", "MURMUR_CAPSULE_VERSION", "MURMUR_RUNTIME_DIR"} {
		out = append(out, [2]string{n, identity[n]})
	}
	return out
}
