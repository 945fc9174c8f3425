package launch

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/manifest"
)

// Containment is the decision, made once per plan, of how this build holds
// the capsule (docs/containment.md): what --explain-scope prints and what Prepare
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
	// MCPStdio reports a stdio MCP server among them (the advisory lines
	// name it).
	MCPStdio bool
	// Warnings are printed once at launch (W-SEC-011 when workdir_exec caps
	// the tier, W-SEC-013 for the host).
	Warnings []diag.Warning
	// Plane is what caps the commands' memory and processes (contain's
	// PlaneV2, PlaneV1 or PlaneRlimits); PlaneBlocker says why no cgroup
	// plane holds. Set only when Native.
	Plane, PlaneBlocker string
	// Resources are capabilities.resources.* for every command, defaults
	// applied.
	Resources contain.Resources

	refusal error // E-CAP-003: a floor this host cannot deliver
}

// sandboxDetail is what a script capsule's component reaches.
const sandboxDetail = "the component reaches only its work folder (read-write, as .), murmur-runtime/ " +
	"(read-only), the env.allow and identity variables and the murmur:* host interfaces; " +
	"no sockets; wasi:http requests only to what network.allow covers (no redirects, no proxy)"

// agentDetail is what an agent capsule's components and commands reach.
const agentDetail = "the inference loop runs in mur itself; each tool and stored driver component reaches only " +
	"its own grant (its work folder scope, murmur-runtime/ read-only, its env.allow and identity variables); " +
	"wasi:http only to what each one's network.allow covers; shell commands run under the achieved tier " +
	"with a cleared environment"

// delegateDetail is the detail line's last clause: whether the capsule has
// delegate-task (only a non-empty spawn.allow gives it), and to what.
func delegateDetail(spawnAllow []string) string {
	if len(spawnAllow) == 0 {
		return "delegate-task is not provided"
	}
	return "delegate-task is provided for " + strings.Join(spawnAllow, ", ") +
		" (spawn.allow), each child approved by mur-roost at MURMUR_ROOST_URL and run as its own mur process under its own grant"
}

// probe is the host probe (its answer kept under the user's home for the
// next launch) and resourcePlane the cgroup probe; tests replace them.
var (
	probe = func(h string) *contain.Report {
		if h == "" {
			return contain.Probe()
		}
		return contain.ProbeCached(home.HostProbe(h))
	}
	resourcePlane = contain.ResourcePlane
)

// decideContainment applies the tier rules (docs/containment.md): the strongest tier the host
// delivers, or exactly the declared floor; a floor the host cannot deliver
// (or that workdir_exec forbids) is refused, naming what is missing and the
// tier the host could deliver. The host is probed only when it matters: a
// declared floor, or native commands to hold.
//
// parentTier is a delegated child's parent's achieved class ("" for a
// session nobody delegated): a tier above the capsule's own floor becomes
// its floor, so a child is never less contained than its parent. A child
// that declares no floor of its own still gets the host's strongest tier.
func decideContainment(p *Plan, requested, parentTier string) Containment {
	m := p.Manifest
	g := p.Grants.Capsule
	c := Containment{Detail: sandboxDetail, Native: len(g.ShellAllow) > 0 || hasStdioMCP(m), MCPStdio: hasStdioMCP(m),
		Resources: resourcesOf(m.Capabilities.CommandResources())}
	if m.IsAgent() {
		c.Detail = agentDetail
	}
	c.Detail += "; " + delegateDetail(g.SpawnAllow)
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
	ownFloor := c.Declared != ""
	raised := contain.Rank(parentTier) > max(contain.Rank(c.Declared), contain.Rank(contain.Advisory))
	if raised {
		c.Declared = parentTier
	}
	if c.Declared == "" && !c.Native {
		// Nothing native to hold and no floor asked: no probe.
		c.Achieved, c.FloorMet = contain.Advisory, true
		c.Mechanism = "WASM component sandbox; no native commands to contain"
		return c
	}
	rep := probe(p.Home)
	if c.Native {
		c.Plane, c.PlaneBlocker = resourcePlane()
	}
	c.Achieved = rep.Best()
	if c.Declared != "" && (ownFloor || contain.Rank(c.Achieved) < contain.Rank(c.Declared)) {
		c.Achieved = c.Declared
	}
	if g.WorkdirExec {
		if raised {
			c.refusal = diag.New("E-CAP-003", "%s is delegated by a parent whose commands run at %s, so its containment floor is %s, but capabilities.filesystem.workdir_exec: true caps containment at advisory", m.Name, parentTier, c.Declared).
				WithHint("a child is never less contained than its parent: remove filesystem.workdir_exec from the child, or run the parent at advisory")
			return c
		}
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
	if lacks := rep.Lacks(c.Achieved); lacks != "" && raised {
		c.refusal = diag.New("E-CAP-003", "%s is delegated by a parent whose commands run at %s, so its containment floor is %s, which this host cannot deliver: %s; it can deliver %s", m.Name, parentTier, c.Achieved, lacks, rep.Best()).
			WithHint("a child is never less contained than its parent: run the parent at %s or below, or run both on a host that allows what is missing", rep.Best())
		return c
	} else if lacks != "" {
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
	// Host warnings print once per process tree: a delegated child's
	// parent printed them already (docs/containment.md).
	if v, _ := p.lookup(envHostWarningsReported); v != "1" {
		for _, w := range rep.HostWarnings {
			c.Warnings = append(c.Warnings, diag.Warn("W-SEC-013", "%s", w))
		}
	}
	return c
}

// envHostWarningsReported is set to 1 in a delegated child's environment
// (the spec's child environment table).
const envHostWarningsReported = "MURMUR_HOST_WARNINGS_REPORTED"

// declaredText is --explain-scope's declared: value.
func (c Containment) declaredText() string {
	if c.Declared == "" {
		return "none"
	}
	return c.Declared
}

// Lines are --explain-scope's containment lines (docs/containment.md).
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
		lines = append(lines, "resources: "+c.resourcesText(),
			"network: commands run in a network namespace with only loopback; the egress proxy forwards what network.allow covers")
		for _, l := range c.notProtected() {
			lines = append(lines, "not protected here: "+l)
		}
	}
	return lines
}

// MCPNotProtected are the not-protected lines MCP servers add.
func (p *Plan) MCPNotProtected() []string {
	var out []string
	http := false
	for _, a := range p.Manifest.MCPEntries() {
		if a.MCP != nil && a.MCP.URL != "" {
			http = true
		}
	}
	if len(p.Manifest.MCPEntries()) > 0 && p.Manifest.IsAgent() {
		out = append(out, "what an MCP server does with the arguments the model sends and the data it returns: its own code decides; its results reach the model fenced as untrusted")
	}
	if http && p.Manifest.IsAgent() {
		out = append(out, "an MCP server's host: only its origin is held; its headers go there and nowhere else")
	}
	return out
}

// PlaneNotProtected are the `not protected here:` lines of the peer file
// plane and the state stores, for a capsule whose native commands run
// below sealed: peer-in/ is held read-only by mode bits alone, which do
// not hold against root, and at advisory a command reaches the state
// stores by path (docs/peer-files.md, docs/running-capsules.md).
func (p *Plan) PlaneNotProtected() []string {
	c := p.Containment
	if !c.Native || c.Achieved == manifest.ContainmentSealed {
		return nil
	}
	var out []string
	if len(p.Grants.Capsule.PeerFetchAllow) > 0 {
		out = append(out, "not protected here: peer-in/ is read-only to your commands by its mode bits alone (files 0444, the folder 0555), which do not hold against a command running as root")
	}
	if len(p.Grants.StateStores) > 0 && c.Achieved == manifest.ContainmentAdvisory {
		out = append(out, "not protected here: your commands can reach the state stores ($HOME/.murmur/state/…) by path; only the declaring artifact's component is handed one")
	}
	return out
}

// resourcesText is --explain-scope's resources: line: the rlimits every
// command gets and which plane caps memory and processes.
func (c Containment) resourcesText() string {
	r := c.Resources
	rl := fmt.Sprintf("rlimits on every command (max_processes %d, max_open_files %d, max_file_size_bytes %d, cpu_seconds %d, memory_bytes %d)",
		r.MaxProcesses, r.MaxOpenFiles, r.MaxFileSizeBytes, r.CPUSeconds, r.MemoryBytes)
	if c.Plane == contain.PlaneRlimits || c.Plane == "" {
		return rl + "; memory and processes held by the rlimits alone (" + c.PlaneBlocker + ")"
	}
	return fmt.Sprintf("%s; memory and processes capped by %s (cgroup_memory_bytes %d, cgroup_pids_max %d), each command in cgroups of its own, ended whole with it",
		rl, c.Plane, r.CgroupMemoryBytes, r.CgroupPidsMax)
}

// geteuid is the runtime's effective uid; tests replace it.
var geteuid = os.Geteuid

// notProtected are the --explain-scope lines for what a tier leaves open
// (docs/containment.md has the whole list).
func (c Containment) notProtected() []string {
	var out []string
	if c.Plane == contain.PlaneRlimits && geteuid() == 0 {
		out = append(out, "rlimits do not bind uid 0, and no cgroup plane holds here: a root runtime's commands are not held to max_processes")
	}
	switch c.Achieved {
	case contain.Advisory:
		who := "a command"
		if c.MCPStdio {
			who = "a command or stdio MCP server"
		}
		out = append(out, "the filesystem: "+who+" reads and writes whatever this user may (seccomp only)",
			"other processes of this user: "+who+" may signal them, and read their /proc entries where the kernel lets this user")
	case contain.Scoped:
		out = append(out, "other processes of this user: reachable only where no pid namespace can be made here (Landlock's signal scoping where the kernel has it)",
			"ld.so <file> of a file in the work folder or HOME: refused only where a mount namespace can be made (root, or user namespaces allowed)")
	}
	// workdir_exec withholds running written files as programs, never
	// interpreting them (docs/containment.md).
	out = append(out, "code a command writes: an interpreter (sh, python3, …) still runs it, and a program may run what it writes into its own memory")
	out = append(out, "the host's kernel: a command's allowed system calls reach it, so a kernel flaw in them is not contained (no virtual machine)")
	return out
}

// ScopeJSON is --explain-scope --json's object: a documented, stable shape
// (docs/containment.md). Fields are added, never renamed or removed.
type ScopeJSON struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	From    string `json:"from"`
	// Declared is the floor, "none" when none is declared.
	Declared string `json:"declared"`
	Achieved string `json:"achieved"`
	FloorMet bool   `json:"floor_met"`
	// Refusal is the E-CAP-003 a run would meet, "" when none.
	Refusal   string `json:"refusal,omitempty"`
	Mechanism string `json:"mechanism"`
	Detail    string `json:"detail"`
	// Resources is null when the capsule starts no native command.
	Resources *ResourcesJSON `json:"resources"`
	// Network is the commands' network, "" when there are none.
	Network string `json:"network,omitempty"`
	// EffectiveGrants is session_start.effective_grants, containment
	// included.
	EffectiveGrants json.RawMessage `json:"effective_grants"`
	NotProtected    []string        `json:"not_protected"`
	Warnings        []string        `json:"warnings"`
	// MCP is the capsule's MCP servers ([] when none).
	MCP []MCPScope `json:"mcp"`
}

// ResourcesJSON is ScopeJSON's resources.
type ResourcesJSON struct {
	// Plane: "cgroup v2", "cgroup v1" or "rlimits".
	Plane        string            `json:"plane"`
	PlaneBlocker string            `json:"plane_blocker,omitempty"`
	Rlimits      map[string]uint64 `json:"rlimits"`
	// Cgroup is empty when the plane is rlimits.
	Cgroup map[string]uint64 `json:"cgroup"`
}

// Scope is the plan as --explain-scope --json prints it.
func (p *Plan) Scope() ScopeJSON {
	m, c := p.Manifest, p.Containment
	s := ScopeJSON{Name: m.Name, Version: m.Version, Kind: p.Kind(), From: p.From,
		Declared: c.declaredText(), Achieved: c.Achieved, FloorMet: c.FloorMet && c.refusal == nil,
		Mechanism: c.Mechanism, Detail: c.Detail, EffectiveGrants: p.GrantsJSON,
		NotProtected: []string{}, Warnings: []string{}, MCP: p.MCPScopes()}
	if c.refusal != nil {
		s.Refusal = c.refusal.Error()
	}
	for _, w := range c.Warnings {
		s.Warnings = append(s.Warnings, w.String())
	}
	if c.Native {
		r := c.Resources
		s.Resources = &ResourcesJSON{Plane: c.Plane, PlaneBlocker: c.PlaneBlocker,
			Rlimits: map[string]uint64{"max_processes": r.MaxProcesses, "max_open_files": r.MaxOpenFiles,
				"max_file_size_bytes": r.MaxFileSizeBytes, "cpu_seconds": r.CPUSeconds, "memory_bytes": r.MemoryBytes},
			Cgroup: map[string]uint64{}}
		if c.Plane != contain.PlaneRlimits && c.Plane != "" {
			s.Resources.Cgroup = map[string]uint64{"cgroup_memory_bytes": r.CgroupMemoryBytes, "cgroup_pids_max": r.CgroupPidsMax}
		}
		s.Network = "a network namespace with only loopback; the egress proxy forwards what network.allow covers"
		s.NotProtected = c.notProtected()
		for _, l := range p.PlaneNotProtected() {
			s.NotProtected = append(s.NotProtected, strings.TrimPrefix(l, "not protected here: "))
		}
	}
	s.NotProtected = append(s.NotProtected, p.MCPNotProtected()...)
	return s
}

// resourcesOf is capabilities.resources.* as a plan's Resources.
func resourcesOf(r manifest.CommandResources) contain.Resources {
	u := func(v int64) uint64 { return uint64(max(v, 0)) }
	return contain.Resources{
		MaxProcesses: u(r.MaxProcesses), MaxOpenFiles: u(r.MaxOpenFiles),
		MaxFileSizeBytes: u(r.MaxFileSizeBytes), CPUSeconds: u(r.CPUSeconds), MemoryBytes: u(r.MemoryBytes),
		CgroupMemoryBytes: u(r.CgroupMemoryBytes), CgroupPidsMax: u(r.CgroupPidsMax),
	}
}
