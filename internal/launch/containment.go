package launch

import (
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
)

// Containment is the decision, made once per plan, of how this build holds
// the capsule: what --explain-scope prints and what Prepare enforces.
type Containment struct {
	// Class is the declared floor (advisory when none is declared).
	Class string
	// Mechanism and Detail say what is applied, in --explain-scope's words.
	Mechanism, Detail string
	// Note is set when the declared floor cannot be delivered.
	Note string

	refusal error // E-CAP-003 for a declared floor this build falls short of
}

// sandboxMechanism is the one containment tier this build applies to a
// script capsule: the component sandbox. The native tiers the spec names are
// a later issue, and --explain-scope must never claim them.
const (
	sandboxMechanism = "WASM component sandbox; no native containment tier (seccomp-only, " +
		"landlock+seccomp and mountns+pivot_root+landlock+seccomp are not applied by this build)"
	sandboxDetail = "the component reaches only its work folder (read-write, as .), murmur-runtime/ " +
		"(read-only), the env.allow and identity variables and the murmur:* host interfaces; " +
		"no sockets; wasi:http requests only to what network.allow covers (no redirects, no proxy); " +
		"delegate-task is not provided"
)

// checkRequestedFloor refuses a --containment floor above advisory: asking
// for it on the command line is the same requirement as declaring it, and
// this build falls short of it the same way.
func checkRequestedFloor(class string) error {
	switch class {
	case manifest.ContainmentScoped, manifest.ContainmentSealed:
		return diag.New("E-CAP-003", "--containment %s asks for a containment floor this mur cannot deliver: it applies the WASM component sandbox and no native containment tier", class).
			WithHint("run without --containment, or with --containment advisory; 'mur run --explain-scope' shows what this build applies")
	}
	return nil
}

func decideContainment(p *Plan) Containment {
	m := p.Manifest
	c := Containment{Class: m.Capabilities.ContainmentClass(), Mechanism: sandboxMechanism, Detail: sandboxDetail}
	switch {
	case m.RuntimeKind() != manifest.RuntimeCapsule:
		c.Mechanism = "none of its own: a " + m.RuntimeKind() + " runs inside the capsule that declares it"
		c.Detail = "under that capsule's mechanism, with its grant narrowed to the capsule's"
	case m.IsAgent():
		c.Detail = "the inference loop runs in mur itself; each tool and stored driver component reaches only " +
			"its own grant (its work folder scope, murmur-runtime/ read-only, its env.allow and identity variables); " +
			"wasi:http only to what each one's network.allow covers; no shell tools; delegate-task is not provided"
	}
	// A declared floor above advisory needs a native containment tier, which
	// this build does not apply: the host falls short (E-CAP-003), and the
	// run is refused rather than silently contained less than required.
	if g := p.Grants.Capsule.Containment; g == manifest.ContainmentScoped || g == manifest.ContainmentSealed {
		c.Note = "the manifest declares the " + g + " containment floor; this build applies no native " +
			"tier, so 'mur run' refuses it (E-CAP-003)"
	}
	if manifest.ContainmentRank(c.Class) > manifest.ContainmentRank(manifest.ContainmentAdvisory) {
		c.refusal = diag.New("E-CAP-003", "%s declares the %s containment floor, which this mur cannot deliver: it applies the WASM component sandbox and no native containment tier", m.Name, c.Class).
			WithHint("lower capabilities.containment to advisory, or run it with a mur that applies native containment; 'mur run --explain-scope' shows what this build applies")
	}
	return c
}
