package manifest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEffectiveGrantsJSON(t *testing.T) {
	m := mustParse(t, `name: lead
version: "1"
artifacts:
  - name: acme/store-tool
    version: "2"
    capabilities:
      state: {store: notes}
  - name: acme/plain
    version: "3"
    runtime: skill
capabilities:
  shell:
    allow: [git]
`)
	g, ws := m.EffectiveGrants()
	if len(ws) != 0 {
		t.Errorf("warnings %v", ws)
	}
	set := `{"network_allow":[],"unix_sockets":false,"peer_fetch_allow":[],"shell_allow":["git"],"spawn_allow":[],` +
		`"workdir_snapshot":[],"env_allow":[],"filesystem_scope":null,"workdir_exec":false,"install_skill":[],"install_tool":[],` +
		`"containment":"","limits":{"deadline_seconds":600,"hook_deadline_seconds":30,"memory_bytes":536870912,` +
		`"table_elements":100000,"instances":1000,"workdir_max_bytes":10737418240}}`
	want := `{"capsule":` + set + `,"artifacts":[` +
		`{"name":"acme/store-tool","version":"2","runtime":"tool","grants":` + set + `,"state_store":"notes"},` +
		`{"name":"acme/plain","version":"3","runtime":"skill","grants":` + set + `}],"state_stores":["notes"],"plan":{"submit":false},"peer_files":null}`
	if got := mustJSON(t, g); got != want {
		t.Errorf("JSON:\n got %s\nwant %s", got, want)
	}
	// An empty manifest still prints lists as [].
	m = mustParse(t, head)
	g, _ = m.EffectiveGrants()
	if js := mustJSON(t, g); !strings.Contains(js, `"artifacts":[]`) || !strings.Contains(js, `"state_stores":[]`) ||
		!strings.Contains(js, `"filesystem_scope":null`) || strings.Count(js, "null") != 2 || !strings.Contains(js, `"peer_files":null`) {
		t.Errorf("empty manifest JSON %s", js)
	}
	// The grant set is a copy: changing it leaves the manifest alone.
	g.Capsule.ShellAllow = append(g.Capsule.ShellAllow, "rm")
	if len(m.Capabilities.Shell.Allow) != 0 {
		t.Error("GrantSet shares the manifest's slices")
	}
}

func TestNarrowing(t *testing.T) {
	capsule := `name: lead
version: "1"
capabilities:
  network:
    allow: [api.example.com, "https://cdn.example.com", "mirror.example.com:8080"]
    unix_sockets: true
  peer_fetch:
    allow: ["http://127.0.0.1:9000"]
  shell:
    allow: [bash, git]
  spawn:
    allow: [local/a, local/b]
    workdir_snapshot: [local/a]
  env:
    allow: [HOME]
  filesystem:
    scope: src
  install:
    skill: ["acme-*"]
    tool: [murmur/fmt]
  containment: scoped
  limits:
    deadline_seconds: 100
    memory_bytes: 1000
artifacts:
  - name: acme/t
    version: "1"
    capabilities:
`
	cases := []struct {
		name    string
		art     string // lines under the artifact's capabilities:, indented 6
		check   func(g GrantSet) bool
		dropped []string
	}{
		{"inherits when undeclared", "      state: {}\n", func(g GrantSet) bool {
			return reflect.DeepEqual(g.ShellAllow, []string{"bash", "git"}) && *g.FilesystemScope == "src" && g.UnixSockets
		}, nil},
		{"shell narrowed", "      shell: {allow: [git, curl]}\n", func(g GrantSet) bool {
			return reflect.DeepEqual(g.ShellAllow, []string{"git"}) && len(g.NetworkAllow) == 0 && !g.UnixSockets && g.FilesystemScope != nil && *g.FilesystemScope == "src"
		}, []string{"capabilities.shell.allow: curl"}},
		{"network coverage", "      network:\n        allow: [\"https://api.example.com\", \"http://api.example.com:81\", api.example.com, \"https://cdn.example.com:443\", cdn.example.com, \"http://cdn.example.com\", \"http://mirror.example.com:8080\", mirror.example.com, sub.api.example.com]\n",
			func(g GrantSet) bool {
				return reflect.DeepEqual(g.NetworkAllow, []string{"https://api.example.com", "http://api.example.com:81", "api.example.com", "https://cdn.example.com:443", "http://mirror.example.com:8080"})
			}, []string{"capabilities.network.allow: cdn.example.com", "capabilities.network.allow: http://cdn.example.com",
				"capabilities.network.allow: mirror.example.com", "capabilities.network.allow: sub.api.example.com"}},
		{"unix sockets kept", "      network: {unix_sockets: true}\n", func(g GrantSet) bool { return g.UnixSockets }, nil},
		{"peer fetch", "      peer_fetch: {allow: [\"http://127.0.0.1:9000\", \"http://127.0.0.1:9001\"]}\n", func(g GrantSet) bool {
			return reflect.DeepEqual(g.PeerFetchAllow, []string{"http://127.0.0.1:9000"})
		}, []string{"capabilities.peer_fetch.allow: http://127.0.0.1:9001"}},
		{"spawn and snapshot", "      spawn: {allow: [local/a, local/c], workdir_snapshot: [local/a]}\n", func(g GrantSet) bool {
			return reflect.DeepEqual(g.SpawnAllow, []string{"local/a"}) && reflect.DeepEqual(g.WorkdirSnapshot, []string{"local/a"})
		}, []string{"capabilities.spawn.allow: local/c"}},
		{"env", "      env: {allow: [HOME, AWS_SECRET_ACCESS_KEY]}\n", func(g GrantSet) bool {
			return reflect.DeepEqual(g.EnvAllow, []string{"HOME"})
		}, []string{"capabilities.env.allow: AWS_SECRET_ACCESS_KEY"}},
		{"scope beneath", "      filesystem: {scope: src/lib}\n", func(g GrantSet) bool { return *g.FilesystemScope == "src/lib" }, nil},
		{"scope outside", "      filesystem: {scope: srcx}\n", func(g GrantSet) bool { return *g.FilesystemScope == "src" },
			[]string{"capabilities.filesystem.scope: srcx"}},
		{"workdir exec not granted", "      filesystem: {workdir_exec: true}\n", func(g GrantSet) bool { return !g.WorkdirExec },
			[]string{"capabilities.filesystem.workdir_exec: true"}},
		{"install", "      install: {skill: [acme-x, acme-*, other], tool: [murmur/fmt, \"murmur/*\"]}\n", func(g GrantSet) bool {
			return reflect.DeepEqual(g.InstallSkill, []string{"acme-x", "acme-*"}) && reflect.DeepEqual(g.InstallTool, []string{"murmur/fmt"})
		}, []string{"capabilities.install.skill: other", "capabilities.install.tool: murmur/*"}},
		{"containment only rises", "      containment: advisory\n", func(g GrantSet) bool { return g.Containment == "scoped" }, nil},
		{"containment raised", "      containment: sealed\n", func(g GrantSet) bool { return g.Containment == "sealed" }, nil},
		{"bounds-only block inherits access", "      limits: {instances: 5}\n      containment: sealed\n      state: {}\n", func(g GrantSet) bool {
			return reflect.DeepEqual(g.ShellAllow, []string{"bash", "git"}) && len(g.NetworkAllow) == 3 && g.UnixSockets &&
				*g.FilesystemScope == "src" && g.Limits.Instances == 5 && g.Containment == "sealed" && g.Limits.DeadlineSeconds == 100
		}, nil},
		{"limits lower kept, higher dropped", "      limits: {deadline_seconds: 50, memory_bytes: 5000, instances: 10}\n", func(g GrantSet) bool {
			return g.Limits.DeadlineSeconds == 50 && g.Limits.HookDeadlineSeconds == 50 && g.Limits.MemoryBytes == 1000 && g.Limits.Instances == 10 && g.Limits.TableElements == 100000
		}, []string{"capabilities.limits.memory_bytes: 5000"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mustParse(t, capsule+c.art)
			g, ws := m.EffectiveGrants()
			ag := g.Artifacts[0]
			if !c.check(ag.Grants) {
				t.Errorf("grants %s", mustJSON(t, ag.Grants))
			}
			if !reflect.DeepEqual(ag.Dropped, c.dropped) {
				t.Errorf("dropped %q, want %q", ag.Dropped, c.dropped)
			}
			if len(ws) != len(c.dropped) {
				t.Fatalf("%d warnings for %d drops: %v", len(ws), len(c.dropped), ws)
			}
			for i, w := range ws {
				key, entry, _ := strings.Cut(c.dropped[i], ": ")
				if w.Code != "W-SEC-007" || !strings.Contains(w.Message, "artifact acme/t: "+key+": '"+entry+"'") ||
					!strings.HasPrefix(w.Message, "murmur.yaml:") || w.Pos.Line < 26 {
					t.Errorf("warning %+v", w)
				}
			}
			// Parse records the same warnings on the manifest.
			n := 0
			for _, w := range m.Warnings {
				if w.Code == "W-SEC-007" {
					n++
				}
			}
			if n != len(c.dropped) {
				t.Errorf("manifest holds %d W-SEC-007 warnings, want %d", n, len(c.dropped))
			}
			// The capsule's own grant is never changed by an artifact.
			if !reflect.DeepEqual(g.Capsule.ShellAllow, []string{"bash", "git"}) || *g.Capsule.FilesystemScope != "src" {
				t.Errorf("capsule grant changed: %s", mustJSON(t, g.Capsule))
			}
		})
	}
}

func TestNarrowingWarningPosition(t *testing.T) {
	m := mustParse(t, head+"capabilities:\n  shell: {allow: [bash]}\nartifacts:\n  - name: a/b\n    version: \"1\"\n    capabilities:\n      shell:\n        allow:\n          - bash\n          - rm\n")
	_, ws := m.EffectiveGrants()
	if len(ws) != 1 || ws[0].Pos != (Pos{12, 13}) ||
		ws[0].Message != "murmur.yaml:12:13: artifact a/b: capabilities.shell.allow: 'rm' is not granted to the capsule; dropped from that artifact" {
		t.Fatalf("warnings %+v", ws)
	}
}

func TestUndeclaredCapsuleScope(t *testing.T) {
	// A capsule that declares no scope holds the whole folder: the artifact
	// keeps its own, narrower scope, and one that declares none gets null.
	m := mustParse(t, head+"artifacts:\n  - name: a/b\n    version: \"1\"\n    capabilities: {filesystem: {scope: out}}\n  - name: a/c\n    version: \"1\"\n    capabilities: {shell: {allow: []}}\n")
	g, ws := m.EffectiveGrants()
	if len(ws) != 0 || g.Capsule.FilesystemScope != nil || *g.Artifacts[0].Grants.FilesystemScope != "out" || g.Artifacts[1].Grants.FilesystemScope != nil {
		t.Fatalf("%s %v", mustJSON(t, g), ws)
	}
}

func TestStateStoresAndHooks(t *testing.T) {
	m := mustParse(t, `name: acme/lead
version: "1"
capabilities:
  limits: {deadline_seconds: 200}
artifacts:
  - {name: a/one, version: "1", capabilities: {state: {}}}
  - {name: a/two, version: "1", capabilities: {state: {store: zeta}}}
  - {name: a/three, version: "1", capabilities: {state: {store: alpha}}}
  - {name: a/four, version: "1", capabilities: {state: {store: zeta}}}
  - {name: a/hook, version: "1", runtime: hook, deadline_seconds: 5}
  - {name: a/hook2, version: "1", runtime: hook}
`)
	g, _ := m.EffectiveGrants()
	if !reflect.DeepEqual(g.StateStores, []string{"alpha", "lead", "zeta"}) {
		t.Errorf("state stores %v", g.StateStores)
	}
	if s, ok := m.Artifacts[0].StateStoreName("lead"); s != "lead" || !ok {
		t.Errorf("state: {} opens %q %v", s, ok)
	}
	if _, ok := m.Artifacts[4].StateStoreName("lead"); ok {
		t.Error("an artifact without state opens a store")
	}
	if l := g.Artifacts[4].Grants.Limits; l.HookDeadlineSeconds != 5 || l.DeadlineSeconds != 200 {
		t.Errorf("hook with its own deadline: %+v", l)
	}
	if l := g.Artifacts[5].Grants.Limits; l.HookDeadlineSeconds != 200 {
		t.Errorf("hook under a declared capsule deadline: %+v", l)
	}
	if g.Artifacts[0].StateStore != "lead" || g.Artifacts[4].StateStore != "" {
		t.Errorf("per-artifact stores %q %q", g.Artifacts[0].StateStore, g.Artifacts[4].StateStore)
	}
}

func TestNetCovers(t *testing.T) {
	cases := []struct {
		parent, child string
		want          bool
	}{
		{"example.com", "https://example.com", true},
		{"example.com", "http://example.com:8080", true},
		{"example.com", "example.com:22", true},
		{"example.com", "example.com", true},
		{"Example.COM", "example.com", true},
		{"example.com", "api.example.com", false},
		{"example.com", "example.org", false},
		{"example.com:443", "https://example.com", true},
		{"example.com:443", "http://example.com:443", true},
		{"example.com:443", "example.com:443", true},
		{"example.com:443", "example.com", false},
		{"example.com:443", "http://example.com", false},
		{"example.com:80", "http://example.com", true},
		{"https://example.com", "https://example.com", true},
		{"https://example.com", "https://example.com:443", true},
		{"https://example.com:443", "https://example.com", true},
		{"https://example.com", "example.com", false},
		{"https://example.com", "example.com:443", false},
		{"https://example.com", "http://example.com:443", false},
		{"https://example.com", "https://example.com:8443", false},
		{"http://example.com", "http://example.com:80", true},
		{"[::1]:8080", "http://[::1]:8080", true},
		{"127.0.0.1", "http://127.0.0.1:9000", true},
	}
	for _, c := range cases {
		p, err1 := ParseNetEntry(c.parent)
		ch, err2 := ParseNetEntry(c.child)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s / %s: %v %v", c.parent, c.child, err1, err2)
		}
		if got := NetCovers(p, ch); got != c.want {
			t.Errorf("NetCovers(%s, %s) = %v", c.parent, c.child, got)
		}
	}
	if NetListCovers([]string{"a.com", "bad/path"}, "b.com") || !NetListCovers([]string{"bad/path", "b.com"}, "https://b.com") || NetListCovers([]string{"b.com"}, "b.com/x") {
		t.Error("NetListCovers")
	}
}

func TestParseNetEntry(t *testing.T) {
	good := map[string]NetEntry{
		"example.com":               {Host: "example.com"},
		"example.com:8080":          {Host: "example.com", Port: 8080},
		"https://Example.com":       {Scheme: "https", Host: "example.com"},
		"HTTP://example.com:1":      {Scheme: "http", Host: "example.com", Port: 1},
		"https://a.b.c:65535":       {Scheme: "https", Host: "a.b.c", Port: 65535},
		"10.0.0.1":                  {Host: "10.0.0.1"},
		"[::1]":                     {Host: "::1"},
		"https://[2001:db8::1]:443": {Scheme: "https", Host: "2001:db8::1", Port: 443},
		"localhost":                 {Host: "localhost"},
		"Example.COM.:8080":         {Host: "example.com", Port: 8080},
	}
	for s, want := range good {
		got, err := ParseNetEntry(s)
		if err != nil || got != want {
			t.Errorf("ParseNetEntry(%q) = %+v, %v; want %+v", s, got, err, want)
		}
		again, err := ParseNetEntry(got.String())
		if err != nil || again != got {
			t.Errorf("round trip of %q through %q: %+v %v", s, got.String(), again, err)
		}
	}
	bad := []string{"", "https://", "https://x.com/", "x.com/a", "x.com?a", "x.com#a", "u@x.com", "ftp://x.com",
		"x.com:", "x.com:0", "x.com:65536", "x.com:-1", "x.com:+1", "x.com:http", "*.x.com", "x..com", ".x.com", ".", "x.com..",
		"[::1", "[::1]x", "[zz::1]", "[::1]:", "x com", "https://x.com:8080/", "a:b:c", "https://https://x"}
	for _, s := range bad {
		if e, err := ParseNetEntry(s); err == nil {
			t.Errorf("ParseNetEntry(%q) accepted: %+v", s, e)
		}
	}
}

func TestInstallCovers(t *testing.T) {
	cases := []struct {
		parent, child string
		want          bool
	}{
		{"*", "anything", true},
		{"*", "p*", true},
		{"*", "*", true},
		{"acme-*", "acme-x", true},
		{"acme-*", "acme-*", true},
		{"acme-*", "acme-x*", true},
		{"acme-*", "acme", false},
		{"acme-*", "*", false},
		{"acme-*", "other", false},
		{"fmt", "fmt", true},
		{"fmt", "fmt2", false},
		{"fmt", "fmt*", false},
		{"fmt", "*", false},
	}
	for _, c := range cases {
		if got := InstallCovers(c.parent, c.child); got != c.want {
			t.Errorf("InstallCovers(%q, %q) = %v", c.parent, c.child, got)
		}
	}
}

func TestScopeCovers(t *testing.T) {
	s := func(v string) *string { return &v }
	cases := []struct {
		parent, child *string
		want          bool
	}{
		{nil, nil, true},
		{nil, s("a"), true},
		{s("src"), nil, false},
		{s("src"), s("src"), true},
		{s("src"), s("src/a"), true},
		{s("src"), s("./src/a/"), true},
		{s("src"), s("srcx"), false},
		{s("src/a"), s("src"), false},
		{s("."), s("anything"), true},
		{s("src"), s("src/../lib"), false},
	}
	for _, c := range cases {
		if got := ScopeCovers(c.parent, c.child); got != c.want {
			t.Errorf("ScopeCovers(%v, %v) = %v", deref2(c.parent), deref2(c.child), got)
		}
	}
}

func deref2(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestNames(t *testing.T) {
	norm := map[string]string{"worker": "local/worker", "acme/worker": "acme/worker", "0": "local/0", "a-b": "local/a-b"}
	for in, want := range norm {
		if got, err := NormalizeName(in); err != nil || got != want {
			t.Errorf("NormalizeName(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "-a", "A", "a_b", "a/", "/a", "a/b/c", "a b", strings.Repeat("x", 64), "a/" + strings.Repeat("x", 64), "é"} {
		if got, err := NormalizeName(in); err == nil {
			t.Errorf("NormalizeName(%q) accepted: %q", in, got)
		}
	}
	if !IsFullName("a/b") || IsFullName("b") || IsFullName("a/b/c") || !IsFullName(strings.Repeat("x", 63)+"/y") {
		t.Error("IsFullName")
	}
	for _, v := range []string{"latest", "stable", "edge"} {
		if !ReservedVersion(v) {
			t.Errorf("%s not reserved", v)
		}
	}
	if ReservedVersion("Latest") || ReservedVersion("0.1.0") {
		t.Error("ReservedVersion too wide")
	}
	refs := map[string]string{"${A}": "A", "${ANTHROPIC_API_KEY}": "ANTHROPIC_API_KEY", "${_x1}": "_x1"}
	for in, want := range refs {
		if got, ok := EnvRef(in); !ok || got != want {
			t.Errorf("EnvRef(%q) = %q %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "$A", "${}", "${1A}", "${A-B}", "x${A}", "${A}x", "${A", "{A}"} {
		if got, ok := EnvRef(in); ok {
			t.Errorf("EnvRef(%q) accepted: %q", in, got)
		}
	}
}

func TestParseMaxAge(t *testing.T) {
	for in, want := range map[string]float64{"7d": 168, "36h": 36, "90m": 1.5, "1d": 24} {
		if d, err := ParseMaxAge(in); err != nil || d.Hours() != want {
			t.Errorf("ParseMaxAge(%q) = %v %v", in, d, err)
		}
	}
	for _, in := range []string{"", "d", "0d", "-1d", "1.5d", "7", "0s", "-3h", "99999999999999999d"} {
		if _, err := ParseMaxAge(in); err == nil {
			t.Errorf("ParseMaxAge(%q) accepted", in)
		}
	}
}
