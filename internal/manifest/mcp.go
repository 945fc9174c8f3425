package manifest

// The mcp: block of an artifacts[] entry with runtime: mcp (docs/mcp.md): a
// Model Context Protocol server the runtime starts (stdio) or connects to
// (Streamable HTTP), and the allow-list of the tools it may offer.

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// RuntimeMCP is an artifacts[] entry that is an MCP server.
const RuntimeMCP = "mcp"

// DefaultMCPStartSeconds bounds one start of a server (mcp.start_seconds).
const DefaultMCPStartSeconds = 30

// MCPWorkdirPlaceholder is the one placeholder mcp.args and mcp.env take.
const MCPWorkdirPlaceholder = "${MURMUR_WORKDIR}"

// MCP is an entry's mcp: block.
type MCP struct {
	// Command is a stdio server's bare binary name ("" for an HTTP server).
	Command string
	Args    []string
	// Env are the literal variables added to a stdio server's environment,
	// in file order.
	Env []KV
	// URL is a Streamable HTTP server's endpoint ("" for stdio).
	URL string
	// Headers are sent on every request to URL, in file order; Value is
	// resolved (empty with Options.SkipSecrets), Ref the "${NAME}" form as
	// written ("" for a literal).
	Headers []Header
	// Tools is the allow-list, in manifest order.
	Tools        []string
	StartSeconds Opt[int]
	// InstallDirs are absolute folders the server is installed in (read and
	// execute at every tier).
	InstallDirs []string
}

// KV is one name = value pair.
type KV struct{ Name, Value string }

// Header is one mcp.headers entry.
type Header struct {
	Name, Value string
	// Ref is the value as written when it holds a ${NAME}; Literal reports a
	// value with no reference (mur build refuses one for a secret header).
	Ref     string
	Literal bool
}

// Transport is "stdio" or "http".
func (c *MCP) Transport() string {
	if c.URL != "" {
		return "http"
	}
	return "stdio"
}

// Start is mcp.start_seconds with its default.
func (c *MCP) Start() int { return c.StartSeconds.Or(DefaultMCPStartSeconds) }

// IsMCP reports whether the entry is an MCP server.
func (a Artifact) IsMCP() bool { return a.RuntimeKind() == RuntimeMCP }

// MCPModelName is the name the model calls a server's tool by:
// mcp__<server>__<tool>, every '.' in the tool written '_'.
func MCPModelName(server, tool string) string {
	return "mcp__" + server + "__" + strings.ReplaceAll(tool, ".", "_")
}

// MCPEntries lists the capsule's mcp entries in manifest order.
func (m *Manifest) MCPEntries() []Artifact {
	var out []Artifact
	for _, a := range m.Artifacts {
		if a.IsMCP() {
			out = append(out, a)
		}
	}
	return out
}

// MCPCommands are the stdio entries' commands: for the spawn envelope a
// stdio server counts as a shell.allow entry.
func (m *Manifest) MCPCommands() []string {
	var out []string
	for _, a := range m.MCPEntries() {
		if a.MCP != nil && a.MCP.Command != "" {
			out = append(out, a.MCP.Command)
		}
	}
	return out
}

// mcpToolName is an MCP tool name (tools: entries). It is compiled on first
// use: a counted repetition compiles to a program of hundreds of
// instructions (most of the package's 1,800 allocations at init, in every
// mur process, for a check only an MCP entry needs; issue 31).
var mcpToolName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`) })

// headerName is an HTTP field name (a token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// ownedHeaders are the headers the protocol or the runtime sets.
var ownedHeaders = map[string]bool{"host": true, "content-type": true, "content-length": true, "accept": true,
	"connection": true, "transfer-encoding": true, "mcp-session-id": true, "mcp-protocol-version": true,
	"mcp-method": true, "mcp-name": true, "last-event-id": true, "traceparent": true, "tracestate": true}

// SecretHeader reports whether a header's value must come from a ${NAME}
// (mur build refuses a literal one).
func SecretHeader(name string) bool {
	l := strings.ToLower(name)
	switch l {
	case "authorization", "proxy-authorization", "cookie":
		return true
	}
	return strings.Contains(l, "key") || strings.Contains(l, "token") || strings.Contains(l, "secret")
}

// mcpBlock reads an entry's mcp: block.
func (p *parser) mcpBlock(n *yaml.Node, path string, c *MCP) {
	p.mapping(n, path, func(k string, v *yaml.Node, kp string) bool {
		switch k {
		case "command":
			c.Command = p.binary(p.str(v, kp), deref(v), kp)
		case "args":
			c.Args = p.strList(v, kp, p.mcpPlaceholder)
		case "env":
			c.Env = p.strMap(v, kp, func(name, val string, vn *yaml.Node, ip string) {
				p.mcpPlaceholder(val, vn, ip)
			})
		case "url":
			c.URL = p.mcpURL(v, kp)
		case "headers":
			c.Headers = p.mcpHeaders(v, kp)
		case "tools":
			c.Tools = p.strList(v, kp, nil)
		case "start_seconds":
			c.StartSeconds = p.optInt(v, kp)
		case "install_dirs":
			c.InstallDirs = p.strList(v, kp, func(s string, it *yaml.Node, ip string) string {
				if !filepath.IsAbs(s) || hasControl(s) {
					p.fail(it, "E-MAN-045", "%s: %s is not an absolute folder", ip, strconv.Quote(s)).
						WithHint("name the folder the server is installed in by its absolute path, such as /opt/mcp/node_modules")
					return s
				}
				return filepath.Clean(s)
			})
		default:
			return false
		}
		return true
	})
}

// strMap reads a mapping of names to strings, in file order.
func (p *parser) strMap(n *yaml.Node, path string, check func(name, val string, vn *yaml.Node, ip string)) []KV {
	n = deref(n)
	out := []KV{}
	if isNull(n) {
		return out
	}
	if n.Kind != yaml.MappingNode {
		p.typeErr(n, path, "a mapping of names to strings")
		return out
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := deref(n.Content[i]), deref(n.Content[i+1])
		if !p.spend(kn) {
			return out
		}
		ip := join(path, kn.Value)
		if kn.Kind != yaml.ScalarNode || vn.Kind != yaml.ScalarNode || isNull(vn) {
			p.fail(vn, "E-MAN-004", "%s: expected a string, found %s", ip, kindName(vn))
			return out
		}
		if seen[kn.Value] {
			p.fail(kn, "E-MAN-010", "%s: the key appears twice", ip)
			return out
		}
		seen[kn.Value] = true
		p.m.declared[ip] = posOf(kn)
		if check != nil {
			check(kn.Value, vn.Value, vn, ip)
		}
		if p.err != nil {
			return out
		}
		out = append(out, KV{Name: kn.Value, Value: vn.Value})
	}
	return out
}

// mcpPlaceholder refuses a ${ other than ${MURMUR_WORKDIR}: secrets reach a
// stdio server only through env.allow.
func (p *parser) mcpPlaceholder(s string, it *yaml.Node, ip string) string {
	if strings.Contains(strings.ReplaceAll(s, MCPWorkdirPlaceholder, ""), "${") {
		p.fail(it, "E-MAN-042", "%s: the only placeholder an MCP server's args and env take is ${MURMUR_WORKDIR}", ip).
			WithHint("pass a secret to a stdio server as a host variable: list its name in the entry's capabilities.env.allow")
	}
	return s
}

func (p *parser) mcpURL(v *yaml.Node, kp string) string {
	s := p.str(v, kp)
	if p.err != nil {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Fragment != "" || strings.Contains(s, "#") || strings.Contains(s, "${") {
		p.fail(deref(v), "E-MAN-024", "%s: %s is not an http:// or https:// URL with a host and no user information, fragment or ${", kp, strconv.Quote(s))
	}
	return s
}

func (p *parser) mcpHeaders(v *yaml.Node, kp string) []Header {
	var out []Header
	p.strMap(v, kp, func(name, val string, vn *yaml.Node, ip string) {
		if !headerName.MatchString(name) || ownedHeaders[strings.ToLower(name)] {
			p.fail(vn, "E-MAN-043", "%s: %s is not a header an MCP entry may set (not an HTTP field name, or one the protocol or runtime owns)", ip, strconv.Quote(name))
			return
		}
		// Never quote the value: it may hold a secret.
		if strings.ContainsAny(val, "\r\n") || strings.Count(val, "${") > 1 {
			p.fail(vn, "E-MAN-043", "%s: a header value may not hold CR, LF or more than one ${NAME}", ip)
			return
		}
		h := Header{Name: name}
		i := strings.Index(val, "${")
		if i < 0 {
			h.Value, h.Literal = val, true
			out = append(out, h)
			return
		}
		j := strings.IndexByte(val[i:], '}')
		ref := ""
		if j > 0 {
			ref = val[i : i+j+1]
		}
		envName, ok := EnvRef(ref)
		if !ok {
			p.fail(vn, "E-MAN-021", "%s: a ${...} reference must name a variable of letters, digits and '_'", ip).
				WithHint("write %s: \"Bearer ${NAME}\"", name)
			return
		}
		h.Ref = val
		if !p.opts.SkipSecrets {
			sec, set := p.opts.LookupEnv(envName)
			if !set {
				p.fail(vn, "E-MAN-003", "%s references ${%s}, which is not set", ip, envName).
					WithHint("export %s in the environment of the process that runs the capsule", envName)
				return
			}
			h.Value = val[:i] + sec + val[i+j+1:]
		}
		out = append(out, h)
	})
	return out
}

// runtimeSet are the names the runtime sets in a server's environment.
func mcpRuntimeEnv(name string) bool {
	switch name {
	case "PATH", "LANG", "HOME":
		return true
	}
	u := strings.ToUpper(name)
	switch u {
	case "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY":
		return true
	}
	return strings.HasPrefix(name, "MURMUR_") || strings.HasPrefix(name, "LD_")
}

// mcpChecks checks one entry with runtime: mcp once all its keys are read.
func (p *parser) mcpChecks(path string, a *Artifact) {
	at := func(k string) Pos {
		if pos := p.m.PosOf(path + "." + k); pos != (Pos{}) {
			return pos
		}
		return a.Pos
	}
	c := a.MCP
	if c == nil {
		p.failAt(a.Pos, "E-MAN-040", "%s: an entry with runtime: mcp needs an mcp: block", path).
			WithHint("add mcp: with command: (stdio) or url: (Streamable HTTP), and tools:")
		return
	}
	switch {
	case (c.Command == "") == (c.URL == ""):
		p.failAt(at("mcp"), "E-MAN-040", "%s.mcp: give exactly one of command (stdio) and url (Streamable HTTP)", path)
	case c.URL != "" && (p.m.Declared(path+".mcp.args") || p.m.Declared(path+".mcp.env") || p.m.Declared(path+".mcp.install_dirs")):
		p.failAt(at("mcp"), "E-MAN-040", "%s.mcp: args, env and install_dirs belong to a stdio server (command), not to url", path)
	case c.Command != "" && p.m.Declared(path+".mcp.headers"):
		p.failAt(at("mcp.headers"), "E-MAN-040", "%s.mcp.headers: headers belong to an HTTP server (url), not to command", path)
	case a.Gateway != nil:
		p.failAt(at("gateway"), "E-MAN-040", "%s.gateway: gateway has no meaning on an mcp entry", path)
	case a.Config != nil:
		p.failAt(at("config"), "E-MAN-040", "%s.config: config has no meaning on an mcp entry", path)
	case len(c.Tools) == 0:
		p.failAt(at("mcp"), "E-MAN-040", "%s.mcp.tools: the allow-list of tools is required and may not be empty", path).
			WithHint("list the tools the model may call, such as tools: [echo]")
	}
	if p.err != nil {
		return
	}
	seen := map[string]bool{}
	bare := Bare(a.Name)
	for j, t := range c.Tools {
		ip := fmt.Sprintf("%s.mcp.tools[%d]", path, j)
		switch {
		case !mcpToolName().MatchString(t):
			p.failAt(p.m.PosOf(ip), "E-MAN-041", "%s: %s is not a tool name of 1 to 128 letters, digits, '_', '.' and '-'", ip, strconv.Quote(t))
		case seen[t]:
			p.failAt(p.m.PosOf(ip), "E-MAN-041", "%s: %s is listed twice", ip, t)
		case len(MCPModelName(bare, t)) > 64:
			p.failAt(p.m.PosOf(ip), "E-MAN-041", "%s: the model name %s passes 64 characters", ip, MCPModelName(bare, t)).
				WithHint("give the entry a shorter bare name")
		}
		if p.err != nil {
			return
		}
		seen[t] = true
	}
	var allow map[string]bool
	if a.Capabilities != nil {
		allow = map[string]bool{}
		for _, n := range a.Capabilities.Env.Allow {
			allow[n] = true
		}
	}
	for _, kv := range c.Env {
		ip := path + ".mcp.env." + kv.Name
		switch {
		case !validEnvName(kv.Name):
			p.failAt(p.m.PosOf(ip), "E-MAN-042", "%s: %s is not an environment variable name", ip, strconv.Quote(kv.Name))
		case mcpRuntimeEnv(kv.Name):
			p.failAt(p.m.PosOf(ip), "E-MAN-042", "%s: %s is a variable the runtime sets (PATH, LANG, HOME, MURMUR_*, the proxy variables) or an LD_* variable", ip, kv.Name)
		case allow[kv.Name]:
			p.failAt(p.m.PosOf(ip), "E-MAN-042", "%s: %s is also in the entry's capabilities.env.allow: give it one source", ip, kv.Name)
		}
		if p.err != nil {
			return
		}
	}
}

// mcpCrossChecks relate the mcp entries to the capsule: agent capsules only,
// one bare name per server, one model name per offered tool.
func (p *parser) mcpCrossChecks() {
	m := p.m
	names := map[string]string{} // model name → what offers it
	for _, b := range m.Capabilities.Shell.Allow {
		names[b] = "the shell tool " + b
	}
	servers := map[string]int{}
	for i, a := range m.Artifacts {
		if !a.IsMCP() || a.MCP == nil {
			continue
		}
		path := fmt.Sprintf("artifacts[%d]", i)
		if m.RuntimeKind() == RuntimeCapsule && !m.IsAgent() {
			p.failAt(a.Pos, "E-MAN-044", "%s: an mcp entry needs an agent capsule (one with inference:); a script capsule cannot start MCP servers", path).
				WithHint("remove the entry, or make the capsule an agent")
			return
		}
		bare := Bare(a.Name)
		if j, dup := servers[bare]; dup {
			p.failAt(m.PosOf(path+".name"), "E-MAN-040", "%s.name: two mcp entries share the bare name %q (artifacts[%d])", path, bare, j).
				WithHint("give each server its own bare name: the model's tool names are built from it")
			return
		}
		servers[bare] = i
		for j, t := range a.MCP.Tools {
			mn := MCPModelName(bare, t)
			if other, dup := names[mn]; dup {
				p.failAt(m.PosOf(fmt.Sprintf("%s.mcp.tools[%d]", path, j)), "E-MAN-026", "%s.mcp.tools[%d]: the model name %s is also %s", path, j, mn, other)
				return
			}
			names[mn] = "a tool of " + a.Name
		}
	}
}
