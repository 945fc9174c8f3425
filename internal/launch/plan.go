// Package launch is one `mur run`, as data (docs/running-capsules.md): Load reads the
// manifest once into a Plan — its bytes kept, the effective grants computed
// once, the containment decision made once — which is also what
// --explain-scope prints; Prepare then resolves what the run needs (secrets
// from those same bytes, the component, every declared tool) without writing
// anything; Run opens the session, the recorder and the trace, dispatches by
// kind, and ends the session on one path driven by its context.
//
// The CLI keeps flags and rendering; everything a run decides is here, so an
// agent capsule, a delegated child and a contained command share the same
// lifecycle.
package launch

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/delegate"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/script"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/tools"
)

// Request is what the person asked for on the command line.
type Request struct {
	// ManifestPath is a murmur.yaml path, or the directory holding one.
	// Ignored when Capsule is set.
	ManifestPath string
	// Capsule and CapsuleVersion name an installed capsule to run with no
	// project (--capsule, --capsule-version).
	Capsule, CapsuleVersion string
	// Containment is --containment: "" or a class name (already checked to
	// be advisory, scoped or sealed).
	Containment string
	// Home is $HOME (internal/home.Dir).
	Home string
	// LookupEnv reads mur's own environment (secrets, env.allow); nil is
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Plan is everything a run knows before any session file exists.
type Plan struct {
	Home string
	// Manifest is parsed from ManifestYAML, once; after Prepare its
	// gateway.api_key secrets are resolved.
	Manifest     *manifest.Manifest
	ManifestYAML []byte
	// From is where the manifest was read: the murmur.yaml path, or the
	// installed .mur.zip of a --capsule run.
	From string
	// ManifestDir is the directory holding murmur.yaml; "" for --capsule.
	ManifestDir string
	// Stores is the project store (none for --capsule), then the global one.
	Stores store.Chain
	// Grants are the effective grants, computed once; GrantsJSON is the
	// same value as session_start and MURMUR.md show it.
	Grants     manifest.Grants
	GrantsJSON json.RawMessage
	// Warnings are the manifest's (W-MAN, W-SEC-007), for the caller to
	// print once.
	Warnings []manifest.Warning
	// Containment is what this build applies to the capsule.
	Containment Containment
	// requested is --containment ("" when not given).
	requested string

	// Filled by Prepare:

	// ComponentName and Component are a script capsule's root component.
	// Component is nil until LoadComponent reads it: a compile-cache hit
	// needs only ComponentDigest.
	ComponentName string
	Component     []byte
	// ComponentDigest names Component's bytes for the compile cache: the
	// installed zip's hash and entry, or the file's identity when read from
	// the manifest's directory; "" means they must be hashed.
	ComponentDigest string
	// Tools are the declared tool artifacts (and, for an agent, skills),
	// resolved (lock-checked).
	Tools []*store.Resolved
	// Driver is an agent capsule's driver: its declared entry, and the
	// stored artifact when a store holds it (nil for a built-in).
	Driver *DriverPlan
	// SystemPrompt is an agent's configured prompt (inference.system_prompt,
	// or the file inference.system_prompt_file names).
	SystemPrompt string

	lookup    func(string) (string, bool)
	load      func() ([]byte, error) // reads Component (set by Prepare)
	capsule   bool                   // a --capsule run
	installed *store.Resolved        // the installed capsule of a --capsule run
	// member is a formation member's channel line 1 (nil for any other
	// run), read before anything else of the run; callees are the members
	// it may call, whose addresses arrive on the channel's line 2.
	member   *formation.Line1
	callees  *formation.Callees
	prepared bool
}

// containmentJSON is effective_grants.containment.
type containmentJSON struct {
	Declared  string `json:"declared"`
	Achieved  string `json:"achieved"`
	Mechanism string `json:"mechanism"`
}

// Kind is the plan's runtime kind in --explain-scope's words: "script
// capsule", "agent capsule", or "<runtime> artifact".
func (p *Plan) Kind() string {
	switch {
	case p.Manifest.RuntimeKind() != manifest.RuntimeCapsule:
		return p.Manifest.RuntimeKind() + " artifact"
	case p.Manifest.IsAgent():
		return "agent capsule"
	}
	return "script capsule"
}

// ToolNames are the declared tools' full names, in manifest order.
func (p *Plan) ToolNames() []string {
	names := make([]string, 0, len(p.Tools))
	for _, t := range p.Tools {
		if t.Runtime != manifest.RuntimeHook {
			names = append(names, t.Name)
		}
	}
	if p.Manifest != nil && p.Manifest.IsAgent() {
		for _, a := range p.Manifest.MCPEntries() {
			for _, t := range a.MCP.Tools {
				names = append(names, manifest.MCPModelName(manifest.Bare(a.Name), t))
			}
		}
	}
	return names
}

// MCPServers are the bare names of the capsule's MCP servers, in manifest
// order (session_start's mcp_servers).
func (p *Plan) MCPServers() []string {
	out := []string{}
	if p.Manifest == nil || !p.Manifest.IsAgent() {
		return out
	}
	for _, a := range p.Manifest.MCPEntries() {
		out = append(out, manifest.Bare(a.Name))
	}
	return out
}

// Load reads the manifest (or the installed capsule) once, computes its
// grants and makes the containment decision. It resolves no secret, no
// component and no tool, and writes nothing: it is all --explain-scope
// needs. A --containment floor this build cannot deliver is refused here,
// before anything is read.
func Load(req Request) (*Plan, error) {
	p := &Plan{Home: req.Home, lookup: req.LookupEnv}
	if p.lookup == nil {
		p.lookup = os.LookupEnv
	}
	if err := p.readMember(req); err != nil {
		return nil, err
	}
	if req.Capsule != "" {
		if err := p.loadInstalled(req); err != nil {
			return nil, err
		}
	} else if err := p.loadFile(req.ManifestPath); err != nil {
		return nil, err
	}
	var ws []manifest.Warning
	p.Grants, ws = p.Manifest.EffectiveGrants()
	_ = ws // the same W-SEC-007 warnings Parse already put in Manifest.Warnings
	p.Warnings = p.Manifest.Warnings
	p.requested = req.Containment
	if err := p.decide(""); err != nil {
		return nil, err
	}
	if err := p.checkMCPURLs(); err != nil {
		return nil, err
	}
	if err := p.checkMCPTiers(); err != nil {
		return nil, err
	}
	return p, nil
}

// decide makes the containment decision and the effective grants that
// carry it (session_start.effective_grants, docs/containment.md).
func (p *Plan) decide(parentTier string) error {
	p.Containment = decideContainment(p, p.requested, parentTier)
	b, err := json.Marshal(struct {
		manifest.Grants
		Containment containmentJSON `json:"containment"`
	}{p.Grants, containmentJSON{Declared: p.Containment.declaredText(), Achieved: p.Containment.Achieved,
		Mechanism: p.Containment.Mechanism}})
	if err != nil {
		return fmt.Errorf("launch: encoding the effective grants: %w", err)
	}
	p.GrantsJSON = b
	return nil
}

// raiseToParent applies a delegated child's parent_tier (docs/delegation.md):
// its floor becomes the higher of its own and its parent's achieved tier,
// decided again before its session exists; a floor this host (or the
// capsule's own workdir_exec) cannot deliver is E-CAP-003.
func (p *Plan) raiseToParent(parentTier string) error {
	if contain.Rank(parentTier) <= max(contain.Rank(p.Containment.Declared), contain.Rank(contain.Advisory)) {
		return nil // nothing to raise
	}
	if err := p.decide(parentTier); err != nil {
		return err
	}
	return p.Containment.refusal
}

func (p *Plan) loadInstalled(req Request) error {
	chain, err := store.ChainFor("", p.Home)
	if err != nil {
		return err
	}
	if p.member != nil {
		// A formation member resolves from its roster's project, then the
		// global store, presence-only: admission checked the lock and bound
		// the bytes' sha256, checked below.
		chain.Project = store.Project(p.member.Project)
	}
	r, err := chain.Resolve(req.Capsule, req.CapsuleVersion, manifest.Options{SkipSecrets: true})
	if err != nil {
		if store.IsNotFound(err) {
			return diag.New("E-RUN-008", "missing artifacts: %s@%s is not installed", req.Capsule, req.CapsuleVersion).
				WithHint("publish its .mur.zip into the global store: mur publish %s-%s.mur.zip", manifest.Bare(req.Capsule), req.CapsuleVersion)
		}
		return err
	}
	if p.member != nil && r.SHA256 != p.member.SHA256 {
		return diag.New("E-RUN-057", "%s@%s now hashes to %s, not the %s its formation admitted", r.Name, r.Version, r.SHA256, p.member.SHA256).
			WithHint("the capsule changed after mur run --roster admitted it: start the formation again")
	}
	if p.member != nil && p.member.Entry && r.Manifest.IsAgent() {
		// The entry holds the formation's one task.
		r.Manifest.Lifecycle.TaskAcceptance = manifest.Some("single")
		r.Manifest.Lifecycle.AfterTask = manifest.Some("exit")
	}
	p.capsule = true
	p.Stores = chain
	p.Manifest, p.From = r.Manifest, r.ZipPath
	// The same bytes the store verified and parsed: Resolve read the zip once.
	if p.ManifestYAML, err = r.Archive.ReadFile(store.ManifestEntry); err != nil {
		return diag.Wrap(err, "E-RUN-002", "cannot read %s from %s", store.ManifestEntry, r.Ref())
	}
	p.installed = r
	return nil
}

// readMember reads a formation member's channel line 1 (MURMUR_FORMATION_CHANNEL),
// after the formation variables are checked (E-RUN-044, E-RUN-046) and
// before anything is resolved; a member runs an installed capsule.
func (p *Plan) readMember(req Request) error {
	look := func(k string) (string, bool) { // a value not set is absent, whatever the lookup hands back with it
		if v, ok := p.lookup(k); ok {
			return v, true
		}
		return "", false
	}
	id, err := delegate.ReadFormation(look)
	if err != nil {
		return err
	}
	v, _ := look(formation.EnvChannel)
	if v = strings.TrimSpace(v); v == "" {
		return nil
	}
	if id == "" {
		return diag.New("E-RUN-046", "%s=%s refuses this launch: %s is not set", formation.EnvChannel, v, delegate.EnvFormationID).
			WithHint("it is set by mur run --roster only; unset it")
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return diag.New("E-RUN-046", "%s=%s refuses this launch: it must name a descriptor numbered 3 or above", formation.EnvChannel, v).
			WithHint("it is set by mur run --roster only; unset it")
	}
	if req.Capsule == "" {
		return diag.New("E-RUN-046", "%s=%s refuses this launch: a formation member runs an installed capsule (--capsule)", formation.EnvChannel, v).
			WithHint("it is set by mur run --roster only; unset it")
	}
	channel := bufio.NewReader(os.NewFile(uintptr(fd), "formation-channel"))
	if p.member, err = formation.ReadLine1(channel, id, formation.Line1Wait); err != nil {
		return err
	}
	p.callees = formation.NewCallees(p.member, channel, slog.Default())
	return nil
}

func (p *Plan) loadFile(manifestPath string) error {
	path, err := filepath.Abs(manifestPath)
	if err != nil {
		return diag.Wrap(err, "E-RUN-002", "cannot resolve the manifest path %s", manifestPath)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, store.ManifestEntry)
	}
	if p.ManifestYAML, err = manifest.Read(path); err != nil {
		return err
	}
	// Secrets are resolved by Prepare, once the manifest is known to be one
	// this mur runs: an unrunnable kind is refused as such, not for an
	// unset provider key it would never use here.
	if p.Manifest, err = manifest.Parse(p.ManifestYAML, path, manifest.Options{SkipSecrets: true}); err != nil {
		return err
	}
	p.From, p.ManifestDir = path, filepath.Dir(path)
	p.Stores, err = store.ChainFor(p.ManifestDir, p.Home)
	return err
}

// Prepare makes a loaded plan ready to run: it refuses what this mur does
// not run, resolves gateway.api_key secrets from the kept manifest bytes,
// reads the script capsule's component and resolves every declared tool. It
// writes nothing; a refusal leaves no session behind.
func (p *Plan) Prepare() error {
	if p.prepared {
		return nil
	}
	m := p.Manifest
	if k := m.RuntimeKind(); k != manifest.RuntimeCapsule {
		return diag.New("E-RUN-002", "%s is a %s artifact, not a capsule: only capsules run", m.Name, k).
			WithHint("declare it under artifacts: of a capsule's manifest instead")
	}
	if err := p.Containment.refusal; err != nil {
		return err
	}
	if err := p.resolveSecrets(); err != nil {
		return err
	}
	// Every store the artifacts declare, made or checked before any
	// session exists (E-CAP-009).
	if err := grant.PrepareStateStores(p.Home, m.StateStores()); err != nil {
		return err
	}
	// The tools' resolves (each a read and a hash of its zip) run beside the
	// component's read or the driver's resolve: they are independent, and
	// start-up has a second core to spare. The errors are reported in the
	// order the steps have: the component's (or the agent's) first.
	type resolved struct {
		tools []*store.Resolved
		err   error
	}
	toolsDone := make(chan resolved, 1)
	go func() {
		t, err := p.resolveTools()
		toolsDone <- resolved{t, err}
	}()
	var err error
	if m.IsAgent() {
		err = p.prepareAgent()
	} else {
		err = p.readComponent()
	}
	tr := <-toolsDone
	if err != nil {
		return err
	}
	if tr.err != nil {
		return tr.err
	}
	p.Tools = tr.tools
	p.prepared = true
	return nil
}

// toolsEnv fills in what every session's tools share from the plan: the
// state stores' home and bound.
func (p *Plan) toolsEnv(e *tools.Env) *tools.Env {
	e.StateHome = p.Home
	e.StateMaxBytes = p.Manifest.Capabilities.Resources.StateMaxBytes.Or(manifest.DefaultStateMaxBytes)
	return e
}

// readComponent reads the script capsule's root component: from the
// installed archive Load already verified, or from the manifest's directory.
func (p *Plan) readComponent() error {
	var err error
	if !p.capsule {
		return p.readComponentInDir()
	}
	r := p.installed
	if p.ComponentName, err = script.PickComponent(r.Ref(), r.Archive.Names()); err != nil {
		return err
	}
	if !r.Archive.Has(p.ComponentName) {
		return diag.New("E-RUN-003", "cannot read %s from %s", p.ComponentName, r.Ref())
	}
	name := p.ComponentName
	p.load = func() ([]byte, error) {
		b, err := r.Archive.ReadFile(name)
		if err != nil {
			return nil, diag.Wrap(err, "E-RUN-003", "cannot read %s from %s", name, r.Ref())
		}
		return b, nil
	}
	p.ComponentDigest = store.Digest(r, p.ComponentName)
	return nil
}

// LoadComponent returns the script capsule's component bytes, reading them
// on first use (Prepare names them; a compile-cache hit never reads them).
func (p *Plan) LoadComponent() ([]byte, error) {
	if p.Component == nil && p.load != nil {
		b, err := p.load()
		if err != nil {
			return nil, err
		}
		p.Component = b
	}
	return p.Component, nil
}

// readComponentInDir names the root component of a capsule run from its
// directory for the compile cache by the file's identity (dev, inode, size,
// mtime, ctime) without reading it: a warm run neither reads nor hashes it.
// A file changed in the last moments has no identity yet and is read and
// hashed now.
func (p *Plan) readComponentInDir() error {
	dir := p.ManifestDir
	entries, err := os.ReadDir(dir)
	if err != nil {
		return diag.Wrap(err, "E-RUN-003", "cannot list the capsule directory %s", dir)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	if p.ComponentName, err = script.PickComponent(dir, names); err != nil {
		return err
	}
	path := filepath.Join(dir, p.ComponentName)
	if p.ComponentDigest, err = store.Identify(path); err != nil {
		return diag.Wrap(err, "E-RUN-003", "cannot read %s", path)
	}
	if p.ComponentDigest == "" {
		if p.Component, p.ComponentDigest, err = store.ReadIdentified(path); err != nil {
			return diag.Wrap(err, "E-RUN-003", "cannot read %s", path)
		}
		return nil
	}
	want := p.ComponentDigest
	p.load = func() ([]byte, error) {
		b, got, err := store.ReadIdentified(path)
		if err != nil {
			return nil, diag.Wrap(err, "E-RUN-003", "cannot read %s", path)
		}
		// The digest already chose the cache entry's name: bytes of another
		// identity must not be compiled under it.
		if got != want {
			return nil, diag.New("E-RUN-003", "cannot read %s: it changed while the run was starting", path).
				WithHint("run again once it is written")
		}
		return b, nil
	}
	return nil
}

// resolveSecrets resolves ${NAME} in gateway.api_key (docs/manifest.md: an unset
// variable fails the load with E-MAN-003) by parsing the kept bytes again
// with secrets on; a manifest without such a reference is not parsed again.
func (p *Plan) resolveSecrets() error {
	for _, a := range p.Manifest.Artifacts {
		if a.Gateway != nil && a.Gateway.APIKeyRef != "" || a.MCP != nil && len(a.MCP.Headers) > 0 {
			full, err := manifest.Parse(p.ManifestYAML, p.Manifest.File, manifest.Options{LookupEnv: p.lookup})
			if err != nil {
				return err
			}
			p.Manifest = full
			return nil
		}
	}
	return nil
}

// resolveTools resolves every declared tool artifact before anything
// starts; the resolved artifacts are handed to the run, which does not
// resolve them again. The resolves run at once; the first refusal in
// declaration order that is not "not installed" wins, as it would one by one.
func (p *Plan) resolveTools() ([]*store.Resolved, error) {
	var want []manifest.Artifact
	for _, a := range p.Manifest.Artifacts {
		switch a.RuntimeKind() {
		case manifest.RuntimeTool:
		case manifest.RuntimeSkill, manifest.RuntimeHook:
			if !p.Manifest.IsAgent() {
				continue // no skill or hook runs in a script capsule
			}
		default:
			continue
		}
		want = append(want, a)
	}
	rs := make([]*store.Resolved, len(want))
	errs := make([]error, len(want))
	var wg sync.WaitGroup
	for i, a := range want {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs[i], errs[i] = p.Stores.Resolve(a.Name, a.Version, manifest.Options{SkipSecrets: true})
		}()
	}
	wg.Wait()
	var missing []string
	var out []*store.Resolved
	for i, a := range want {
		if err := errs[i]; err != nil {
			if store.IsNotFound(err) {
				missing = append(missing, a.Name+"@"+a.Version)
				continue
			}
			return nil, err
		}
		out = append(out, rs[i])
	}
	if len(missing) > 0 {
		hint := "run 'mur install' in the project to install every declared artifact from the global store (publish a missing one there first with 'mur publish <its .mur.zip>')"
		if p.capsule {
			hint = "publish each into the global store with 'mur publish <its .mur.zip>'"
		}
		return nil, diag.New("E-RUN-008", "missing artifacts: %s", strings.Join(missing, ", ")).WithHint("%s", hint)
	}
	return out, nil
}
