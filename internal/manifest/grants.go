package manifest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Grants is a capsule's effective grants: the capsule-level grant set, each
// artifact's grant narrowed to it, and the state stores its artifacts would
// open. It is a plain value that prints as JSON; mur-roost's envelope,
// `mur run --explain-scope` and the runtime all read it.
type Grants struct {
	Capsule     GrantSet        `json:"capsule"`
	Artifacts   []ArtifactGrant `json:"artifacts"`
	StateStores []string        `json:"state_stores"` // sorted, unique; never narrowed
	// Plan is capabilities.plan, capsule-wide: submit is true only in an
	// agent capsule that grants it (docs/plans.md).
	Plan PlanGrants `json:"plan"`
	// PeerFiles is exports.peer_files with its defaults (nil: none).
	PeerFiles *PeerFilesGrant `json:"peer_files"`
}

// PlanGrants is effective_grants.plan.
type PlanGrants struct {
	Submit bool `json:"submit"`
}

// PeerFilesGrant is what exports.peer_files gives: the share-file tool and
// the door's peer route, over files of Root.
type PeerFilesGrant struct {
	Root     string `json:"root"`
	MaxTTLS  int64  `json:"max_ttl_s"`
	MaxBytes int64  `json:"max_bytes"`
}

// ArtifactGrant is one artifact's effective grant.
type ArtifactGrant struct {
	Name       string   `json:"name"`
	Version    string   `json:"version"`
	Runtime    string   `json:"runtime"`
	Grants     GrantSet `json:"grants"` // the artifact's grant narrowed to the capsule's
	StateStore string   `json:"state_store,omitempty"`
	// Dropped lists entries removed by narrowing, as "<key>: <entry>"
	// ("capabilities.shell.allow: bash").
	Dropped []string `json:"dropped,omitempty"`
}

// GrantSet is one effective grant set with defaults applied. Lists are never
// nil, so they print as [] rather than null.
type GrantSet struct {
	NetworkAllow    []string  `json:"network_allow"`
	UnixSockets     bool      `json:"unix_sockets"`
	PeerFetchAllow  []string  `json:"peer_fetch_allow"`
	ShellAllow      []string  `json:"shell_allow"`
	SpawnAllow      []string  `json:"spawn_allow"`
	WorkdirSnapshot []string  `json:"workdir_snapshot"`
	EnvAllow        []string  `json:"env_allow"`
	FilesystemScope *string   `json:"filesystem_scope"` // nil = whole work folder (undeclared)
	WorkdirExec     bool      `json:"workdir_exec"`
	InstallSkill    []string  `json:"install_skill"`
	InstallTool     []string  `json:"install_tool"`
	Containment     string    `json:"containment"` // declared class, or "" when none declared
	Limits          EffLimits `json:"limits"`
}

// EffLimits are execution limits with the built-in defaults applied.
type EffLimits struct {
	DeadlineSeconds     int   `json:"deadline_seconds"`      // capsule/tool/driver calls: declared or 600
	HookDeadlineSeconds int   `json:"hook_deadline_seconds"` // declared deadline_seconds or 30
	MemoryBytes         int64 `json:"memory_bytes"`
	TableElements       int64 `json:"table_elements"`
	Instances           int64 `json:"instances"`
	WorkdirMaxBytes     int64 `json:"workdir_max_bytes"`
}

// ContainmentClass is the declared containment floor, or "advisory" when none
// is declared: for the spawn envelope, undeclared ranks as advisory.
func (c Capabilities) ContainmentClass() string {
	return c.Containment.Or(ContainmentAdvisory)
}

// ContainmentRank orders containment classes: advisory 0, scoped 1, sealed 2;
// an unknown or empty class ranks as advisory.
func ContainmentRank(class string) int {
	switch class {
	case ContainmentScoped:
		return 1
	case ContainmentSealed:
		return 2
	}
	return 0
}

// EffLimits returns the execution limits with defaults applied. A declared
// limits.deadline_seconds replaces both the 600 s and the 30 s defaults.
func (c Capabilities) EffLimits() EffLimits {
	return EffLimits{
		DeadlineSeconds:     c.Limits.DeadlineSeconds.Or(DefaultDeadlineSeconds),
		HookDeadlineSeconds: c.Limits.DeadlineSeconds.Or(DefaultHookDeadlineSecond),
		MemoryBytes:         c.Limits.MemoryBytes.Or(DefaultMemoryBytes),
		TableElements:       c.Limits.TableElements.Or(DefaultTableElements),
		Instances:           c.Limits.Instances.Or(DefaultInstances),
		WorkdirMaxBytes:     c.Resources.WorkdirMaxBytes.Or(DefaultWorkdirMaxBytes),
	}
}

// GrantSet returns c as an effective grant set (defaults applied, lists
// copied and never nil).
func (c Capabilities) GrantSet() GrantSet {
	g := GrantSet{
		NetworkAllow:    list(c.Network.Allow),
		UnixSockets:     c.Network.UnixSockets.Or(false),
		PeerFetchAllow:  list(c.PeerFetch.Allow),
		ShellAllow:      list(c.Shell.Allow),
		SpawnAllow:      list(c.Spawn.Allow),
		WorkdirSnapshot: list(c.Spawn.WorkdirSnapshot),
		EnvAllow:        list(c.Env.Allow),
		WorkdirExec:     c.Filesystem.WorkdirExec.Or(false),
		InstallSkill:    list(c.Install.Skill),
		InstallTool:     list(c.Install.Tool),
		Containment:     c.Containment.Or(""),
		Limits:          c.EffLimits(),
	}
	if c.Filesystem.Scope.Set {
		s := c.Filesystem.Scope.V
		g.FilesystemScope = &s
	}
	return g
}

func list(s []string) []string {
	out := make([]string, len(s))
	copy(out, s)
	return out
}

// LiteralKey reports whether api_key was written as a literal secret rather
// than a ${NAME} reference (mur build refuses such a manifest).
func (g *Gateway) LiteralKey() bool { return g != nil && g.APIKeyRef == "" && g.APIKey != "" }

// TransportKind is inference.transport with its default ("http").
func (in *Inference) TransportKind() string { return in.Transport.Or("http") }

// Acceptance is lifecycle.task_acceptance with its default ("single").
func (l Lifecycle) Acceptance() string { return l.TaskAcceptance.Or("single") }

// AfterTaskMode is lifecycle.after_task with its default ("exit").
func (l Lifecycle) AfterTaskMode() string { return l.AfterTask.Or("exit") }

// RuntimeKind is the top-level runtime with its default ("capsule").
func (m *Manifest) RuntimeKind() string { return m.Runtime.Or(RuntimeCapsule) }

// RuntimeKind is the artifact's runtime with its default ("tool").
func (a Artifact) RuntimeKind() string { return a.Runtime.Or(RuntimeTool) }

// StateStoreName is the durable state store the artifact opens: its declared
// state.store, or the capsule's bare name for `state: {}`; false when the
// artifact declares no state.
func (a Artifact) StateStoreName(capsuleBare string) (string, bool) {
	if a.State == nil {
		return "", false
	}
	return a.State.Store.Or(capsuleBare), true
}

// ArtifactByName finds a declared artifact by its full name or by its bare
// name (the part after '/'); a full-name match wins over a bare one.
func (m *Manifest) ArtifactByName(nameOrBare string) (*Artifact, bool) {
	for i := range m.Artifacts {
		if m.Artifacts[i].Name == nameOrBare {
			return &m.Artifacts[i], true
		}
	}
	if strings.IndexByte(nameOrBare, '/') >= 0 {
		return nil, false
	}
	for i := range m.Artifacts {
		if Bare(m.Artifacts[i].Name) == nameOrBare {
			return &m.Artifacts[i], true
		}
	}
	return nil, false
}

// StateStores are the stores the capsule's artifacts would open: sorted,
// unique, never narrowed.
func (m *Manifest) StateStores() []string {
	bare := Bare(m.Name)
	out := []string{}
	for _, a := range m.Artifacts {
		if s, ok := a.StateStoreName(bare); ok && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// grantAxes are the keys of a capabilities block that grant access. An
// artifact block holding none of them (only state:, limits:, resources: or
// containment:, which bound or require rather than grant) inherits the
// capsule's access grants as if it declared no block; its bounds still apply.
var grantAxes = []string{"network", "peer_fetch", "shell", "spawn", "env", "filesystem", "install"}

// declaresGrants reports whether artifact i's capabilities block declares any
// grant axis.
func (m *Manifest) declaresGrants(i int) bool {
	a := m.Artifacts[i]
	if a.Capabilities == nil {
		return false
	}
	if m.declared == nil { // built in code, not parsed: a block is a declaration
		return true
	}
	for _, ax := range grantAxes {
		if m.Declared(fmt.Sprintf("artifacts[%d].capabilities.%s", i, ax)) {
			return true
		}
	}
	return false
}

// EffectiveGrants computes the capsule's grant set, each artifact's grant
// narrowed to it, and the state stores. An artifact that declares no access
// axis (network, peer_fetch, shell, spawn, env, filesystem, install) inherits
// the capsule's access; one that declares any gets its declaration ∩ the
// capsule's on every access axis (an axis it leaves out is empty), and each
// entry the capsule does not cover is dropped with a W-SEC-007 warning naming
// the artifact, the key and the entry. Coverage is the spawn envelope's
// (docs/roost.md "What it checks"). Limits an artifact declares apply when no higher than the
// capsule's (a higher one is dropped and warned the same way); containment
// takes the higher of the two floors. A hook's own deadline_seconds sets its
// hook deadline ahead of the capsule-wide value.
//
// No secret appears in the result: gateways are not part of it.
func (m *Manifest) EffectiveGrants() (Grants, []Warning) {
	g := Grants{
		Capsule:     m.Capabilities.GrantSet(),
		Artifacts:   make([]ArtifactGrant, 0, len(m.Artifacts)),
		StateStores: m.StateStores(),
		Plan:        PlanGrants{Submit: m.IsAgent() && m.Capabilities.Plan.Submit.Or(false)},
	}
	if f := m.Exports.PeerFiles; f != nil && m.IsAgent() {
		g.PeerFiles = &PeerFilesGrant{Root: f.Root, MaxTTLS: int64(f.TTL().Seconds()), MaxBytes: f.Bytes()}
	}
	var warns []Warning
	bare := Bare(m.Name)
	for i, a := range m.Artifacts {
		ag := ArtifactGrant{Name: a.Name, Version: a.Version, Runtime: a.RuntimeKind()}
		if s, ok := a.StateStoreName(bare); ok {
			ag.StateStore = s
		}
		if a.Capabilities != nil {
			n := narrower{m: m, idx: i, art: a.Name}
			ag.Grants = n.narrow(m.Capabilities, *a.Capabilities, m.declaresGrants(i))
			ag.Dropped = n.dropped
			warns = append(warns, n.warns...)
		} else {
			ag.Grants = m.Capabilities.GrantSet()
		}
		if a.IsMCP() {
			// A server's network and env come only from its own entry:
			// third-party code gets no egress or host variable by default.
			if !m.Declared(fmt.Sprintf("artifacts[%d].capabilities.network", i)) {
				ag.Grants.NetworkAllow, ag.Grants.UnixSockets = []string{}, false
			}
			if !m.Declared(fmt.Sprintf("artifacts[%d].capabilities.env", i)) {
				ag.Grants.EnvAllow = []string{}
			}
		}
		if a.RuntimeKind() == RuntimeHook && a.DeadlineSeconds.Set {
			ag.Grants.Limits.HookDeadlineSeconds = a.DeadlineSeconds.V
		}
		g.Artifacts = append(g.Artifacts, ag)
	}
	return g, warns
}

// narrower intersects one artifact's declaration with the capsule's grant,
// recording what it drops.
type narrower struct {
	m       *Manifest
	idx     int
	art     string
	dropped []string
	warns   []Warning
}

func (n *narrower) drop(key, entry, pathSuffix string) {
	n.dropped = append(n.dropped, key+": "+entry)
	pos := n.m.PosOf(fmt.Sprintf("artifacts[%d].%s", n.idx, pathSuffix))
	if pos == (Pos{}) {
		pos = n.m.PosOf(fmt.Sprintf("artifacts[%d].%s", n.idx, key))
	}
	msg := sanitize(fmt.Sprintf("artifact %s: %s: '%s' is not granted to the capsule; dropped from that artifact", n.art, key, entry))
	if pos != (Pos{}) {
		msg = fmt.Sprintf("%s:%d:%d: %s", n.m.fileName(), pos.Line, pos.Column, msg)
	}
	n.warns = append(n.warns, Warning{Code: "W-SEC-007", Message: msg, Pos: pos})
}

// keep filters list entries of one key by a coverage predicate.
func (n *narrower) keep(key string, entries []string, covered func(string) bool) []string {
	out := []string{}
	for j, e := range entries {
		if covered(e) {
			out = append(out, e)
		} else {
			n.drop(key, e, fmt.Sprintf("%s[%d]", key, j))
		}
	}
	return out
}

func (n *narrower) flag(key string, capV, artV Opt[bool]) bool {
	if artV.Or(false) && !capV.Or(false) {
		n.drop(key, "true", key)
		return false
	}
	return artV.Or(false)
}

// limit narrows one numeric limit: the artifact's value when it is no higher
// than the capsule's effective one, else the capsule's (and a warning).
func narrowLimit[T int | int64](n *narrower, key string, art Opt[T], capEff T) T {
	if !art.Set {
		return capEff
	}
	if art.V > capEff {
		n.drop(key, fmt.Sprint(art.V), key)
		return capEff
	}
	return art.V
}

func (n *narrower) narrow(c, a Capabilities, access bool) GrantSet {
	var g GrantSet
	if access {
		g = n.narrowAccess(c, a)
	} else {
		g = c.GrantSet()
	}
	// Containment is a floor, not a grant: it may only rise, so the artifact
	// gets the higher of the two declared classes.
	g.Containment = c.Containment.Or("")
	if a.Containment.Set && (g.Containment == "" || ContainmentRank(a.Containment.V) > ContainmentRank(g.Containment)) {
		g.Containment = a.Containment.V
	}
	ce := c.EffLimits()
	// A declared deadline replaces both defaults, for the artifact as for the
	// capsule; it may not exceed the capsule's call deadline.
	dl := narrowLimit(n, "capabilities.limits.deadline_seconds", a.Limits.DeadlineSeconds, ce.DeadlineSeconds)
	hdl := ce.HookDeadlineSeconds
	if a.Limits.DeadlineSeconds.Set {
		hdl = dl
	}
	g.Limits = EffLimits{
		DeadlineSeconds:     dl,
		HookDeadlineSeconds: hdl,
		MemoryBytes:         narrowLimit(n, "capabilities.limits.memory_bytes", a.Limits.MemoryBytes, ce.MemoryBytes),
		TableElements:       narrowLimit(n, "capabilities.limits.table_elements", a.Limits.TableElements, ce.TableElements),
		Instances:           narrowLimit(n, "capabilities.limits.instances", a.Limits.Instances, ce.Instances),
		WorkdirMaxBytes:     narrowLimit(n, "capabilities.resources.workdir_max_bytes", a.Resources.WorkdirMaxBytes, ce.WorkdirMaxBytes),
	}
	return g
}

// narrowAccess intersects the access axes (lists, flags, scope).
func (n *narrower) narrowAccess(c, a Capabilities) GrantSet {
	in := func(l []string) func(string) bool {
		set := make(map[string]bool, len(l))
		for _, e := range l {
			set[e] = true
		}
		return func(e string) bool { return set[e] }
	}
	netIn := func(l []string) func(string) bool {
		byHost := map[string][]NetEntry{}
		for _, e := range l {
			if pe, err := ParseNetEntry(e); err == nil {
				byHost[pe.Host] = append(byHost[pe.Host], pe)
			}
		}
		return func(e string) bool {
			ce, err := ParseNetEntry(e)
			if err != nil {
				return false
			}
			for _, pe := range byHost[ce.Host] {
				if NetCovers(pe, ce) {
					return true
				}
			}
			return false
		}
	}
	instIn := func(l []string) func(string) bool {
		exact, prefixes := map[string]bool{}, map[string]bool{}
		for _, p := range l {
			if pre, ok := strings.CutSuffix(p, "*"); ok {
				prefixes[pre] = true
			} else {
				exact[p] = true
			}
		}
		return func(e string) bool {
			if exact[e] {
				return true
			}
			for i := 0; i <= len(e); i++ {
				if prefixes[e[:i]] {
					return true
				}
			}
			return false
		}
	}
	g := GrantSet{
		NetworkAllow:    n.keep("capabilities.network.allow", a.Network.Allow, netIn(c.Network.Allow)),
		UnixSockets:     n.flag("capabilities.network.unix_sockets", c.Network.UnixSockets, a.Network.UnixSockets),
		PeerFetchAllow:  n.keep("capabilities.peer_fetch.allow", a.PeerFetch.Allow, netIn(c.PeerFetch.Allow)),
		ShellAllow:      n.keep("capabilities.shell.allow", a.Shell.Allow, in(c.Shell.Allow)),
		SpawnAllow:      n.keep("capabilities.spawn.allow", a.Spawn.Allow, in(c.Spawn.Allow)),
		WorkdirSnapshot: n.keep("capabilities.spawn.workdir_snapshot", a.Spawn.WorkdirSnapshot, in(c.Spawn.WorkdirSnapshot)),
		EnvAllow:        n.keep("capabilities.env.allow", a.Env.Allow, in(c.Env.Allow)),
		WorkdirExec:     n.flag("capabilities.filesystem.workdir_exec", c.Filesystem.WorkdirExec, a.Filesystem.WorkdirExec),
		InstallSkill:    n.keep("capabilities.install.skill", a.Install.Skill, instIn(c.Install.Skill)),
		InstallTool:     n.keep("capabilities.install.tool", a.Install.Tool, instIn(c.Install.Tool)),
	}
	// Filesystem scope: the artifact's when the capsule's covers it, else the
	// capsule's (an undeclared artifact scope intersected with the capsule's
	// is the capsule's).
	var capScope, artScope *string
	if c.Filesystem.Scope.Set {
		s := c.Filesystem.Scope.V
		capScope = &s
	}
	if a.Filesystem.Scope.Set {
		s := a.Filesystem.Scope.V
		artScope = &s
	}
	switch {
	case artScope == nil:
		g.FilesystemScope = capScope
	case ScopeCovers(capScope, artScope):
		g.FilesystemScope = artScope
	default:
		n.drop("capabilities.filesystem.scope", *artScope, "capabilities.filesystem.scope")
		g.FilesystemScope = capScope
	}
	return g
}

// CommandResources are capabilities.resources.* for native commands, with
// the built-in defaults applied.
type CommandResources struct {
	MaxProcesses      int64 `json:"max_processes"`
	MaxOpenFiles      int64 `json:"max_open_files"`
	MaxFileSizeBytes  int64 `json:"max_file_size_bytes"`
	CPUSeconds        int64 `json:"cpu_seconds"`
	MemoryBytes       int64 `json:"memory_bytes"`
	CgroupMemoryBytes int64 `json:"cgroup_memory_bytes"`
	CgroupPidsMax     int64 `json:"cgroup_pids_max"`
}

// CommandResources is what every native command c's capsule starts is held to.
func (c Capabilities) CommandResources() CommandResources {
	r := c.Resources
	return CommandResources{
		MaxProcesses:      r.MaxProcesses.Or(DefaultMaxProcesses),
		MaxOpenFiles:      r.MaxOpenFiles.Or(DefaultMaxOpenFiles),
		MaxFileSizeBytes:  r.MaxFileSizeBytes.Or(DefaultMaxFileSizeBytes),
		CPUSeconds:        r.CPUSeconds.Or(DefaultCPUSeconds),
		MemoryBytes:       r.MemoryBytes.Or(DefaultCommandMemory),
		CgroupMemoryBytes: r.CgroupMemoryBytes.Or(DefaultCgroupMemoryBytes),
		CgroupPidsMax:     r.CgroupPidsMax.Or(DefaultCgroupPidsMax),
	}
}
