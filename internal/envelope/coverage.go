package envelope

import (
	"github.com/murmur-go/murmur/internal/manifest"
)

// The coverage predicates themselves are internal/manifest's (NetCovers,
// InstallCovers, ScopeCovers, ContainmentRank), so the referee, the
// manifest's per-artifact narrowing (W-SEC-007) and --explain-scope apply one
// reading of the coverage rules (docs/roost.md "What it checks"). This file adapts them to lists and to the
// manifest's declared/undeclared values.

// netCovered reports whether some parent entry covers the child entry. An
// entry that does not parse as a network entry (a parsed manifest never holds
// one) is covered only by a parent entry of identical text: the referee never
// guesses what it means.
func netCovered(parents []string, child string) bool {
	c, err := manifest.ParseNetEntry(child)
	for _, p := range parents {
		if err != nil {
			if p == child {
				return true
			}
			continue
		}
		if pe, perr := manifest.ParseNetEntry(p); perr == nil && manifest.NetCovers(pe, c) {
			return true
		}
	}
	return false
}

// scopeCovers adapts manifest.ScopeCovers to declared/undeclared values.
func scopeCovers(parent, child manifest.Opt[string]) bool {
	var p, c *string
	if parent.Set {
		p = &parent.V
	}
	if child.Set {
		c = &child.V
	}
	return manifest.ScopeCovers(p, c)
}

// containmentClass is the declared floor, or "advisory" when none is declared.
func containmentClass(c *manifest.Capabilities) string {
	if !c.Containment.Set || c.Containment.V == "" {
		return manifest.ContainmentAdvisory
	}
	return c.Containment.V
}
