package envelope

import (
	"testing"

	"github.com/murmur-go/murmur/internal/manifest"
)

func mcpArt(name, command string) manifest.Artifact {
	return manifest.Artifact{Name: "local/" + name, Version: "1.0.0", Runtime: some(manifest.RuntimeMCP),
		MCP: &manifest.MCP{Command: command, Tools: []string{"t"}}}
}

// A stdio MCP server counts as a shell.allow entry on both sides; an HTTP
// server adds nothing to the axis; no new axis exists.
func TestCheckMCPServers(t *testing.T) {
	type C = manifest.Capabilities
	shell := func(a ...string) C { return C{Shell: manifest.AllowList{Allow: a}} }
	http := manifest.Artifact{Name: "acme/docs", Version: "1", Runtime: some(manifest.RuntimeMCP),
		MCP: &manifest.MCP{URL: "https://docs.example.com/mcp", Tools: []string{"s"}}}
	for _, tc := range []struct {
		name          string
		parent, child *manifest.Manifest
		entry         string
	}{
		{"child server, parent nothing", mk("p", C{}), mk("c", C{}, mcpArt("e", "mcp-server-everything")), "mcp-server-everything"},
		{"parent allows the binary", mk("p", shell("mcp-server-everything")), mk("c", C{}, mcpArt("e", "mcp-server-everything")), ""},
		{"parent runs it as a server", mk("p", C{}, mcpArt("e", "mcp-server-everything")), mk("c", C{}, mcpArt("x", "mcp-server-everything")), ""},
		{"parent's server covers a child's shell tool", mk("p", C{}, mcpArt("e", "node")), mk("c", shell("node")), ""},
		{"another binary", mk("p", C{}, mcpArt("e", "a")), mk("c", C{}, mcpArt("e", "b")), "b"},
		{"http server adds nothing", mk("p", C{}), mk("c", C{}, http), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.parent, tc.child)
			switch {
			case tc.entry == "" && r != nil:
				t.Fatalf("refused: %v", r)
			case tc.entry != "" && (r == nil || r.Key != KeyShell || r.Entry != tc.entry):
				t.Fatalf("got %v, want %s on %s", r, tc.entry, KeyShell)
			}
		})
	}
	if len(Axes) != 12 {
		t.Errorf("%d axes: MCP adds none", len(Axes))
	}
	r := Check(mk("p", C{}), mk("c", C{}, mcpArt("e", "mcp-server-everything")))
	if want := "capabilities.shell.allow: the child declares 'mcp-server-everything', which its parent does not hold — a spawned capsule can never hold more capability than the capsule that spawned it"; r.Error() != want {
		t.Errorf("sentence %q", r.Error())
	}
}
