package manifest

// The schema of murmur.yaml (docs/manifest.md): one walker per block, each
// recording declared keys and refusing a bad value where it was written.

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

func (p *parser) top(n *yaml.Node) {
	m := p.m
	p.mapping(n, "", func(key string, v *yaml.Node, kp string) bool {
		switch key {
		case "name":
			s := p.str(v, kp)
			if p.err != nil {
				return true
			}
			if s == "" {
				p.fail(deref(v), "E-MAN-001", "name: the name is empty").WithHint("write name: my-capsule")
				return true
			}
			full, err := NormalizeName(s)
			if err != nil {
				p.fail(deref(v), "E-MAN-005", "name: %v", err).
					WithHint("use a bare name such as worker-a (it becomes local/worker-a) or a full name such as acme/worker-a")
				return true
			}
			m.Name, m.DeclaredName = full, s
		case "version":
			m.Version = p.version(v, kp)
		case "runtime":
			m.Runtime, m.DeclaredRuntime = p.readRuntime(v, kp, true)
		case "implementation":
			m.Implementation = p.enum(v, kp, ImplementationWASM, ImplementationNative)
			p.valPos[kp] = posOf(deref(v))
		case "execution":
			m.Execution = p.enum(v, kp, ExecutionWASM, ExecutionNative, ExecutionStatic)
			p.valPos[kp] = posOf(deref(v))
		case "description":
			m.Description = p.str(v, kp)
		case "tags":
			m.Tags = p.strList(v, kp, nil)
		case "input_schema":
			m.InputSchema = p.inputSchema(v, kp)
		case "requires_files":
			m.RequiresFiles = p.strList(v, kp, p.relFile)
		case "artifacts":
			p.artifacts(v, kp)
		case "capabilities":
			p.capabilities(v, kp, &m.Capabilities, nil)
		case "inference":
			m.Inference = &Inference{}
			p.inference(v, kp, m.Inference)
		case "lifecycle":
			p.lifecycle(v, kp, &m.Lifecycle)
		case "tools":
			p.toolSettings(v, kp)
		case "network":
			p.door(v, kp, "authentication", func(v *yaml.Node, kp string) {
				p.doorAuth(v, kp, &m.Door)
			})
		case "exports":
			p.exports(v, kp)
		case "observability":
			p.mapping(v, kp, func(k string, v *yaml.Node, kp string) bool {
				if k != "otel_endpoint" {
					return false
				}
				m.Observability.OtelEndpoint = p.url(v, kp)
				return true
			})
		case "trace":
			p.mapping(v, kp, func(k string, v *yaml.Node, kp string) bool {
				if k != "retain" {
					return false
				}
				p.retain(v, kp, &m.Trace.Retain)
				return true
			})
		default:
			return false
		}
		return true
	})
}

func (p *parser) version(v *yaml.Node, kp string) string {
	s := p.str(v, kp)
	if p.err != nil {
		return ""
	}
	switch {
	case strings.TrimSpace(s) == "":
		p.fail(deref(v), "E-MAN-006", "%s: the version is empty", kp).WithHint(`write a version such as "0.1.0"`)
	case ReservedVersion(s):
		p.fail(deref(v), "E-MAN-006", "%s: %q is a reserved version that resolves to nothing", kp, s).
			WithHint(`latest, stable and edge cannot be declared; write a concrete version such as "0.1.0"`)
	case strings.ContainsAny(s, "/\\ \t\n\x00") || s == "." || s == "..":
		p.fail(deref(v), "E-MAN-006", "%s: %q is not a usable version (no spaces, slashes or dot-only names)", kp, s).
			WithHint(`write a version such as "0.1.0"`)
	}
	return s
}

// relFile validates a requires_files entry: relative, no "..".
func (p *parser) relFile(s string, it *yaml.Node, ip string) string {
	if s == "" || strings.HasPrefix(s, "/") || strings.HasPrefix(s, `\`) || strings.IndexByte(s, 0) >= 0 {
		p.fail(it, "E-MAN-014", "%s: %s is not a relative path", ip, strconv.Quote(s)).
			WithHint("name a file beside murmur.yaml, such as prompts/system.md")
		return s
	}
	for _, c := range strings.Split(strings.ReplaceAll(s, `\`, "/"), "/") {
		if c == ".." {
			p.fail(it, "E-MAN-014", "%s: %s has a '..' component", ip, strconv.Quote(s)).
				WithHint("only files inside the manifest's directory can be packed")
			return s
		}
	}
	return path.Clean(s)
}

func (p *parser) url(v *yaml.Node, kp string) string {
	s := p.str(v, kp)
	if p.err != nil {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.fail(deref(v), "E-MAN-024", "%s: %s is not an http:// or https:// URL", kp, strconv.Quote(s))
	}
	return s
}

func (p *parser) retain(n *yaml.Node, path string, r *Retain) {
	p.mapping(n, path, func(k string, v *yaml.Node, kp string) bool {
		switch k {
		case "max_sessions":
			r.MaxSessions = p.optInt(v, kp)
		case "max_age":
			s := p.str(v, kp)
			if p.err != nil {
				return true
			}
			if _, err := ParseMaxAge(s); err != nil {
				p.fail(deref(v), "E-MAN-015", "%s: %v", kp, err).WithHint(`write a Go duration such as "72h" or a number of days such as "7d"`)
				return true
			}
			r.MaxAge = Some(s)
		default:
			return false
		}
		return true
	})
}

// ParseMaxAge reads trace.retain.max_age: a positive Go duration ("36h") or
// a whole number of days ("7d").
func ParseMaxAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok && d != "" && strings.Trim(d, "0123456789") == "" {
		n, err := strconv.ParseInt(d, 10, 64)
		if err != nil || n < 1 || n > math.MaxInt64/int64(24*time.Hour) {
			return 0, fmt.Errorf("%q is not a usable number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither a Go duration nor a number of days (Nd)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration", s)
	}
	return d, nil
}

// MaxAgeDuration is trace.retain.max_age as a duration; false when undeclared.
func (r Retain) MaxAgeDuration() (time.Duration, bool) {
	if !r.MaxAge.Set {
		return 0, false
	}
	d, err := ParseMaxAge(r.MaxAge.V)
	return d, err == nil
}

// toolKeys resolves each tools: key to a tool of the capsule's inventory:
// a tool or skill artifact by its full name, or by its bare name when no
// other tool shares it; a shell.allow binary; delegate-task when
// spawn.allow is not empty; submit-plan when plan.submit is granted. Anything
// else is E-MAN-032.
func (p *parser) toolKeys() {
	m := p.m
	if len(m.Tools) == 0 {
		return
	}
	var names []string
	exact := map[string]bool{}
	bare := map[string][]string{}
	for _, a := range m.Artifacts {
		if k := a.RuntimeKind(); k == RuntimeTool || k == RuntimeSkill {
			names = append(names, a.Name)
			exact[a.Name] = true
			bare[Bare(a.Name)] = append(bare[Bare(a.Name)], a.Name)
		}
	}
	for _, b := range m.Capabilities.Shell.Allow {
		names = append(names, b)
		exact[b] = true
	}
	if len(m.Capabilities.Spawn.Allow) > 0 {
		names = append(names, "delegate-task")
		exact["delegate-task"] = true
	}
	if m.IsAgent() && m.Capabilities.Plan.Submit.Or(false) {
		names = append(names, "submit-plan")
		exact["submit-plan"] = true
	}
	for i := range m.Tools {
		t := &m.Tools[i]
		kp := join("tools", t.Key)
		switch {
		case exact[t.Key]:
			t.Tool = t.Key
			continue
		case len(bare[t.Key]) == 1 && !strings.Contains(t.Key, "/"):
			t.Tool = bare[t.Key][0]
			continue
		}
		shown := "(none)"
		if len(names) > 0 {
			shown = strings.Join(names, ", ")
		}
		if len(bare[t.Key]) > 1 {
			p.failAt(m.PosOf(kp), "E-MAN-032", "%s: %q is the bare name of %s: name the tool by its full name",
				kp, t.Key, strings.Join(bare[t.Key], " and ")).WithHint("write the full name (scope/name) as the key")
			return
		}
		p.failAt(m.PosOf(kp), "E-MAN-032", "%s: %q names no tool of this capsule; its tools are %s", kp, t.Key, shown).
			WithHint("key tools: by a tool artifact's name, a capabilities.shell.allow binary, delegate-task or submit-plan")
		return
	}
}

// toolSettings reads the top-level tools: map, keyed by a tool's name;
// which names are tools of the capsule is checked once the inventory is
// known (E-MAN-032).
func (p *parser) toolSettings(n *yaml.Node, path string) {
	n = deref(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.typeErr(n, path, "a mapping")
		return
	}
	for _, pr := range p.pairs(n, path, 0) {
		key := pr[0].Value
		kp := join(path, key)
		p.m.declared[kp] = posOf(pr[0])
		t := ToolSetting{Key: key}
		p.mapping(pr[1], kp, func(k string, v *yaml.Node, kp string) bool {
			if k != "approval" {
				return false
			}
			t.Approval = p.enum(v, kp, ApprovalRequired, "none")
			return true
		})
		p.m.Tools = append(p.m.Tools, t)
	}
}

// door walks a top-level block of the door's keys (network, exports) that
// takes one sub-block.
func (p *parser) door(n *yaml.Node, path, sub string, walk func(v *yaml.Node, kp string)) {
	p.mapping(n, path, func(k string, v *yaml.Node, kp string) bool {
		if k != sub {
			return false
		}
		walk(v, kp)
		return true
	})
}

// doorAuth reads network.authentication: its scheme is required and bearer
// is the only value.
func (p *parser) doorAuth(n *yaml.Node, path string, d *Door) {
	if isNull(deref(n)) {
		return // a key with an empty value is absent
	}
	seen := false
	p.mapping(n, path, func(k string, v *yaml.Node, kp string) bool {
		if k != "scheme" {
			return false
		}
		seen = true
		s := p.enum(v, kp, "bearer")
		d.AuthScheme = s.V
		return true
	})
	if !seen && p.err == nil {
		p.fail(deref(n), "E-MAN-007", "%s.scheme: missing; the only scheme is bearer", path).
			WithHint("write scheme: bearer under network.authentication")
	}
}

func (p *parser) lifecycle(n *yaml.Node, path string, l *Lifecycle) {
	p.mapping(n, path, func(k string, v *yaml.Node, kp string) bool {
		switch k {
		case "task_acceptance":
			l.TaskAcceptance = p.enum(v, kp, "none", "single", "queue")
		case "after_task":
			l.AfterTask = p.enum(v, kp, "exit", "sleep")
		case "queue_depth":
			l.QueueDepth = p.optInt(v, kp)
		case "delegation_deadline_secs":
			l.DelegationDeadlineSecs = p.optInt(v, kp)
		case "input_timeout_secs":
			l.InputTimeoutSecs = p.optInt(v, kp)
		default:
			return false
		}
		return true
	})
}

func (p *parser) inference(n *yaml.Node, path string, in *Inference) {
	p.mapping(n, path, func(k string, v *yaml.Node, kp string) bool {
		switch k {
		case "transport":
			in.Transport = p.enum(v, kp, "http", "process")
		case "model":
			in.Model = p.str(v, kp)
		case "driver":
			p.mapping(v, kp, func(k string, v *yaml.Node, kp string) bool {
				if k != "artifact" {
					return false
				}
				in.DriverArtifact = p.str(v, kp)
				return true
			})
		case "command":
			in.Command = p.str(v, kp)
		case "max_turns":
			in.MaxTurns = p.optInt(v, kp)
		case "max_tokens":
			in.MaxTokens = p.optInt(v, kp)
		case "max_session_tokens":
			in.MaxSessionTokens = p.optInt(v, kp)
		case "system_prompt":
			in.SystemPrompt = p.str(v, kp)
		case "system_prompt_file":
			in.SystemPromptFile = p.str(v, kp)
			if p.err == nil {
				in.SystemPromptFile = p.relFile(in.SystemPromptFile, deref(v), kp)
			}
		default:
			return false
		}
		return true
	})
}

func (p *parser) artifacts(n *yaml.Node, path string) {
	n = deref(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.typeErr(n, path, "a list")
		return
	}
	if p.tooLong(n, path) {
		return
	}
	seen := map[string]Pos{}
	for i, it := range n.Content {
		it = deref(it)
		if !p.spend(it) {
			return
		}
		ip := fmt.Sprintf("%s[%d]", path, i)
		p.m.declared[ip] = posOf(it)
		a := Artifact{Pos: posOf(it)}
		if it.Kind != yaml.MappingNode {
			p.typeErr(it, ip, "a mapping (name:, version:, ...)")
			return
		}
		p.artifact(it, ip, &a)
		if p.err != nil {
			return
		}
		if a.Name == "" {
			p.fail(it, "E-MAN-001", "%s: missing required key 'name'", ip).WithHint("give the artifact's full name, such as murmur/driver-anthropic")
			return
		}
		if !p.m.Declared(ip + ".version") {
			p.fail(it, "E-MAN-001", "%s: missing required key 'version'", ip).WithHint(`give the artifact's version, such as "0.1.0"`)
			return
		}
		if first, dup := seen[a.Name]; dup {
			p.failAt(p.m.PosOf(ip+".name"), "E-MAN-009", "%s.name: artifact %s is declared twice (first at line %d, column %d)", ip, a.Name, first.Line, first.Column).
				WithHint("declare each artifact once")
			return
		}
		seen[a.Name] = p.m.PosOf(ip + ".name")
		p.m.Artifacts = append(p.m.Artifacts, a)
	}
}

func (p *parser) artifact(n *yaml.Node, path string, a *Artifact) {
	p.mapping(n, path, func(k string, v *yaml.Node, kp string) bool {
		switch k {
		case "name":
			s := p.str(v, kp)
			if p.err != nil {
				return true
			}
			// A bare name means local/<name>, as a bare capsule name does
			// (DefaultScope): the published implementation writes them so.
			full, err := NormalizeName(s)
			if err != nil {
				p.fail(deref(v), "E-MAN-005", "%s: %v", kp, err).
					WithHint("write a bare name such as jsonl-line-count (it means local/jsonl-line-count) or a full name such as acme/lint")
				return true
			}
			a.Name, a.DeclaredName = full, s
		case "version":
			a.Version = p.version(v, kp)
		case "runtime":
			a.Runtime, a.DeclaredRuntime = p.readRuntime(v, kp, false)
		case "gateway":
			a.Gateway = &Gateway{}
			p.gateway(v, kp, a.Gateway)
		case "capabilities":
			a.Capabilities = &Capabilities{}
			p.capabilities(v, kp, a.Capabilities, a)
		case "config":
			a.Config = p.config(v, kp)
		case "deadline_seconds":
			a.DeadlineSeconds = p.optInt(v, kp)
		case "mcp":
			a.MCP = &MCP{}
			p.mcpBlock(v, kp, a.MCP)
		default:
			return false
		}
		return true
	})
	if p.err == nil && a.IsMCP() {
		p.mcpChecks(path, a)
	} else if p.err == nil && a.MCP != nil {
		p.failAt(p.m.PosOf(path+".mcp"), "E-MAN-040", "%s.mcp: an mcp: block needs runtime: mcp on its entry", path).
			WithHint("add runtime: mcp to the entry")
	}
	if p.err == nil && a.DeclaredRuntime == RuntimeNative {
		a.native = &nativeMark{file: p.file, key: path + ".runtime", pos: p.m.PosOf(path + ".runtime"), name: a.Name}
	}
	if p.err == nil && a.DeadlineSeconds.Set && a.RuntimeKind() != RuntimeHook {
		p.warn(deref(n), "W-MAN-003", "%s.deadline_seconds: only a hook's entry may set its own deadline; ignored for %s artifact %s (use capabilities.limits.deadline_seconds)", path, a.RuntimeKind(), a.Name)
	}
}

// config reads an artifact's config: block, which is free-form (never
// warned about) but is handed to the artifact as JSON: keys become strings,
// and a value JSON cannot carry (a non-finite number, a mapping used as a
// key) is refused here rather than when the artifact starts.
func (p *parser) config(v *yaml.Node, kp string) map[string]any {
	v = deref(v)
	if isNull(v) {
		return map[string]any{}
	}
	if v.Kind != yaml.MappingNode {
		p.typeErr(v, kp, "a mapping")
		return nil
	}
	out, _ := p.configValue(v, kp, 0).(map[string]any)
	return out
}

// inputSchema reads a tool's input_schema (docs/manifest.md): the JSON Schema
// of its input, written as a YAML mapping or as a string holding a JSON
// object. It is kept as JSON, the form the model is offered.
func (p *parser) inputSchema(v *yaml.Node, kp string) json.RawMessage {
	v = deref(v)
	if isNull(v) {
		return nil
	}
	if v.Kind == yaml.ScalarNode {
		var obj map[string]any
		if json.Unmarshal([]byte(v.Value), &obj) != nil || obj == nil {
			p.fail(v, "E-MAN-004", "%s: expected a JSON Schema object (a mapping, or a string holding a JSON object), found %s", kp, describe(v))
			return nil
		}
		b, _ := json.Marshal(obj)
		return b
	}
	obj := p.config(v, kp)
	if p.err != nil {
		return nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		p.fail(v, "E-MAN-004", "%s: cannot be written as JSON: %v", kp, err)
		return nil
	}
	return b
}

func (p *parser) configValue(n *yaml.Node, path string, depth int) any {
	n = deref(n)
	if depth > 100 {
		p.fail(n, "E-MAN-025", "%s: nests more than 100 levels deep", path)
		return nil
	}
	if !p.spend(n) {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		seen := map[string]Pos{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn := deref(n.Content[i])
			if kn.Kind != yaml.ScalarNode {
				p.fail(kn, "E-MAN-004", "%s: expected a plain key, found %s", path, kindName(kn))
				return nil
			}
			kp := join(path, kn.Value)
			if first, dup := seen[kn.Value]; dup {
				p.fail(kn, "E-MAN-010", "%s: the key appears twice (first at line %d, column %d)", kp, first.Line, first.Column)
				return nil
			}
			seen[kn.Value] = posOf(kn)
			out[kn.Value] = p.configValue(n.Content[i+1], kp, depth+1)
			if p.err != nil {
				return nil
			}
		}
		return out
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, it := range n.Content {
			out = append(out, p.configValue(it, fmt.Sprintf("%s[%d]", path, i), depth+1))
			if p.err != nil {
				return nil
			}
		}
		return out
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil
		case "!!bool":
			var b bool
			if n.Decode(&b) == nil {
				return b
			}
		case "!!int":
			var i int
			if n.Decode(&i) == nil {
				return i
			}
			var f float64
			if n.Decode(&f) == nil {
				return f
			}
		case "!!float":
			var f float64
			if n.Decode(&f) == nil {
				if math.IsInf(f, 0) || math.IsNaN(f) {
					p.fail(n, "E-MAN-004", "%s: %s is not a finite number, which the JSON an artifact's config is handed over as cannot carry", path, describe(n))
					return nil
				}
				return f
			}
		}
		return n.Value
	}
	p.fail(n, "E-MAN-004", "%s: unexpected %s", path, kindName(n))
	return nil
}

func (p *parser) gateway(n *yaml.Node, path string, g *Gateway) {
	p.mapping(n, path, func(k string, v *yaml.Node, kp string) bool {
		switch k {
		case "endpoint":
			g.Endpoint = p.url(v, kp)
		case "api_key":
			s := p.str(v, kp)
			if p.err != nil {
				return true
			}
			vn := deref(v)
			if name, ok := EnvRef(s); ok {
				g.APIKeyRef = s
				if p.opts.SkipSecrets {
					return true
				}
				val, set := p.opts.LookupEnv(name)
				if !set {
					p.fail(vn, "E-MAN-003", "%s references ${%s}, which is not set", kp, name).
						WithHint("export %s in the environment of the process that runs the capsule", name)
					return true
				}
				g.APIKey = val
				return true
			}
			if strings.Contains(s, "${") {
				// Never quote the value: it may hold a secret.
				p.fail(vn, "E-MAN-021", "%s: a ${...} reference must be the whole value and name a variable of letters, digits and '_'", kp).
					WithHint("write api_key: ${NAME}")
				return true
			}
			g.APIKey = s
		default:
			return false
		}
		return true
	})
}

// capabilities walks a capabilities block; art is the artifact that owns it,
// nil at capsule level (where state: is inert).
func (p *parser) capabilities(n *yaml.Node, path string, c *Capabilities, art *Artifact) {
	p.mapping(n, path, func(k string, v *yaml.Node, kp string) bool {
		switch k {
		case "network":
			p.mapping(v, kp, func(k string, v *yaml.Node, kp string) bool {
				switch k {
				case "allow":
					c.Network.Allow = p.strList(v, kp, p.netEntry)
				case "unix_sockets":
					c.Network.UnixSockets = p.boolean(v, kp)
				default:
					return false
				}
				return true
			})
		case "peer_fetch":
			p.allowOnly(v, kp, &c.PeerFetch, p.netEntry)
		case "shell":
			p.allowOnly(v, kp, &c.Shell, p.binary)
		case "env":
			p.allowOnly(v, kp, &c.Env, p.envName)
		case "spawn":
			p.mapping(v, kp, func(k string, v *yaml.Node, kp string) bool {
				switch k {
				case "allow":
					c.Spawn.Allow = p.strList(v, kp, p.fullName)
				case "workdir_snapshot":
					c.Spawn.WorkdirSnapshot = p.strList(v, kp, p.fullName)
				default:
					return false
				}
				return true
			})
		case "filesystem":
			p.mapping(v, kp, func(k string, v *yaml.Node, kp string) bool {
				switch k {
				case "scope":
					s := p.str(v, kp)
					if p.err != nil {
						return true
					}
					cs, err := CleanScope(s)
					if err != nil {
						p.fail(deref(v), "E-CAP-002", "%s: %v", kp, err).
							WithHint("give a relative folder inside the work folder, such as src")
						return true
					}
					c.Filesystem.Scope = Some(cs)
				case "workdir_exec":
					c.Filesystem.WorkdirExec = p.boolean(v, kp)
				default:
					return false
				}
				return true
			})
		case "install":
			p.mapping(v, kp, func(k string, v *yaml.Node, kp string) bool {
				switch k {
				case "skill":
					c.Install.Skill = p.strList(v, kp, p.installPattern)
				case "tool":
					c.Install.Tool = p.strList(v, kp, p.installPattern)
				default:
					return false
				}
				return true
			})
		case "plan":
			p.mapping(v, kp, func(k string, v *yaml.Node, kp string) bool {
				if k != "submit" {
					return false
				}
				c.Plan.Submit = p.boolean(v, kp)
				if art != nil && p.err == nil {
					p.warn(deref(v), "W-MAN-005", "%s: submit-plan is a tool of the whole capsule; under an artifact's own capabilities it does nothing (declare capabilities.plan.submit at the top level of an agent capsule)", kp)
				}
				return true
			})
		case "containment":
			c.Containment = p.enum(v, kp, ContainmentAdvisory, ContainmentScoped, ContainmentSealed)
		case "limits":
			p.mapping(v, kp, func(k string, v *yaml.Node, kp string) bool {
				switch k {
				case "deadline_seconds":
					c.Limits.DeadlineSeconds = p.optInt(v, kp)
				case "memory_bytes":
					c.Limits.MemoryBytes = p.optInt64(v, kp)
				case "table_elements":
					c.Limits.TableElements = p.optInt64(v, kp)
				case "instances":
					c.Limits.Instances = p.optInt64(v, kp)
				default:
					return false
				}
				return true
			})
		case "resources":
			p.mapping(v, kp, func(k string, v *yaml.Node, kp string) bool {
				r := &c.Resources
				dst := map[string]*Opt[int64]{"workdir_max_bytes": &r.WorkdirMaxBytes,
					"max_processes": &r.MaxProcesses, "max_open_files": &r.MaxOpenFiles,
					"max_file_size_bytes": &r.MaxFileSizeBytes, "cpu_seconds": &r.CPUSeconds,
					"memory_bytes": &r.MemoryBytes, "cgroup_memory_bytes": &r.CgroupMemoryBytes,
					"cgroup_pids_max": &r.CgroupPidsMax, "state_max_bytes": &r.StateMaxBytes}[k]
				if dst == nil {
					return false
				}
				*dst = p.optInt64(v, kp)
				return true
			})
		case "state":
			if art == nil {
				p.warn(deref(v), "W-MAN-002", "%s: state is declared per artifact (artifacts[].capabilities.state); at capsule level it opens nothing and is ignored", kp)
				return true
			}
			art.State = &State{}
			p.mapping(v, kp, func(k string, v *yaml.Node, kp string) bool {
				if k != "store" {
					return false
				}
				s := p.str(v, kp)
				if p.err != nil {
					return true
				}
				if !ValidSegment(s) {
					p.fail(deref(v), "E-MAN-022", "%s: %s is not a valid store name ([a-z0-9][a-z0-9-]{0,62})", kp, strconv.Quote(s)).
						WithHint("use a name such as notes, or write state: {} for a store named after the capsule")
					return true
				}
				art.State.Store = Some(s)
				return true
			})
		default:
			return false
		}
		return true
	})
}

func (p *parser) allowOnly(n *yaml.Node, path string, l *AllowList, check func(string, *yaml.Node, string) string) {
	p.mapping(n, path, func(k string, v *yaml.Node, kp string) bool {
		if k != "allow" {
			return false
		}
		l.Allow = p.strList(v, kp, check)
		return true
	})
}

func (p *parser) netEntry(s string, it *yaml.Node, ip string) string {
	e, err := ParseNetEntry(s)
	if err != nil {
		p.fail(it, "E-CAP-001", "%s: %v", ip, err).
			WithHint("write https://host[:port], http://host[:port], host or host:port")
		return s
	}
	return e.String()
}

func (p *parser) binary(s string, it *yaml.Node, ip string) string {
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\ ") || hasControl(s) {
		p.fail(it, "E-MAN-012", "%s: %s is not a bare binary name", ip, strconv.Quote(s)).
			WithHint("name the binary as found on PATH, such as bash, not a path")
	}
	return s
}

func (p *parser) envName(s string, it *yaml.Node, ip string) string {
	if !validEnvName(s) {
		p.fail(it, "E-MAN-013", "%s: %s is not an environment variable name", ip, strconv.Quote(s)).
			WithHint("use letters, digits and '_', not starting with a digit")
	}
	return s
}

func (p *parser) fullName(s string, it *yaml.Node, ip string) string {
	if !IsFullName(s) {
		d := p.fail(it, "E-MAN-005", "%s: %s is not a full name <scope>/<name>", ip, strconv.Quote(s))
		if ValidSegment(s) {
			d.WithHint("write it with its scope, such as local/%s", s)
		}
	}
	return s
}

func (p *parser) installPattern(s string, it *yaml.Node, ip string) string {
	body := strings.TrimSuffix(s, "*")
	if s == "" || strings.ContainsAny(body, "* ") || hasControl(s) {
		p.fail(it, "E-MAN-023", "%s: %s is not an install pattern", ip, strconv.Quote(s)).
			WithHint(`use "*" for everything, "p*" for names beginning with p, or an exact name`)
	}
	return s
}

// crossChecks are the rules that relate keys to one another; they run after
// the walk so that they see the whole file.
func (p *parser) crossChecks(top *yaml.Node) {
	m := p.m
	topPos := posOf(top)
	if !m.Declared("name") {
		p.failAt(topPos, "E-MAN-001", "missing required key 'name'").WithHint("add name: my-capsule")
		return
	}
	if m.Name == "" {
		p.failAt(m.PosOf("name"), "E-MAN-001", "name: the name is empty").WithHint("add name: my-capsule")
		return
	}
	if !m.Declared("version") {
		p.failAt(topPos, "E-MAN-001", "missing required key 'version'").WithHint(`add version: "0.1.0"`)
		return
	}
	p.implementationChecks()
	if p.err != nil {
		return
	}
	p.toolKeys()
	if p.err != nil {
		return
	}
	if m.Inference == nil {
		for _, t := range m.Tools {
			if t.Approval.Or("none") == ApprovalRequired {
				kp := join("tools", t.Key)
				p.failAt(m.PosOf(kp), "E-MAN-033", "%s.approval: required in a script capsule, which has no door through which an operator could answer: there is nobody to ask", kp).
					WithHint("remove it, or make the capsule an agent (an inference: block) whose door takes the operator's reply")
				return
			}
		}
	}
	if m.Declared("capabilities.plan.submit") && !m.IsAgent() && m.RuntimeKind() == RuntimeCapsule {
		pos := m.PosOf("capabilities.plan.submit")
		p.m.Warnings = append(p.m.Warnings, Warning{Code: "W-MAN-005", Pos: pos,
			Message: fmt.Sprintf("%s:%d:%d: capabilities.plan.submit: a script capsule cannot submit plans (it sequences its own invokes); the grant does nothing here", p.file, pos.Line, pos.Column)})
	}
	p.mcpCrossChecks()
	if p.err != nil {
		return
	}
	p.snapshotSubset("capabilities", m.Capabilities)
	for i, a := range m.Artifacts {
		if a.Capabilities != nil {
			p.snapshotSubset(fmt.Sprintf("artifacts[%d].capabilities", i), *a.Capabilities)
		}
	}
	if in := m.Inference; in != nil && p.err == nil {
		if in.DriverArtifact != "" {
			a, ok := m.ArtifactByName(in.DriverArtifact)
			if !ok || a.RuntimeKind() != RuntimeDriver {
				p.failAt(m.PosOf("inference.driver.artifact"), "E-MAN-016",
					"inference.driver.artifact: %s is not an artifact declared with runtime: driver", strconv.Quote(in.DriverArtifact)).
					WithHint("declare it under artifacts: with runtime: driver")
				return
			}
			in.DriverArtifact = a.Name
		}
		if m.Declared("inference.system_prompt") && m.Declared("inference.system_prompt_file") {
			p.failAt(m.PosOf("inference.system_prompt_file"), "E-MAN-017",
				"inference.system_prompt_file: system_prompt and system_prompt_file are exclusive").
				WithHint("keep one of the two")
		}
	}
}

func (p *parser) snapshotSubset(path string, c Capabilities) {
	p.spawnBareNames(path, c)
	if p.err != nil {
		return
	}
	for j, s := range c.Spawn.WorkdirSnapshot {
		found := false
		for _, a := range c.Spawn.Allow {
			if a == s {
				found = true
			}
		}
		if !found {
			ip := fmt.Sprintf("%s.spawn.workdir_snapshot[%d]", path, j)
			p.failAt(p.m.PosOf(ip), "E-MAN-011", "%s: %s is not in %s.spawn.allow", ip, s, path).
				WithHint("a workdir snapshot can only go to a capsule this one may spawn; add it to spawn.allow")
			return
		}
	}
}

// spawnBareNames refuses two spawn.allow entries with one bare name
// (docs/manifest.md): delegate-task names its child by the bare name, so one of
// the two could never be delegated to.
func (p *parser) spawnBareNames(path string, c Capabilities) {
	first := map[string]int{}
	for j, a := range c.Spawn.Allow {
		b := Bare(a)
		i, dup := first[b]
		if !dup {
			first[b] = j
			continue
		}
		if c.Spawn.Allow[i] == a {
			continue // the same full name twice names one capsule
		}
		ip := fmt.Sprintf("%s.spawn.allow[%d]", path, j)
		at := p.m.PosOf(fmt.Sprintf("%s.spawn.allow[%d]", path, i))
		p.failAt(p.m.PosOf(ip), "E-MAN-027", "%s: %s shares the bare name %q with %s (line %d, column %d); delegate-task names a capsule by its bare name, so one of them could never be delegated to",
			ip, a, b, c.Spawn.Allow[i], at.Line, at.Column).
			WithHint("keep one capsule per bare name in spawn.allow")
		return
	}
}

// doorWarnings: the door's keys on a capsule that serves no door (a script
// capsule) have no effect (W-MAN-004).
func (p *parser) doorWarnings() {
	m := p.m
	if m.RuntimeKind() != RuntimeCapsule || m.IsAgent() {
		return
	}
	for _, k := range []string{"network.authentication", "exports.peer_tasks"} {
		if m.Declared(k) {
			pos := m.PosOf(k)
			m.Warnings = append(m.Warnings, Warning{Code: "W-MAN-004", Pos: pos,
				Message: fmt.Sprintf("%s:%d:%d: %s has no effect on a script capsule: it serves no door", p.file, pos.Line, pos.Column, k)})
		}
	}
}
