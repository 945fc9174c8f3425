package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
)

// Build makes a capsule's inventory from its manifest, its effective grants
// (computed once, by the launch) and the artifacts the launch resolved: one
// WASM entry per declared tool, one Skill entry per resolved skill. A
// declared tool that was not resolved gets an entry whose every call fails
// saying so, so the capsule learns it from the call, as it would any other
// failure.
func Build(env *Env, m *manifest.Manifest, g manifest.Grants, resolved []*store.Resolved) (*Inventory, error) {
	inv := NewInventory(m.Name)
	byRef := map[string]*store.Resolved{}
	for _, r := range resolved {
		byRef[r.Name+"@"+r.Version] = r
	}
	// One shell tool per shell.allow binary (docs/agent-capsules.md), sharing one
	// environment: the session's, the capsule's env.allow and scope.
	if len(g.Capsule.ShellAllow) > 0 && env.Session != nil {
		se := &ShellEnv{Session: env.Session, Scope: g.Capsule.FilesystemScope, EnvAllow: g.Capsule.EnvAllow,
			Lookup: env.Lookup, Deadline: time.Duration(g.Capsule.Limits.DeadlineSeconds) * time.Second, Wrap: env.Wrap, ProxyEnv: env.ProxyEnv}
		for _, b := range g.Capsule.ShellAllow {
			if err := inv.Add(NewShell(se, b)); err != nil {
				return nil, err
			}
		}
	}
	for _, a := range m.Artifacts {
		r := byRef[ref(a)]
		switch {
		case a.RuntimeKind() == manifest.RuntimeTool:
			// A native tool (the published implementation's runtime: native)
			// is refused when called, naming the key: this build runs
			// components only.
			loadErr := a.RefuseNative()
			if loadErr == nil && r != nil && r.Manifest != nil {
				loadErr = r.Manifest.RefuseNative()
			}
			if r == nil && loadErr == nil {
				loadErr = diag.New("E-RUN-063", "tool %s cannot be loaded: it is not installed in the project or the global store", ref(a)).
					WithHint("run 'mur install' in the project")
			}
			if err := inv.Add(NewWASM(env, a, GrantOf(g, a), r, loadErr)); err != nil {
				return nil, err
			}
		case a.RuntimeKind() == manifest.RuntimeSkill && r != nil:
			s, err := NewSkill(a, r)
			if err != nil {
				return nil, err
			}
			if err := inv.Add(s); err != nil {
				return nil, err
			}
		}
	}
	return inv, nil
}

// GrantOf is the artifact's narrowed grant; grants computed without it give
// it the capsule's.
func GrantOf(g manifest.Grants, a manifest.Artifact) manifest.ArtifactGrant {
	for _, ag := range g.Artifacts {
		if ag.Name == a.Name && ag.Version == a.Version {
			return ag
		}
	}
	return manifest.ArtifactGrant{Name: a.Name, Version: a.Version, Runtime: manifest.RuntimeTool, Grants: g.Capsule}
}

// Skill is a skill artifact: calling it returns its skill.md text.
type Skill struct {
	decl manifest.Artifact
	desc string
	text string
}

// NewSkill reads the skill's skill.md from its resolved archive.
func NewSkill(a manifest.Artifact, r *store.Resolved) (*Skill, error) {
	b, err := r.Archive.ReadFile("skill.md")
	if err != nil {
		return nil, diag.Wrap(err, "E-RUN-063", "skill %s cannot be loaded: its .mur.zip holds no skill.md", ref(a)).
			WithHint("rebuild it with 'mur build' from a directory holding skill.md")
	}
	desc := "the skill " + ref(a) + ": call it to read its instructions"
	if r.Manifest != nil && r.Manifest.Description != "" {
		desc = r.Manifest.Description
	}
	return &Skill{decl: a, desc: desc, text: string(b)}, nil
}

func (s *Skill) Name() string            { return s.decl.Name }
func (s *Skill) Kind() string            { return KindSkill }
func (s *Skill) Description() string     { return s.desc }
func (s *Skill) Schema() json.RawMessage { return DefaultSchema }

// Text is the skill's instructions.
func (s *Skill) Text() string { return s.text }

// Call answers the model with the skill's instructions; a script cannot
// invoke a skill.
func (s *Skill) Call(_ context.Context, c *Call) Outcome {
	if c.Task == nil {
		return refuseScript(s, c.Name)
	}
	return Outcome{Text: s.text}
}
