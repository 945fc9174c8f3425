package launch

import (
	"fmt"
	"net/url"

	"path/filepath"
	"strings"

	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/tools"
)

// mcpNetworkAllow is what an mcp entry may reach: a stdio server's egress
// comes only from its own entry; an HTTP server is mur's own egress, the
// capsule's network.allow narrowed by the entry when it declares one.
func (p *Plan) mcpNetworkAllow(i int, a manifest.Artifact) []string {
	if a.MCP.URL != "" && !p.Manifest.Declared(fmt.Sprintf("artifacts[%d].capabilities.network", i)) {
		return p.Grants.Capsule.NetworkAllow
	}
	return tools.GrantOf(p.Grants, a).Grants.NetworkAllow
}

// checkMCPURLs refuses, before anything starts, an HTTP server whose url
// the entry's effective network.allow does not cover (E-CAP-020).
func (p *Plan) checkMCPURLs() error {
	if !p.Manifest.IsAgent() {
		return nil
	}
	for i, a := range p.Manifest.Artifacts {
		if !a.IsMCP() || a.MCP == nil || a.MCP.URL == "" {
			continue
		}
		u, err := url.Parse(a.MCP.URL)
		if err != nil {
			continue // the manifest refused it already
		}
		origin := u.Scheme + "://" + u.Host
		if !manifest.NetListCovers(p.mcpNetworkAllow(i, a), origin) {
			key := "capabilities.network.allow"
			if p.Manifest.Declared(fmt.Sprintf("artifacts[%d].capabilities.network", i)) {
				key = fmt.Sprintf("capabilities.network.allow (the capsule's, and artifacts[%d].capabilities.network.allow)", i)
			}
			return diag.New("E-CAP-020", "the MCP server %s at %s is not covered by its network.allow", a.Name, a.MCP.URL).
				WithHint("add %s to %s", origin, key)
		}
	}
	return nil
}

// mcpTier is the tier a stdio server runs under: the capsule's achieved
// tier, raised by the entry's own capabilities.containment; a raised tier
// the host (or the entry's workdir_exec) cannot deliver is E-CAP-003
// naming the entry.
func (p *Plan) mcpTier(a manifest.Artifact) (string, error) {
	tier := p.Containment.Achieved
	if a.Capabilities == nil || !a.Capabilities.Containment.Set {
		return tier, nil
	}
	want := a.Capabilities.Containment.V
	if contain.Rank(want) <= contain.Rank(tier) {
		return tier, nil
	}
	g := tools.GrantOf(p.Grants, a).Grants
	best := probe(p.Home).Best()
	switch {
	case g.WorkdirExec:
		return "", diag.New("E-CAP-003", "the MCP server %s declares containment %s, which its filesystem.workdir_exec caps at advisory", a.Name, want)
	case contain.Rank(best) < contain.Rank(want):
		return "", diag.New("E-CAP-003", "the MCP server %s declares containment %s, which this host cannot deliver (it delivers %s)", a.Name, want, best)
	}
	return want, nil
}

// checkMCPTiers refuses at load an entry's raised tier the host cannot
// deliver.
func (p *Plan) checkMCPTiers() error {
	if !p.Manifest.IsAgent() || !p.Containment.Native {
		return nil
	}
	for _, a := range p.Manifest.MCPEntries() {
		if a.MCP != nil && a.MCP.Command != "" {
			if _, err := p.mcpTier(a); err != nil {
				return err
			}
		}
	}
	return nil
}

// MCPScope is one server in --explain-scope --json's mcp array.
type MCPScope struct {
	Server          string   `json:"server"`
	Name            string   `json:"name"`
	Version         string   `json:"version"`
	Transport       string   `json:"transport"`
	Command         *string  `json:"command"`
	Binary          *string  `json:"binary"`
	Args            []string `json:"args"`
	EnvNames        []string `json:"env_names"`
	URL             *string  `json:"url"`
	HeaderNames     []string `json:"header_names"`
	Tools           []string `json:"tools"`
	ModelNames      []string `json:"model_names"`
	Containment     *string  `json:"containment"`
	NetworkAllow    []string `json:"network_allow"`
	EnvAllow        []string `json:"env_allow"`
	Scope           *string  `json:"scope"`
	StartSeconds    int      `json:"start_seconds"`
	DeadlineSeconds int      `json:"deadline_seconds"`
}

// MCPScopes are the capsule's servers as --explain-scope shows them; it
// starts nothing.
func (p *Plan) MCPScopes() []MCPScope {
	out := []MCPScope{}
	if !p.Manifest.IsAgent() {
		return out
	}
	for i, a := range p.Manifest.Artifacts {
		if !a.IsMCP() || a.MCP == nil {
			continue
		}
		c := a.MCP
		g := tools.GrantOf(p.Grants, a).Grants
		s := MCPScope{Server: manifest.Bare(a.Name), Name: a.Name, Version: a.Version, Transport: c.Transport(),
			Args: []string{}, EnvNames: []string{}, HeaderNames: []string{}, Tools: append([]string{}, c.Tools...),
			ModelNames: []string{}, NetworkAllow: append([]string{}, p.mcpNetworkAllow(i, a)...),
			EnvAllow: append([]string{}, g.EnvAllow...), Scope: g.FilesystemScope, StartSeconds: c.Start(),
			DeadlineSeconds: g.Limits.DeadlineSeconds}
		for _, t := range c.Tools {
			s.ModelNames = append(s.ModelNames, manifest.MCPModelName(s.Server, t))
		}
		if c.URL != "" {
			u := c.URL
			s.URL = &u
			for _, h := range c.Headers {
				s.HeaderNames = append(s.HeaderNames, h.Name)
			}
			s.EnvAllow = []string{}
		} else {
			cmd := c.Command
			s.Command = &cmd
			s.Args = append(s.Args, c.Args...)
			for _, kv := range c.Env {
				s.EnvNames = append(s.EnvNames, kv.Name)
			}
			if b, ok := p.mcpBinary(c); ok {
				s.Binary = &b
			}
			tier, err := p.mcpTier(a)
			if err != nil {
				tier = "refused: " + err.Error()
			}
			s.Containment = &tier
		}
		out = append(out, s)
	}
	return out
}

// mcpBinary is where a stdio server's command resolves now: its
// install_dirs, then the session's PATH.
func (p *Plan) mcpBinary(c *manifest.MCP) (string, bool) {
	var dirs []string
	for _, d := range c.InstallDirs {
		dirs = append(dirs, d, filepath.Join(d, ".bin"), filepath.Join(d, "bin"), filepath.Join(d, "node_modules", ".bin"))
	}
	path, _ := p.lookup("PATH")
	for _, d := range filepath.SplitList(path) {
		if filepath.IsAbs(d) {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		if b := filepath.Join(d, c.Command); isExecutable(b) {
			return b, true
		}
	}
	return "", false
}

// MCPLines are --explain-scope's mcp: lines: what each server may reach,
// then the tool names the model is offered.
func (p *Plan) MCPLines() []string {
	scopes := p.MCPScopes()
	if len(scopes) == 0 {
		return nil
	}
	var lines, names []string
	for _, s := range scopes {
		names = append(names, s.ModelNames...)
		if s.URL != nil {
			l := fmt.Sprintf("mcp: %s: http %s from mur itself (no proxy, no redirects)", s.Server, *s.URL)
			if len(s.HeaderNames) > 0 {
				l += "; headers: " + strings.Join(s.HeaderNames, ", ")
			}
			lines = append(lines, l)
			continue
		}
		where := "(not on PATH: a run fails with E-RUN-150)"
		if s.Binary != nil {
			where = "(" + *s.Binary + ")"
		}
		net := "none (every request is the egress proxy's 403)"
		if len(s.NetworkAllow) > 0 {
			net = strings.Join(s.NetworkAllow, ", ") + " through the egress proxy"
		}
		env := append(append([]string{}, s.EnvNames...), s.EnvAllow...)
		envText := "none of the host's"
		if len(env) > 0 {
			envText = strings.Join(env, ", ")
		}
		files := "the work folder read-write, its own HOME"
		if s.Scope != nil {
			files = "the scope " + *s.Scope + " read-write, its own HOME"
		}
		lines = append(lines, fmt.Sprintf("mcp: %s: stdio %s %s %s under %s; network: %s; env: %s; files: %s",
			s.Server, *s.Command, strings.Join(s.Args, " "), where, *s.Containment, net, envText, files))
	}
	return append(lines, "mcp tools: "+strings.Join(names, ", "))
}

// mcpDocLines are MURMUR.md's ## MCP servers lines, one per server.
func (p *Plan) mcpDocLines() []string {
	var out []string
	for _, s := range p.MCPScopes() {
		if s.URL != nil {
			out = append(out, fmt.Sprintf("%s  http  %s", s.Server, *s.URL))
			continue
		}
		out = append(out, fmt.Sprintf("%s  stdio  %s  (%s)", s.Server, strings.TrimSpace(*s.Command+" "+strings.Join(s.Args, " ")), *s.Containment))
	}
	return out
}

// MCPWhere is what mur doctor says of an MCP entry: where its command
// resolves (E-RUN-150 when it does not) or its url (E-CAP-020 when the
// entry's effective network.allow does not cover it).
func MCPWhere(m *manifest.Manifest, a manifest.Artifact, lookup func(string) (string, bool)) (string, error) {
	g, _ := m.EffectiveGrants()
	p := &Plan{Manifest: m, Grants: g, lookup: lookup}
	if a.MCP == nil {
		return "", diag.New("E-MAN-040", "%s has no mcp: block", a.Name)
	}
	if a.MCP.URL != "" {
		if err := p.checkMCPURLs(); err != nil {
			return a.MCP.URL, err
		}
		return a.MCP.URL, nil
	}
	b, ok := p.mcpBinary(a.MCP)
	if !ok {
		return a.MCP.Command, diag.New("E-RUN-150", "the MCP server %s: %s is not on PATH or in mcp.install_dirs", a.Name, a.MCP.Command).
			WithHint("install it under the system dirs, or name its folder in mcp.install_dirs")
	}
	return b, nil
}
