package hostapi

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

const managerManifest = `name: local/manager
version: "0.1.0"
capabilities:
  install:
    tool: [acme-*, murmur/fmt]
    skill: ["local/*"]
`

// managerStores: the global store holds tools, a skill, a script capsule and
// an agent capsule; the project store holds one tool and a second version.
func managerStores(t testing.TB) func(*env) {
	return func(e *env) {
		echo := componentBytes(t, "echo_tool")
		publishTool(t, e.chain.Global, "acme/acme-grep", "1.2.0", echo, "description: Search text fast\ntags: [search, text]\n")
		publishTool(t, e.chain.Global, "acme/acme-grep", "1.10.0", echo, "description: Search text faster\ntags: [search]\n")
		publishTool(t, e.chain.Global, "murmur/fmt", "0.3.0", echo, "description: Formats code\n")
		publishTool(t, e.chain.Global, "other/secret", "1.0.0", echo, "description: Not installable here\n")
		publishSkill(t, e.chain.Global, "local/notes", "0.1.0", "description: Note taking\ntags: [Writing]\n")
		if _, err := e.chain.Global.Publish(murZip(t, "name: acme/script\nversion: \"2.0.0\"\n",
			map[string][]byte{"capsule.wasm": componentBytes(t, "capsule_echo")}), false); err != nil {
			t.Fatal(err)
		}
		if _, err := e.chain.Global.Publish(murZip(t, "name: acme/agent\nversion: \"1.0.0\"\ninference:\n  model: m\n", nil), false); err != nil {
			t.Fatal(err)
		}
		publishTool(t, e.chain.Project, "local/echo", "0.1.0", echo, "description: Echoes\n")
		publishTool(t, e.chain.Project, "acme/acme-grep", "1.2.0", echo, "description: Search text fast\ntags: [search, text]\n")
	}
}

func names(l []wit.ArtifactSummary) []string {
	var out []string
	for _, s := range l {
		out = append(out, s.Name+"@"+s.Version+":"+string(s.Runtime))
	}
	return out
}

func TestArtifactListSearchDescribe(t *testing.T) {
	e := newEnv(t, managerManifest, managerStores(t))
	ctx := context.Background()
	l, err := e.api.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := "acme/acme-grep@1.2.0:wasm acme/acme-grep@1.10.0:wasm acme/agent@1.0.0:native acme/script@2.0.0:wasm " +
		"local/echo@0.1.0:wasm local/notes@0.1.0:native murmur/fmt@0.3.0:wasm other/secret@1.0.0:wasm"
	if got := strings.Join(names(l), " "); got != want {
		t.Fatalf("list:\n got %s\nwant %s", got, want)
	}

	for _, c := range []struct{ q, want string }{
		{"search", "acme/acme-grep@1.2.0:wasm acme/acme-grep@1.10.0:wasm"},
		{"WRITING", "local/notes@0.1.0:native"},                      // tags, any case
		{"formats", "murmur/fmt@0.3.0:wasm"},                         // description
		{"local/", "local/echo@0.1.0:wasm local/notes@0.1.0:native"}, // name
		{"no such thing", ""},
	} {
		got, err := e.api.Search(ctx, c.q)
		if err != nil {
			t.Fatal(err)
		}
		if g := strings.Join(names(got), " "); g != c.want {
			t.Errorf("search %q: got %q, want %q", c.q, g, c.want)
		}
	}
	all, _ := e.api.Search(ctx, "")
	if len(all) != len(l) {
		t.Errorf("empty query: %d results, want %d", len(all), len(l))
	}

	info, err := e.api.Describe(ctx, "acme-grep") // bare name, newest version
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "acme/acme-grep" || info.Version != "1.10.0" || info.Description != "Search text faster" ||
		strings.Join(info.Tags, ",") != "search" || info.Runtime != "wasm" || info.InputSchema != nil {
		t.Fatalf("describe: %+v", info)
	}
	info, err = e.api.Describe(ctx, "local/notes")
	if err != nil || info.Runtime != "native" || info.Description != "Note taking" {
		t.Fatalf("describe skill: %v %+v", err, info)
	}
	_, err = e.api.Describe(ctx, "missing")
	wantErr(t, err, "E-RUN-066", "local/missing", "not installed")
	_, err = e.api.Describe(ctx, "Bad Name/x")
	wantErr(t, err, "E-RUN-066")
}

func TestArtifactDescribeAmbiguousBareName(t *testing.T) {
	e := newEnv(t, managerManifest, func(e *env) {
		echo := componentBytes(t, "echo_tool")
		publishTool(t, e.chain.Global, "acme/fmt", "1.0.0", echo, "")
		publishTool(t, e.chain.Global, "murmur/fmt", "1.0.0", echo, "")
	})
	_, err := e.api.Describe(context.Background(), "fmt")
	wantErr(t, err, "ambiguous", "acme/fmt", "murmur/fmt")
}

func TestArtifactDescribeRefusesTamperedBytes(t *testing.T) {
	var zipPath string
	e := newEnv(t, managerManifest, func(e *env) {
		r := publishTool(t, e.chain.Global, "murmur/fmt", "0.3.0", componentBytes(t, "echo_tool"), "")
		zipPath = r.ZipPath
	})
	b, _ := os.ReadFile(zipPath)
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(zipPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := e.api.Describe(context.Background(), "murmur/fmt")
	if diag.Code(err) != "E-REG-002" {
		t.Fatalf("want E-REG-002, got %v", err)
	}
	_, err = e.api.Pull(context.Background(), "murmur/fmt", "0.3.0")
	if diag.Code(err) != "E-REG-002" {
		t.Fatalf("pull of tampered bytes: want E-REG-002, got %v", err)
	}
}

func TestArtifactPull(t *testing.T) {
	e := newEnv(t, managerManifest, managerStores(t))
	ctx := context.Background()

	// Allowed: covered by "acme-*" (bare name) and by "murmur/fmt" (full name),
	// and a skill by "local/".
	for _, c := range []struct{ name, version, runtime string }{
		{"acme/acme-grep", "1.10.0", "wasm"},
		{"murmur/fmt", "0.3.0", "wasm"},
		{"notes", "0.1.0", "native"}, // bare name: local/notes
	} {
		s, err := e.api.Pull(ctx, c.name, c.version)
		if err != nil {
			t.Fatalf("pull %s@%s: %v", c.name, c.version, err)
		}
		full, _ := manifest.NormalizeName(c.name)
		if s.Name != full || s.Version != c.version || string(s.Runtime) != c.runtime {
			t.Fatalf("pull answered %+v", s)
		}
		if _, err := e.chain.Project.Resolve(full, c.version, manifest.Options{SkipSecrets: true}); err != nil {
			t.Fatalf("%s not in the project store after pull: %v", full, err)
		}
	}
	// Pulling again is an idempotent success and is recorded again.
	if _, err := e.api.Pull(ctx, "murmur/fmt", "0.3.0"); err != nil {
		t.Fatal(err)
	}
	pulled := e.lines(t, trace.TypeArtifactPulled)
	if len(pulled) != 4 {
		t.Fatalf("want 4 artifact_pulled lines, got %d", len(pulled))
	}
	g, _ := e.chain.Global.Resolve("acme/acme-grep", "1.10.0", manifest.Options{SkipSecrets: true})
	if l := pulled[0]; l.Str("name") != "acme/acme-grep" || l.Str("version") != "1.10.0" || l.Str("sha256") != g.SHA256 ||
		l.Str("store") != "project" || l.ParentID != e.tw.StartID() {
		t.Fatalf("artifact_pulled line: %v", l.Fields)
	}

	// Refused.
	for _, c := range []struct {
		name, version, code string
		parts               []string
	}{
		{"other/secret", "1.0.0", "E-RUN-067", []string{"capabilities.install.tool does not cover other/secret"}},
		{"acme/script", "2.0.0", "E-RUN-067", []string{"capsule", "only tools and skills"}},
		{"acme/acme-grep", "latest", "E-REG-004", []string{"reserved"}},
		{"acme/acme-grep", "stable", "E-REG-004", nil},
		{"acme/acme-grep", "9.9.9", "E-REG-001", []string{"not installed"}},
		{"acme/../x", "1.0.0", "E-REG-014", nil},
		{"acme/acme-grep", "../../x", "E-REG-014", nil},
	} {
		_, err := e.api.Pull(ctx, c.name, c.version)
		wantErr(t, err, c.parts...)
		if diag.Code(err) != c.code {
			t.Fatalf("pull %s@%s: code %s, want %s (%v)", c.name, c.version, diag.Code(err), c.code, err)
		}
	}
	if _, err := e.chain.Project.Resolve("other/secret", "1.0.0", manifest.Options{}); !store.IsNotFound(err) {
		t.Fatalf("a refused pull wrote the project store: %v", err)
	}
	if n := len(e.lines(t, trace.TypeArtifactPulled)); n != 4 {
		t.Fatalf("refused pulls were recorded: %d lines", n)
	}
}

func TestArtifactPullConflictingBytes(t *testing.T) {
	e := newEnv(t, managerManifest, func(e *env) {
		publishTool(t, e.chain.Global, "murmur/fmt", "0.3.0", componentBytes(t, "echo_tool"), "")
		publishTool(t, e.chain.Project, "murmur/fmt", "0.3.0", componentBytes(t, "trap_tool"), "")
	})
	_, err := e.api.Pull(context.Background(), "murmur/fmt", "0.3.0")
	if diag.Code(err) != "E-REG-003" {
		t.Fatalf("want E-REG-003, got %v", err)
	}
}

func TestArtifactRemove(t *testing.T) {
	e := newEnv(t, managerManifest, managerStores(t))
	ctx := context.Background()
	// A second version in the project store: remove takes every version.
	publishTool(t, e.chain.Project, "acme/acme-grep", "1.3.0", componentBytes(t, "echo_tool"), "")

	ok, err := e.api.Remove(ctx, "acme-grep")
	if err != nil || !ok {
		t.Fatalf("remove: %v %v", ok, err)
	}
	if _, err := os.Stat(filepath.Join(e.chain.Project.Root, "acme")); !os.IsNotExist(err) {
		t.Fatalf("empty scope dir left behind: %v", err)
	}
	// The global store keeps its copies.
	if _, err := e.chain.Global.Resolve("acme/acme-grep", "1.2.0", manifest.Options{SkipSecrets: true}); err != nil {
		t.Fatal(err)
	}
	// Absent from the project store: ok(false).
	ok, err = e.api.Remove(ctx, "acme/acme-grep")
	if err != nil || ok {
		t.Fatalf("second remove: %v %v", ok, err)
	}
	// Not covered by the install grant: refused, nothing removed.
	_, err = e.api.Remove(ctx, "local/echo")
	wantErr(t, err, "E-RUN-067", "capabilities.install.tool does not cover local/echo")
	if _, err := e.chain.Project.Resolve("local/echo", "0.1.0", manifest.Options{SkipSecrets: true}); err != nil {
		t.Fatalf("refused remove removed: %v", err)
	}
	l, _ := e.api.List(ctx)
	for _, s := range l {
		if s.Name == "acme/acme-grep" && s.Version == "1.3.0" {
			t.Fatal("removed version still listed")
		}
	}
}

func TestArtifactNoProjectStore(t *testing.T) {
	e := newEnv(t, managerManifest, managerStores(t))
	api, err := New(Config{Manifest: e.m, Stores: store.Chain{Global: e.chain.Global}, Session: e.sess})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	_, err = api.Pull(context.Background(), "murmur/fmt", "0.3.0")
	wantErr(t, err, "E-RUN-068", "no project store")
	_, err = api.Remove(context.Background(), "murmur/fmt")
	wantErr(t, err, "E-RUN-068")
	l, err := api.List(context.Background())
	if err != nil || len(l) != 7 {
		t.Fatalf("global-only list: %v %v", err, names(l))
	}
}

func TestArtifactDiagnostics(t *testing.T) {
	e := newEnv(t, managerManifest, managerStores(t))
	st, err := e.api.Diagnostics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.CapsuleID != e.sess.ID || len(st.Installed) != 8 {
		t.Fatalf("diagnostics: %+v", st)
	}
	var g manifest.Grants
	if err := json.Unmarshal([]byte(st.Capabilities), &g); err != nil {
		t.Fatal(err)
	}
	if strings.Join(g.Capsule.InstallTool, ",") != "acme-*,murmur/fmt" || g.Capsule.Limits.DeadlineSeconds != 600 {
		t.Fatalf("capabilities: %s", st.Capabilities)
	}
}

// TestArtifactManagerUnreadableStore: a store directory that cannot be read
// leaves list with what the other store holds (list cannot answer err).
func TestArtifactManagerUnreadableStore(t *testing.T) {
	// (root reads 0000 directories, so the project store is made a file.)
	e := newEnv(t, managerManifest, managerStores(t))
	if err := os.RemoveAll(e.chain.Project.Root); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.chain.Project.Root, []byte("not a dir"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := e.api.List(context.Background())
	if err != nil || len(l) != 7 {
		t.Fatalf("list with a broken project store: %v %v", err, names(l))
	}
	_, err = e.api.Search(context.Background(), "x")
	if diag.Code(err) != "E-IO-001" {
		t.Fatalf("search with a broken store: %v", err)
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"1.2.0", "1.10.0", -1}, {"1.10.0", "1.2.0", 1}, {"1.0.0", "1.0.0", 0},
		{"1.0", "1.0.0", -1}, {"0.1.0-rc1", "0.1.0-rc2", -1}, {"2", "10", -1},
	} {
		got := compareVersions(c.a, c.b)
		if (got < 0) != (c.want < 0) || (got > 0) != (c.want > 0) {
			t.Errorf("compareVersions(%s, %s) = %d, want sign %d", c.a, c.b, got, c.want)
		}
	}
}
