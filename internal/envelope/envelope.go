// Package envelope decides the spawn envelope (docs/roost.md "What it
// checks"): whether a child capsule's registry manifest holds no more
// capability than its parent's, axis by axis, in the order docs/roost.md lists.
//
// The daemon refuses rather than narrows, so the answer is either "covered" or
// the first axis that is not, with the child's offending entry. That first
// failure is what mur-roost answers at POST /spawn and what
// `mur run --explain-scope` can show, so the message text lives here once.
//
// The coverage predicates (network entries, install patterns, filesystem
// scope, containment rank) are internal/manifest's, which settle where the
// daemon's rules could be read two ways; this package applies
// them axis by axis and words the refusal.
package envelope

import (
	"fmt"

	"github.com/murmur-go/murmur/internal/manifest"
)

// Manifest keys of the twelve axes, in the order the specification's table
// lists them. A refusal reports the first failing axis in this order.
const (
	KeyNetworkAllow = "capabilities.network.allow"
	KeyUnixSockets  = "capabilities.network.unix_sockets"
	KeyPeerFetch    = "capabilities.peer_fetch.allow"
	KeyShell        = "capabilities.shell.allow"
	KeySpawn        = "capabilities.spawn.allow"
	KeyEnv          = "capabilities.env.allow"
	KeyScope        = "capabilities.filesystem.scope"
	KeyWorkdirExec  = "capabilities.filesystem.workdir_exec"
	KeyStateStore   = "capabilities.state.store"
	KeyInstallSkill = "capabilities.install.skill"
	KeyInstallTool  = "capabilities.install.tool"
	KeyContainment  = "capabilities.containment"
)

// Axes lists the twelve manifest keys in the order they are checked.
var Axes = []string{
	KeyNetworkAllow, KeyUnixSockets, KeyPeerFetch, KeyShell, KeySpawn, KeyEnv,
	KeyScope, KeyWorkdirExec, KeyStateStore, KeyInstallSkill, KeyInstallTool, KeyContainment,
}

// Refusal is the first axis on which the child exceeds its parent.
type Refusal struct {
	Key   string // the manifest key of the axis, e.g. "capabilities.network.allow"
	Entry string // the child's offending entry; "true", "none", or a containment class
}

// Error is the refusal sentence exactly as the specification words it
// (a refusal reports the first failing axis only).
func (r *Refusal) Error() string {
	return fmt.Sprintf("%s: the child declares '%s', which its parent does not hold — a spawned capsule can never hold more capability than the capsule that spawned it", r.Key, r.Entry)
}

// Check compares the child's registry manifest against its parent's and
// returns nil when the parent covers the child on all twelve axes, or the first
// axis (in table order) where it does not.
func Check(parent, child *manifest.Manifest) *Refusal {
	p, c := &parent.Capabilities, &child.Capabilities

	if e, ok := firstUncoveredNet(p.Network.Allow, c.Network.Allow); !ok {
		return &Refusal{KeyNetworkAllow, e}
	}
	if isTrue(c.Network.UnixSockets) && !isTrue(p.Network.UnixSockets) {
		return &Refusal{KeyUnixSockets, "true"}
	}
	if e, ok := firstUncoveredNet(p.PeerFetch.Allow, c.PeerFetch.Allow); !ok {
		return &Refusal{KeyPeerFetch, e}
	}
	// A stdio MCP server is a native program the capsule would run: for
	// the envelope it counts as a shell.allow entry, on both sides.
	if e, ok := firstMissing(ShellAllow(parent), ShellAllow(child)); !ok {
		return &Refusal{KeyShell, e}
	}
	if e, ok := firstMissing(p.Spawn.Allow, c.Spawn.Allow); !ok {
		return &Refusal{KeySpawn, e}
	}
	if e, ok := firstMissing(p.Env.Allow, c.Env.Allow); !ok {
		return &Refusal{KeyEnv, e}
	}
	if !scopeCovers(p.Filesystem.Scope, c.Filesystem.Scope) {
		e := "none"
		if c.Filesystem.Scope.Set {
			e = c.Filesystem.Scope.V
		}
		return &Refusal{KeyScope, e}
	}
	if isTrue(c.Filesystem.WorkdirExec) && !isTrue(p.Filesystem.WorkdirExec) {
		return &Refusal{KeyWorkdirExec, "true"}
	}
	if e, ok := firstMissing(StateStores(parent), StateStores(child)); !ok {
		return &Refusal{KeyStateStore, e}
	}
	if e, ok := firstUncoveredInstall(p.Install.Skill, c.Install.Skill); !ok {
		return &Refusal{KeyInstallSkill, e}
	}
	if e, ok := firstUncoveredInstall(p.Install.Tool, c.Install.Tool); !ok {
		return &Refusal{KeyInstallTool, e}
	}
	if cc := containmentClass(c); manifest.ContainmentRank(cc) < manifest.ContainmentRank(containmentClass(p)) {
		return &Refusal{KeyContainment, cc}
	}
	return nil
}

// ShellAllow is the shell.allow axis as the envelope reads it: the
// capsule's shell.allow plus each stdio MCP entry's command.
func ShellAllow(m *manifest.Manifest) []string {
	cmds := m.MCPCommands()
	if len(cmds) == 0 {
		return m.Capabilities.Shell.Allow
	}
	return append(append([]string{}, m.Capabilities.Shell.Allow...), cmds...)
}

func isTrue(o manifest.Opt[bool]) bool { return o.Set && o.V }

// firstMissing returns the first child entry that is not in the parent's list.
func firstMissing(parent, child []string) (string, bool) {
	for _, c := range child {
		found := false
		for _, p := range parent {
			if p == c {
				found = true
				break
			}
		}
		if !found {
			return c, false
		}
	}
	return "", true
}

func firstUncoveredNet(parent, child []string) (string, bool) {
	for _, c := range child {
		if !netCovered(parent, c) {
			return c, false
		}
	}
	return "", true
}

func firstUncoveredInstall(parent, child []string) (string, bool) {
	for _, c := range child {
		covered := false
		for _, p := range parent {
			if manifest.InstallCovers(p, c) {
				covered = true
				break
			}
		}
		if !covered {
			return c, false
		}
	}
	return "", true
}

// StateStores lists the stores a capsule's artifacts would open, in the order
// its artifacts declare them, without repeats. An artifact that declares
// `state:` without a `store:` opens a store named after its own capsule's bare
// name (docs/manifest.md).
func StateStores(m *manifest.Manifest) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range m.Artifacts {
		if a.State == nil {
			continue
		}
		s := a.State.Store.V
		if !a.State.Store.Set || s == "" {
			s = manifest.Bare(m.Name)
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
