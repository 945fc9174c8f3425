package manifest

import (
	"strings"
	"testing"
)

const mcpHead = "name: a\nversion: \"1\"\ninference:\n  model: m\n"

func mcpEntry(body string) string {
	return mcpHead + "artifacts:\n  - name: local/srv\n    version: \"1\"\n    runtime: mcp\n" + body
}

// Every refusal of an mcp entry, with its code.
func TestMCPEntryRefusals(t *testing.T) {
	env := map[string]string{"TOK": "s3cret"}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	for _, tc := range []struct {
		name, yaml, code, msg string
	}{
		{"no block", mcpEntry(""), "E-MAN-040", "needs an mcp: block"},
		{"both", mcpEntry("    mcp: {command: x, url: https://h.example/mcp, tools: [a]}\n"), "E-MAN-040", "exactly one of command"},
		{"neither", mcpEntry("    mcp: {tools: [a]}\n"), "E-MAN-040", "exactly one of command"},
		{"args with url", mcpEntry("    mcp: {url: https://h.example/mcp, args: [x], tools: [a]}\n"), "E-MAN-040", "belong to a stdio server"},
		{"headers with command", mcpEntry("    mcp: {command: x, headers: {X-A: b}, tools: [a]}\n"), "E-MAN-040", "belong to an HTTP server"},
		{"gateway", mcpEntry("    gateway: {endpoint: https://h.example}\n    mcp: {command: x, tools: [a]}\n"), "E-MAN-040", "gateway has no meaning"},
		{"config", mcpEntry("    config: {a: 1}\n    mcp: {command: x, tools: [a]}\n"), "E-MAN-040", "config has no meaning"},
		{"no tools", mcpEntry("    mcp: {command: x}\n"), "E-MAN-040", "allow-list of tools is required"},
		{"empty tools", mcpEntry("    mcp: {command: x, tools: []}\n"), "E-MAN-040", "allow-list of tools is required"},
		{"block without runtime", mcpHead + "artifacts:\n  - name: local/srv\n    version: \"1\"\n    mcp: {command: x, tools: [a]}\n", "E-MAN-040", "needs runtime: mcp"},
		{"bad tool name", mcpEntry("    mcp: {command: x, tools: [\"a b\"]}\n"), "E-MAN-041", "is not a tool name"},
		{"tool twice", mcpEntry("    mcp: {command: x, tools: [a, a]}\n"), "E-MAN-041", "listed twice"},
		{"model name too long", mcpEntry("    mcp: {command: x, tools: [" + strings.Repeat("t", 60) + "]}\n"), "E-MAN-041", "passes 64 characters"},
		{"placeholder in args", mcpEntry("    mcp: {command: x, args: [\"${TOK}\"], tools: [a]}\n"), "E-MAN-042", "only placeholder"},
		{"runtime env", mcpEntry("    mcp: {command: x, env: {HOME: /tmp}, tools: [a]}\n"), "E-MAN-042", "the runtime sets"},
		{"ld env", mcpEntry("    mcp: {command: x, env: {LD_PRELOAD: /x.so}, tools: [a]}\n"), "E-MAN-042", "LD_"},
		{"proxy env", mcpEntry("    mcp: {command: x, env: {https_proxy: x}, tools: [a]}\n"), "E-MAN-042", "the runtime sets"},
		{"env also allowed", mcpEntry("    mcp: {command: x, env: {TOK: x}, tools: [a]}\n    capabilities: {env: {allow: [TOK]}}\n"), "E-MAN-042", "env.allow"},
		{"owned header", mcpEntry("    mcp: {url: https://h.example/mcp, headers: {Mcp-Session-Id: x}, tools: [a]}\n"), "E-MAN-043", "not a header"},
		{"two refs", mcpEntry("    mcp: {url: https://h.example/mcp, headers: {X-A: \"${TOK}${TOK}\"}, tools: [a]}\n"), "E-MAN-043", "more than one"},
		{"unset ref", mcpEntry("    mcp: {url: https://h.example/mcp, headers: {Authorization: \"Bearer ${NOPE}\"}, tools: [a]}\n"), "E-MAN-003", "NOPE"},
		{"malformed ref", mcpEntry("    mcp: {url: https://h.example/mcp, headers: {Authorization: \"Bearer ${1x}\"}, tools: [a]}\n"), "E-MAN-021", "reference"},
		{"url userinfo", mcpEntry("    mcp: {url: \"https://u:p@h.example/mcp\", tools: [a]}\n"), "E-MAN-024", "user information"},
		{"command path", mcpEntry("    mcp: {command: /bin/x, tools: [a]}\n"), "E-MAN-012", "bare binary name"},
		{"start seconds", mcpEntry("    mcp: {command: x, tools: [a], start_seconds: 0}\n"), "E-MAN-008", "whole number"},
		{"install dir relative", mcpEntry("    mcp: {command: x, tools: [a], install_dirs: [opt]}\n"), "E-MAN-045", "not an absolute folder"},
		{"script capsule", "name: a\nversion: \"1\"\nartifacts:\n  - name: local/srv\n    version: \"1\"\n    runtime: mcp\n    mcp: {command: x, tools: [a]}\n", "E-MAN-044", "agent capsule"},
		{"one bare name", mcpEntry("    mcp: {command: x, tools: [a]}\n  - name: acme/srv\n    version: \"1\"\n    runtime: mcp\n    mcp: {command: y, tools: [b]}\n"), "E-MAN-040", "share the bare name"},
		{"model name clash", mcpHead + "capabilities: {shell: {allow: [mcp__srv__a]}}\nartifacts:\n  - name: local/srv\n    version: \"1\"\n    runtime: mcp\n    mcp: {command: x, tools: [a]}\n", "E-MAN-026", "also the shell tool"},
		{"top-level mcp", "name: a\nversion: \"1\"\nruntime: mcp\n", "E-MAN-007", "not one of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml), "murmur.yaml", Options{LookupEnv: lookup})
			if err == nil || !strings.Contains(err.Error(), tc.code) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %s ... %s", err, tc.code, tc.msg)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("a secret in the message: %v", err)
			}
		})
	}
}

// A well-formed entry: its values, its model names, the secret resolved in
// memory only, and its grant — network and env from its own block only,
// the filesystem the capsule's.
func TestMCPEntryParsesAndNarrows(t *testing.T) {
	y := mcpHead + `capabilities:
  network: {allow: [api.example.com, "https://docs.example.com"]}
  env: {allow: [TOK, OTHER]}
  filesystem: {scope: data}
artifacts:
  - name: local/everything
    version: "2.0.0"
    runtime: mcp
    mcp:
      command: mcp-server-everything
      args: [stdio, "${MURMUR_WORKDIR}"]
      env: {NODE_USE_ENV_PROXY: "1"}
      tools: [echo, get.sum]
    capabilities:
      env: {allow: [TOK]}
  - name: acme/docs
    version: "1.4.0"
    runtime: mcp
    mcp:
      url: https://docs.example.com/mcp
      headers: {Authorization: "Bearer ${TOK}"}
      tools: [search]
`
	m, err := Parse([]byte(y), "murmur.yaml", Options{LookupEnv: func(n string) (string, bool) { return "s3cret", n == "TOK" }})
	if err != nil {
		t.Fatal(err)
	}
	es := m.MCPEntries()
	if len(es) != 2 || es[0].MCP.Transport() != "stdio" || es[1].MCP.Transport() != "http" || es[0].MCP.Start() != DefaultMCPStartSeconds {
		t.Fatalf("entries %+v", es)
	}
	if h := es[1].MCP.Headers[0]; h.Value != "Bearer s3cret" || h.Ref != "Bearer ${TOK}" || h.Literal {
		t.Errorf("header %+v", h)
	}
	if got := MCPModelName("everything", "get.sum"); got != "mcp__everything__get_sum" {
		t.Errorf("model name %s", got)
	}
	if cmds := m.MCPCommands(); len(cmds) != 1 || cmds[0] != "mcp-server-everything" {
		t.Errorf("commands %v", cmds)
	}
	g, _ := m.EffectiveGrants()
	stdio, http := g.Artifacts[0], g.Artifacts[1]
	if len(stdio.Grants.NetworkAllow) != 0 || len(stdio.Grants.EnvAllow) != 1 || stdio.Grants.FilesystemScope == nil || *stdio.Grants.FilesystemScope != "data" {
		t.Errorf("stdio grant %+v", stdio.Grants)
	}
	if len(http.Grants.NetworkAllow) != 0 || len(http.Grants.EnvAllow) != 0 || http.Runtime != RuntimeMCP {
		t.Errorf("http grant %+v", http.Grants)
	}
	if !SecretHeader("X-Api-Key") || !SecretHeader("cookie") || SecretHeader("X-Trace") {
		t.Error("SecretHeader")
	}
}
