package launch

import (
	"fmt"

	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
)

// Containment is the decision, made once per plan, of how this build holds
// the capsule (contracts §19): what --explain-scope prints and what Prepare
// enforces. The tier applies to the native processes a capsule's commands
// start (shell tools); components are confined by the WASM sandbox whatever
// the tier.
type Containment struct {
	// Declared is the floor asked for (capabilities.containment, raised by
	// --containment); "" when none is.
	Declared string
	// Achieved is the tier native commands run under; Mechanism its string.
	Achieved, Mechanism string
	// FloorMet reports whether Achieved meets Declared.
	FloorMet bool
	// Detail says what a component reaches, in --explain-scope's words.
	Detail string
	// Native reports whether the capsule starts native commands at all.
	Native bool
	// Warnings are printed once at launch (W-SEC-011 when workdir_exec caps
	// the tier).
	Warnings []diag.Warning

	refusal error // E-CAP-003: a floor this host cannot deliver
}

// sandboxDetail is what a script capsule's component reaches.
const sandboxDetail = "the component reaches only its work folder (read-write, as .), murmur-runtime/ " +
	"(read-only), the env.allow and identity variables and the murmur:* host interfaces; " +
	"no sockets; wasi:http requests only to what network.allow covers (no redirects, no proxy); " +
	"delegate-task is not provided"

// agentDetail is what an agent capsule's components and commands reach.
const agentDetail = "the inference loop runs in mur itself; each tool and stored driver component reaches only " +
	"its own grant (its work folder scope, murmur-runtime/ read-only, its env.allow and identity variables); " +
	"wasi:http only to what each one's network.allow covers; shell commands run under the achieved tier " +
	"with a cleared environment; delegate-task is not provided"

// probe is the host probe; tests replace it.
var probe = contain.Probe

// decideContainment applies contracts §19: the strongest tier the host
// delivers, or exactly the declared floor; a floor the host cannot deliver
// (or that workdir_exec forbids) is refused, naming what is missing and the
// tier the host could deliver. The host is probed only when it matters: a
// declared floor, or native commands to hold.
func decideContainment(p *Plan, requested string) Containment {
	m := p.Manifest
	g := p.Grants.Capsule
	c := Containment{Detail: sandboxDetail, Native: len(g.ShellAllow) > 0}
	if m.IsAgent() {
		c.Detail = agentDetail
	}
	if m.RuntimeKind() != manifest.RuntimeCapsule {
		c.Achieved, c.Mechanism = contain.Advisory, "none of its own: a "+m.RuntimeKind()+" runs inside the capsule that declares it"
		c.Detail = "under that capsule's mechanism, with its grant narrowed to the capsule's"
		c.FloorMet = true
		return c
	}
	if m.Capabilities.Containment.Set {
		c.Declared = m.Capabilities.ContainmentClass()
	}
	if contain.Rank(requested) > contain.Rank(c.Declared) {
		c.Declared = requested
	}
	if c.Declared == "" && !c.Native {
		// Nothing native to hold and no floor asked: no probe.
		c.Achieved, c.FloorMet = contain.Advisory, true
		c.Mechanism = "WASM component sandbox; no native commands to contain"
		return c
	}
	rep := probe()
	c.Achieved = rep.Best()
	if c.Declared != "" {
		c.Achieved = c.Declared
	}
	if g.WorkdirExec {
		if contain.Rank(c.Declared) > contain.Rank(contain.Advisory) {
			c.refusal = diag.New("E-CAP-003", "%s declares the %s containment floor, but capabilities.filesystem.workdir_exec: true caps containment at advisory", m.Name, c.Declared).
				WithHint("remove filesystem.workdir_exec, or lower the floor to advisory")
			return c
		}
		if c.Achieved != contain.Advisory {
			c.Warnings = append(c.Warnings, diag.Warn("W-SEC-011", "%s grants capabilities.filesystem.workdir_exec: its commands run at the advisory tier (seccomp only), not %s", m.Name, c.Achieved))
		}
		c.Achieved = contain.Advisory
	}
	if lacks := rep.Lacks(c.Achieved); lacks != "" {
		what := "declares"
		if requested == c.Declared && requested != "" {
			what = "is run with --containment"
		}
		c.refusal = diag.New("E-CAP-003", "%s %s the %s containment floor, which this host cannot deliver: %s; it can deliver %s", m.Name, what, c.Achieved, lacks, rep.Best()).
			WithHint("lower the floor to %s, or run it on a host that allows what is missing; 'mur run --explain-scope' shows what this host applies", rep.Best())
		return c
	}
	c.Mechanism = contain.MechanismFor(c.Achieved)
	c.FloorMet = contain.Rank(c.Achieved) >= contain.Rank(c.Declared)
	return c
}

// declaredText is --explain-scope's declared: value.
func (c Containment) declaredText() string {
	if c.Declared == "" {
		return "none"
	}
	return c.Declared
}

// Lines are --explain-scope's containment lines (contracts §19).
func (c Containment) Lines() []string {
	met := "yes"
	if !c.FloorMet {
		met = "no"
	}
	if c.refusal != nil {
		met = "no: " + c.refusal.Error()
	}
	lines := []string{
		"declared: " + c.declaredText(),
		"achieved: " + c.Achieved,
		"floor met: " + met,
		fmt.Sprintf("mechanism: %s", c.Mechanism),
		"  " + c.Detail,
	}
	if c.Native {
		r := contain.DefaultResources
		lines = append(lines,
			fmt.Sprintf("resources: rlimits on every command (max_processes %d, max_open_files %d, max_file_size_bytes %d, cpu_seconds %d, memory_bytes %d); no cgroup limits in this build",
				r.MaxProcesses, r.MaxOpenFiles, r.MaxFileSizeBytes, r.CPUSeconds, r.MemoryBytes),
			"network: commands run in a network namespace with only loopback; the egress proxy forwards what network.allow covers")
		for _, l := range notProtected(c.Achieved) {
			lines = append(lines, "not protected here: "+l)
		}
	}
	return lines
}

// notProtected are the --explain-scope lines for what a tier leaves open
// (docs/containment.md has the whole list).
func notProtected(class string) []string {
	out := []string{"rlimits do not bind uid 0: a root runtime's commands are held by seccomp and the tier, not by max_processes"}
	switch class {
	case contain.Advisory:
		out = append(out, "the filesystem: a command reads and writes whatever this user may (seccomp only)")
	case contain.Scoped:
		out = append(out, "other processes of this user: no pid namespace")
	}
	return out
}
