package manifest

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
)

// Manifests written for the published implementation load unchanged
// (issue 14 item 20; docs/manifest.md).
func TestPublishedManifestsLoad(t *testing.T) {
	load := func(dir string) *Manifest {
		t.Helper()
		m, err := Load(filepath.Join("testdata", "published", dir, "murmur.yaml"), Options{LookupEnv: env(nil)})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if len(m.Warnings) != 0 {
			t.Errorf("%s: warnings %v", dir, m.Warnings)
		}
		return m
	}

	tool := load("jsonl-line-count")
	if tool.RuntimeKind() != RuntimeTool || tool.DeclaredRuntime != "wasm" || tool.IsNative() ||
		tool.ExecutionKind() != ExecutionWASM || tool.RefuseNative() != nil ||
		!reflect.DeepEqual(tool.RequiresFiles, []string{"jsonl_line_count.wasm"}) {
		t.Errorf("runtime: wasm tool: kind %q declared %q native %v execution %q files %v",
			tool.RuntimeKind(), tool.DeclaredRuntime, tool.IsNative(), tool.ExecutionKind(), tool.RequiresFiles)
	}

	capsule := load("line-counter")
	if len(capsule.Artifacts) != 1 || capsule.Artifacts[0].Name != "local/jsonl-line-count" ||
		capsule.Artifacts[0].DeclaredName != "jsonl-line-count" || capsule.Artifacts[0].RuntimeKind() != RuntimeTool {
		t.Fatalf("bare artifact name: %+v", capsule.Artifacts)
	}
	if a, ok := capsule.ArtifactByName("jsonl-line-count"); !ok || a.Name != "local/jsonl-line-count" {
		t.Errorf("ArtifactByName(bare) = %+v, %v", a, ok)
	}
	g, _ := capsule.EffectiveGrants()
	if len(g.Artifacts) != 1 || g.Artifacts[0].Name != "local/jsonl-line-count" {
		t.Errorf("grants name the artifact by its full name: %+v", g.Artifacts)
	}

	native := load("git-status")
	if native.RuntimeKind() != RuntimeTool || !native.IsNative() || native.ExecutionKind() != ExecutionNative {
		t.Errorf("native tool: kind %q native %v execution %q", native.RuntimeKind(), native.IsNative(), native.ExecutionKind())
	}
	err := native.RefuseNative()
	var d *diag.Diagnostic
	if !errors.As(err, &d) || d.Code != "E-MAN-029" ||
		!strings.Contains(d.Message, "testdata/published/git-status/murmur.yaml:5:1: implementation: native") ||
		!strings.Contains(d.Message, "local/git-status") || d.Hint == "" {
		t.Errorf("RefuseNative = %v", err)
	}
}

// TestImplementationKeys: each spelling of a tool's implementation the
// published implementation accepts, what it reads as, and the key a
// refusal names.
func TestImplementationKeys(t *testing.T) {
	cases := []struct {
		name      string
		src       string
		kind      string
		native    bool
		execution string
		names     string // the key RefuseNative names, "" when it refuses nothing
	}{
		{"runtime wasm", "runtime: wasm\n", RuntimeTool, false, ExecutionWASM, ""},
		{"runtime native", "runtime: native\n", RuntimeTool, true, ExecutionNative, "3:1: runtime: native"},
		{"implementation wasm", "runtime: tool\nimplementation: wasm\n", RuntimeTool, false, ExecutionWASM, ""},
		{"implementation native", "runtime: tool\nimplementation: native\n", RuntimeTool, true, ExecutionNative, "4:1: implementation: native"},
		{"execution native", "runtime: tool\nexecution: native\n", RuntimeTool, true, ExecutionNative, "4:1: execution: native"},
		{"execution wasm", "runtime: tool\nexecution: wasm\n", RuntimeTool, false, ExecutionWASM, ""},
		{"runtime wasm execution wasm", "runtime: wasm\nimplementation: wasm\nexecution: wasm\n", RuntimeTool, false, ExecutionWASM, ""},
		{"skill static", "runtime: skill\nexecution: static\n", RuntimeSkill, false, ExecutionStatic, ""},
		{"skill derived", "runtime: skill\n", RuntimeSkill, false, ExecutionStatic, ""},
		{"driver", "runtime: driver\nimplementation: wasm\n", RuntimeDriver, false, ExecutionWASM, ""},
		{"script capsule", "", RuntimeCapsule, false, ExecutionWASM, ""},
		{"agent capsule", "inference: {model: m}\n", RuntimeCapsule, false, ExecutionStatic, ""},
		{"agent capsule static", "execution: static\ninference: {model: m}\n", RuntimeCapsule, false, ExecutionStatic, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mustParse(t, head+c.src)
			if m.RuntimeKind() != c.kind || m.IsNative() != c.native || m.ExecutionKind() != c.execution {
				t.Errorf("kind %q native %v execution %q, want %q %v %q", m.RuntimeKind(), m.IsNative(), m.ExecutionKind(), c.kind, c.native, c.execution)
			}
			err := m.RefuseNative()
			switch {
			case c.names == "" && err != nil:
				t.Errorf("RefuseNative = %v, want nil", err)
			case c.names != "" && (err == nil || !strings.Contains(err.Error(), "murmur.yaml:"+c.names)):
				t.Errorf("RefuseNative = %v, want it to name %q", err, c.names)
			}
		})
	}
}

func TestImplementationConflicts(t *testing.T) {
	cases := []errorCase{
		{"runtime wasm implementation native", head + "runtime: wasm\nimplementation: native\n", "E-MAN-028", "4:17", "implementation: native contradicts runtime: wasm"},
		{"runtime native implementation wasm", head + "runtime: native\nimplementation: wasm\n", "E-MAN-028", "4:17", "implementation: wasm contradicts runtime: native"},
		{"implementation wasm execution native", head + "implementation: wasm\nexecution: native\n", "E-MAN-028", "4:12", "execution: native contradicts implementation: wasm"},
		{"native tool execution wasm", head + "runtime: native\nexecution: wasm\n", "E-MAN-028", "4:12", "execution: wasm contradicts runtime: native"},
		{"native driver", head + "runtime: driver\nimplementation: native\n", "E-MAN-028", "4:17", "only a tool may be native"},
		{"native hook by execution", head + "runtime: hook\nexecution: native\n", "E-MAN-028", "4:12", "only a tool may be native"},
		{"static tool", head + "runtime: wasm\nexecution: static\n", "E-MAN-028", "4:12", "a tool is packaged as wasm"},
		{"wasm skill", head + "runtime: skill\nexecution: wasm\n", "E-MAN-028", "4:12", "a skill is packaged as static"},
		{"native capsule", head + "implementation: native\n", "E-MAN-028", "3:17", "only a tool may be native (runtime: capsule)"},
		{"static script capsule", head + "execution: static\n", "E-MAN-028", "3:12", "a script capsule is packaged as wasm"},
		{"implementation enum", head + "implementation: python\n", "E-MAN-007", "3:17", `"python" is not one of wasm, native`},
		{"execution enum", head + "execution: docker\n", "E-MAN-007", "3:12", `"docker" is not one of wasm, native, static`},
		{"artifact bad bare name", head + "artifacts:\n  - name: Tool_A\n    version: \"1\"\n", "E-MAN-005", "4:11", `"Tool_A" is not a valid name`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), "", Options{LookupEnv: env(nil)})
			var d *diag.Diagnostic
			if !errors.As(err, &d) || d.Code != c.code || !strings.Contains(d.Message, "murmur.yaml:"+c.at+": ") || !strings.Contains(d.Message, c.has) {
				t.Errorf("got %v, want %s at %s containing %q", err, c.code, c.at, c.has)
			}
		})
	}
}

// An artifacts[] entry may use the published spellings too: bare names, and
// runtime: wasm|native for a tool. Two spellings of one name are one artifact.
func TestArtifactEntrySpellings(t *testing.T) {
	m := mustParse(t, head+"artifacts:\n  - {name: counter, version: \"1\", runtime: wasm}\n  - {name: acme/git, version: \"2\", runtime: native}\n")
	a, b := m.Artifacts[0], m.Artifacts[1]
	if a.Name != "local/counter" || a.RuntimeKind() != RuntimeTool || a.IsNative() || a.RefuseNative() != nil {
		t.Errorf("runtime: wasm entry: %+v", a)
	}
	if b.Name != "acme/git" || b.RuntimeKind() != RuntimeTool || !b.IsNative() {
		t.Errorf("runtime: native entry: %+v", b)
	}
	if err := b.RefuseNative(); err == nil || !strings.Contains(err.Error(), "E-MAN-029") || !strings.Contains(err.Error(), "murmur.yaml:5:36: artifacts[1].runtime: native") {
		t.Errorf("RefuseNative = %v", err)
	}

	_, err := Parse([]byte(head+"artifacts:\n  - {name: counter, version: \"1\"}\n  - {name: local/counter, version: \"1\"}\n"), "", Options{LookupEnv: env(nil)})
	if err == nil || !strings.Contains(err.Error(), "E-MAN-009") || !strings.Contains(err.Error(), "local/counter is declared twice") {
		t.Errorf("a bare and a full spelling of one name: %v", err)
	}
}
