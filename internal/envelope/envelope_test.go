package envelope

import (
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/manifest"
)

func some[T any](v T) manifest.Opt[T] { return manifest.Some(v) }

// mk builds a capsule manifest named local/<name> with the given capabilities.
func mk(name string, caps manifest.Capabilities, arts ...manifest.Artifact) *manifest.Manifest {
	return &manifest.Manifest{Name: "local/" + name, Version: "0.1.0", Capabilities: caps, Artifacts: arts}
}

func stateArt(name string, store *string) manifest.Artifact {
	st := &manifest.State{}
	if store != nil {
		st.Store = some(*store)
	}
	return manifest.Artifact{Name: "local/" + name, Version: "1.0.0", State: st}
}

func strp(s string) *string { return &s }

func TestCheckAxes(t *testing.T) {
	type C = manifest.Capabilities
	net := func(a ...string) C { return C{Network: manifest.Network{Allow: a}} }
	peer := func(a ...string) C { return C{PeerFetch: manifest.AllowList{Allow: a}} }
	cases := []struct {
		name          string
		parent, child *manifest.Manifest
		key, entry    string // "" = covered
	}{
		// Network allow.
		{"net empty child", mk("p", net()), mk("c", net()), "", ""},
		{"net bare covers https", mk("p", net("example.com")), mk("c", net("https://example.com")), "", ""},
		{"net bare covers http port", mk("p", net("example.com")), mk("c", net("http://example.com:8080")), "", ""},
		{"net bare covers bare port", mk("p", net("example.com")), mk("c", net("example.com:9")), "", ""},
		{"net host case", mk("p", net("Example.COM")), mk("c", net("example.com")), "", ""},
		{"net no subdomain", mk("p", net("example.com")), mk("c", net("api.example.com")), KeyNetworkAllow, "api.example.com"},
		{"net https covers only https", mk("p", net("https://example.com")), mk("c", net("http://example.com")), KeyNetworkAllow, "http://example.com"},
		{"net https does not cover bare", mk("p", net("https://example.com")), mk("c", net("example.com")), KeyNetworkAllow, "example.com"},
		{"net https default port", mk("p", net("https://example.com")), mk("c", net("https://example.com:443")), "", ""},
		{"net https other port", mk("p", net("https://example.com")), mk("c", net("https://example.com:8443")), KeyNetworkAllow, "https://example.com:8443"},
		{"net bare port covers scheme default", mk("p", net("example.com:443")), mk("c", net("https://example.com")), "", ""},
		{"net bare port not other port", mk("p", net("example.com:443")), mk("c", net("http://example.com")), KeyNetworkAllow, "http://example.com"},
		{"net bare port not bare host", mk("p", net("example.com:443")), mk("c", net("example.com")), KeyNetworkAllow, "example.com"},
		{"net first failing entry", mk("p", net("a.com")), mk("c", net("a.com", "b.com", "c.com")), KeyNetworkAllow, "b.com"},
		{"net parent empty", mk("p", net()), mk("c", net("a.com")), KeyNetworkAllow, "a.com"},
		{"net ipv6", mk("p", net("[::1]")), mk("c", net("http://[::1]:8080")), "", ""},
		{"net unparseable needs same text", mk("p", net("https://a.com/x")), mk("c", net("https://a.com/x")), "", ""},
		{"net unparseable refused", mk("p", net("a.com")), mk("c", net("https://a.com/x")), KeyNetworkAllow, "https://a.com/x"},
		// Unix sockets.
		{"unix child true parent true", mk("p", C{Network: manifest.Network{UnixSockets: some(true)}}), mk("c", C{Network: manifest.Network{UnixSockets: some(true)}}), "", ""},
		{"unix child true parent unset", mk("p", C{}), mk("c", C{Network: manifest.Network{UnixSockets: some(true)}}), KeyUnixSockets, "true"},
		{"unix child true parent false", mk("p", C{Network: manifest.Network{UnixSockets: some(false)}}), mk("c", C{Network: manifest.Network{UnixSockets: some(true)}}), KeyUnixSockets, "true"},
		{"unix child false", mk("p", C{}), mk("c", C{Network: manifest.Network{UnixSockets: some(false)}}), "", ""},
		// Peer fetch: same rule, separate list.
		{"peer covered", mk("p", peer("example.com")), mk("c", peer("https://example.com")), "", ""},
		{"peer not covered by network", mk("p", net("example.com")), mk("c", peer("example.com")), KeyPeerFetch, "example.com"},
		// Shell.
		{"shell subset", mk("p", C{Shell: manifest.AllowList{Allow: []string{"git", "go"}}}), mk("c", C{Shell: manifest.AllowList{Allow: []string{"go"}}}), "", ""},
		{"shell extra", mk("p", C{Shell: manifest.AllowList{Allow: []string{"git"}}}), mk("c", C{Shell: manifest.AllowList{Allow: []string{"git", "bash"}}}), KeyShell, "bash"},
		// Spawn.
		{"spawn subset", mk("p", C{Spawn: manifest.Spawn{Allow: []string{"local/a", "local/b"}}}), mk("c", C{Spawn: manifest.Spawn{Allow: []string{"local/b"}}}), "", ""},
		{"spawn extra", mk("p", C{Spawn: manifest.Spawn{Allow: []string{"local/a"}}}), mk("c", C{Spawn: manifest.Spawn{Allow: []string{"local/z"}}}), KeySpawn, "local/z"},
		// Env.
		{"env subset", mk("p", C{Env: manifest.AllowList{Allow: []string{"LANG", "TZ"}}}), mk("c", C{Env: manifest.AllowList{Allow: []string{"TZ"}}}), "", ""},
		{"env extra", mk("p", C{Env: manifest.AllowList{Allow: []string{"LANG"}}}), mk("c", C{Env: manifest.AllowList{Allow: []string{"HOME"}}}), KeyEnv, "HOME"},
		// Filesystem scope.
		{"scope parent none covers all", mk("p", C{}), mk("c", C{Filesystem: manifest.Filesystem{Scope: some("src")}}), "", ""},
		{"scope parent none covers none", mk("p", C{}), mk("c", C{}), "", ""},
		{"scope equal", mk("p", C{Filesystem: manifest.Filesystem{Scope: some("src")}}), mk("c", C{Filesystem: manifest.Filesystem{Scope: some("src")}}), "", ""},
		{"scope beneath", mk("p", C{Filesystem: manifest.Filesystem{Scope: some("src")}}), mk("c", C{Filesystem: manifest.Filesystem{Scope: some("src/a/b")}}), "", ""},
		{"scope cleaned", mk("p", C{Filesystem: manifest.Filesystem{Scope: some("src/")}}), mk("c", C{Filesystem: manifest.Filesystem{Scope: some("./src/a")}}), "", ""},
		{"scope sibling prefix", mk("p", C{Filesystem: manifest.Filesystem{Scope: some("src")}}), mk("c", C{Filesystem: manifest.Filesystem{Scope: some("srcx")}}), KeyScope, "srcx"},
		{"scope above", mk("p", C{Filesystem: manifest.Filesystem{Scope: some("src/a")}}), mk("c", C{Filesystem: manifest.Filesystem{Scope: some("src")}}), KeyScope, "src"},
		{"scope child none", mk("p", C{Filesystem: manifest.Filesystem{Scope: some("src")}}), mk("c", C{}), KeyScope, "none"},
		// Workdir exec.
		{"exec both", mk("p", C{Filesystem: manifest.Filesystem{WorkdirExec: some(true)}}), mk("c", C{Filesystem: manifest.Filesystem{WorkdirExec: some(true)}}), "", ""},
		{"exec child only", mk("p", C{}), mk("c", C{Filesystem: manifest.Filesystem{WorkdirExec: some(true)}}), KeyWorkdirExec, "true"},
		// State stores.
		{"state same named", mk("p", C{}, stateArt("kv", strp("shared"))), mk("c", C{}, stateArt("kv", strp("shared"))), "", ""},
		{"state parent none", mk("p", C{}), mk("c", C{}, stateArt("kv", strp("shared"))), KeyStateStore, "shared"},
		{"state default is own capsule", mk("p", C{}, stateArt("kv", nil)), mk("c", C{}, stateArt("kv", nil)), KeyStateStore, "c"},
		{"state default matches parent named", mk("p", C{}, stateArt("kv", strp("c"))), mk("c", C{}, stateArt("kv", nil)), "", ""},
		{"state no state", mk("p", C{}), mk("c", C{}, manifest.Artifact{Name: "local/t", Version: "1.0.0"}), "", ""},
		// Install skill / tool.
		{"skill star", mk("p", C{Install: manifest.Install{Skill: []string{"*"}}}), mk("c", C{Install: manifest.Install{Skill: []string{"anything", "x*"}}}), "", ""},
		{"skill prefix", mk("p", C{Install: manifest.Install{Skill: []string{"local/re*"}}}), mk("c", C{Install: manifest.Install{Skill: []string{"local/review", "local/re*", "local/ref*"}}}), "", ""},
		{"skill prefix miss", mk("p", C{Install: manifest.Install{Skill: []string{"local/re*"}}}), mk("c", C{Install: manifest.Install{Skill: []string{"local/write"}}}), KeyInstallSkill, "local/write"},
		{"skill exact", mk("p", C{Install: manifest.Install{Skill: []string{"local/a"}}}), mk("c", C{Install: manifest.Install{Skill: []string{"local/a"}}}), "", ""},
		{"skill exact not pattern", mk("p", C{Install: manifest.Install{Skill: []string{"local/a"}}}), mk("c", C{Install: manifest.Install{Skill: []string{"local/a*"}}}), KeyInstallSkill, "local/a*"},
		{"skill star child under prefix", mk("p", C{Install: manifest.Install{Skill: []string{"l*"}}}), mk("c", C{Install: manifest.Install{Skill: []string{"*"}}}), KeyInstallSkill, "*"},
		{"tool separate list", mk("p", C{Install: manifest.Install{Skill: []string{"*"}}}), mk("c", C{Install: manifest.Install{Tool: []string{"local/t"}}}), KeyInstallTool, "local/t"},
		{"tool covered", mk("p", C{Install: manifest.Install{Tool: []string{"local/*"}}}), mk("c", C{Install: manifest.Install{Tool: []string{"local/t"}}}), "", ""},
		// Containment: may only rise.
		{"containment none none", mk("p", C{}), mk("c", C{}), "", ""},
		{"containment rise", mk("p", C{Containment: some("scoped")}), mk("c", C{Containment: some("sealed")}), "", ""},
		{"containment equal", mk("p", C{Containment: some("scoped")}), mk("c", C{Containment: some("scoped")}), "", ""},
		{"containment fall", mk("p", C{Containment: some("scoped")}), mk("c", C{Containment: some("advisory")}), KeyContainment, "advisory"},
		{"containment undeclared child", mk("p", C{Containment: some("sealed")}), mk("c", C{}), KeyContainment, "advisory"},
		{"containment undeclared parent", mk("p", C{}), mk("c", C{Containment: some("advisory")}), "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.parent, tc.child)
			if tc.key == "" {
				if r != nil {
					t.Fatalf("want covered, got %v", r)
				}
				return
			}
			if r == nil {
				t.Fatalf("want refusal on %s '%s', got covered", tc.key, tc.entry)
			}
			if r.Key != tc.key || r.Entry != tc.entry {
				t.Fatalf("got %s '%s', want %s '%s'", r.Key, r.Entry, tc.key, tc.entry)
			}
		})
	}
}

// TestCheckOrder makes a child exceed its parent on every axis at once and
// peels the axes off one by one: each time, the first remaining axis in the
// table's order is the one reported.
func TestCheckOrder(t *testing.T) {
	type C = manifest.Capabilities
	child := mk("c", C{
		Network:     manifest.Network{Allow: []string{"a.com"}, UnixSockets: some(true)},
		PeerFetch:   manifest.AllowList{Allow: []string{"b.com"}},
		Shell:       manifest.AllowList{Allow: []string{"sh"}},
		Spawn:       manifest.Spawn{Allow: []string{"local/x"}},
		Env:         manifest.AllowList{Allow: []string{"E"}},
		Filesystem:  manifest.Filesystem{WorkdirExec: some(true)},
		Install:     manifest.Install{Skill: []string{"s"}, Tool: []string{"t"}},
		Containment: some("advisory"),
	}, stateArt("kv", strp("st")))
	parent := mk("p", C{Containment: some("sealed"), Filesystem: manifest.Filesystem{Scope: some("src")}})
	want := []struct{ key, entry string }{
		{KeyNetworkAllow, "a.com"}, {KeyUnixSockets, "true"}, {KeyPeerFetch, "b.com"},
		{KeyShell, "sh"}, {KeySpawn, "local/x"}, {KeyEnv, "E"}, {KeyScope, "none"},
		{KeyWorkdirExec, "true"}, {KeyStateStore, "st"}, {KeyInstallSkill, "s"},
		{KeyInstallTool, "t"}, {KeyContainment, "advisory"},
	}
	if len(want) != len(Axes) {
		t.Fatalf("%d axes, want 12", len(Axes))
	}
	for i, w := range want {
		r := Check(parent, child)
		if r == nil || r.Key != w.key || r.Entry != w.entry {
			t.Fatalf("step %d: got %v, want %s '%s'", i, r, w.key, w.entry)
		}
		if Axes[i] != w.key {
			t.Fatalf("Axes[%d] = %s, want %s", i, Axes[i], w.key)
		}
		// Widen the parent on this axis.
		pc := &parent.Capabilities
		switch w.key {
		case KeyNetworkAllow:
			pc.Network.Allow = []string{"a.com"}
		case KeyUnixSockets:
			pc.Network.UnixSockets = some(true)
		case KeyPeerFetch:
			pc.PeerFetch.Allow = []string{"b.com"}
		case KeyShell:
			pc.Shell.Allow = []string{"sh"}
		case KeySpawn:
			pc.Spawn.Allow = []string{"local/x"}
		case KeyEnv:
			pc.Env.Allow = []string{"E"}
		case KeyScope:
			pc.Filesystem.Scope = manifest.Opt[string]{}
		case KeyWorkdirExec:
			pc.Filesystem.WorkdirExec = some(true)
		case KeyStateStore:
			parent.Artifacts = append(parent.Artifacts, stateArt("kv", strp("st")))
		case KeyInstallSkill:
			pc.Install.Skill = []string{"*"}
		case KeyInstallTool:
			pc.Install.Tool = []string{"*"}
		case KeyContainment:
			pc.Containment = some("advisory")
		}
	}
	if r := Check(parent, child); r != nil {
		t.Fatalf("fully widened parent still refuses: %v", r)
	}
}

func TestRefusalMessage(t *testing.T) {
	r := &Refusal{Key: KeyNetworkAllow, Entry: "api.example.com"}
	want := "capabilities.network.allow: the child declares 'api.example.com', which its parent does not hold — a spawned capsule can never hold more capability than the capsule that spawned it"
	if r.Error() != want {
		t.Fatalf("got  %q\nwant %q", r.Error(), want)
	}
}

// FuzzNetCoverage checks the properties the envelope relies on for any entry
// text: an entry is covered by itself, a parseable one by its bare host, and
// an unparseable one by nothing but identical text.
func FuzzNetCoverage(f *testing.F) {
	for _, s := range []string{"example.com", "https://a.b:1", "[::1]:2", "http://x", "a:b:c", "https://a.com/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !netCovered([]string{s}, s) {
			t.Fatalf("%q is not covered by itself", s)
		}
		e, err := manifest.ParseNetEntry(s)
		if err != nil {
			if netCovered([]string{"example.com", s + "x", "x" + s}, s) {
				t.Fatalf("unparseable %q covered by another text", s)
			}
			return
		}
		if !netCovered([]string{e.Host}, s) && !strings.Contains(e.Host, ":") {
			t.Fatalf("bare host %q does not cover %q", e.Host, s)
		}
	})
}
