package launch

import (
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/contain"
)

// TestParentTier: a delegated child's floor is the higher of its own and
// its parent's achieved tier (docs/delegation.md). It is
// raised, never lowered; a child with no floor of its own keeps the host's
// strongest tier; a floor the host or the child's workdir_exec cannot
// deliver is E-CAP-003 naming the parent.
func TestParentTier(t *testing.T) {
	defer func(p func(string) *contain.Report) { probe = p }(probe)
	strong := func() *contain.Report {
		return &contain.Report{OS: "linux", Seccomp: true, LandlockABI: 4, Namespaces: true, NetNS: true}
	}
	scopedHost := func() *contain.Report {
		return &contain.Report{OS: "linux", Seccomp: true, LandlockABI: 4, NamespacesBlocker: "user namespaces are denied", NetNS: true}
	}
	const shell = "  shell:\n    allow: [cat]\n"
	for _, c := range []struct {
		name, caps, parent string
		host               func() *contain.Report
		declared, achieved string
		refusal            string
	}{
		{"advisory floor under a sealed parent", "  containment: advisory\n" + shell, contain.Sealed, strong, "sealed", "sealed", ""},
		{"scoped floor under a sealed parent", "  containment: scoped\n" + shell, contain.Sealed, strong, "sealed", "sealed", ""},
		{"sealed floor under a scoped parent", "  containment: sealed\n" + shell, contain.Scoped, strong, "sealed", "sealed", ""},
		{"advisory floor under an advisory parent", "  containment: advisory\n" + shell, contain.Advisory, strong, "advisory", "advisory", ""},
		{"no floor under a scoped parent keeps the host's best", shell, contain.Scoped, strong, "scoped", "sealed", ""},
		{"no floor, no commands, under a sealed parent", "", contain.Sealed, strong, "sealed", "sealed", ""},
		{"no floor, no commands, under an advisory parent", "", contain.Advisory, strong, "none", "advisory", ""},
		{"a sealed parent on a host without namespaces", "  containment: advisory\n" + shell, contain.Sealed, scopedHost, "sealed", "sealed",
			"error[E-CAP-003]: local/t is delegated by a parent whose commands run at sealed, so its containment floor is sealed, which this host cannot deliver: user namespaces are denied; it can deliver scoped"},
		{"workdir_exec under a scoped parent", "  filesystem:\n    workdir_exec: true\n" + shell, contain.Scoped, strong, "scoped", "",
			"error[E-CAP-003]: local/t is delegated by a parent whose commands run at scoped, so its containment floor is scoped, but capabilities.filesystem.workdir_exec: true caps containment at advisory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			probe = func(string) *contain.Report { return c.host() }
			dir := project(t, "name: t\nversion: 1.0.0\ncapabilities:\n"+c.caps, "ok.wat")
			p, err := Load(Request{ManifestPath: dir, Home: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			err = p.raiseToParent(c.parent)
			if c.refusal != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.refusal) {
					t.Fatalf("refusal %v, want %q", err, c.refusal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := p.Containment
			if got.declaredText() != c.declared || (c.achieved != "" && got.Achieved != c.achieved) || !got.FloorMet {
				t.Errorf("declared %s achieved %s (floor met %v), want %s / %s", got.declaredText(), got.Achieved, got.FloorMet, c.declared, c.achieved)
			}
			if !strings.Contains(string(p.GrantsJSON), `"achieved":"`+got.Achieved+`"`) {
				t.Errorf("effective grants %s do not carry the raised tier", p.GrantsJSON)
			}
		})
	}
}
