package manifest

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// yamlAt nests "key: null" under the mapping at path (indices dropped:
// "artifacts[]" is a one-entry list).
func yamlAt(path, key string) string {
	var parts []string
	if path != "" {
		parts = strings.Split(path, ".")
	}
	var b strings.Builder
	indent := ""
	for _, p := range parts {
		if name, ok := strings.CutSuffix(p, "[]"); ok {
			b.WriteString(indent + name + ":\n" + indent + "  - name: a/b\n")
			indent += "    "
			continue
		}
		b.WriteString(indent + p + ":\n")
		indent += "  "
	}
	b.WriteString(indent + key + ": null\n")
	return b.String()
}

// Every key knownKeys lists is one the parser takes at that place: put
// alone there, it draws no W-MAN-001 (a wrong-typed null may be an error;
// the unknown-key warning is what is checked).
func TestKnownKeysParse(t *testing.T) {
	for path, keys := range knownKeys {
		for _, k := range keys {
			src := yamlAt(path, k)
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
				t.Fatalf("%s: %v\n%s", path, err, src)
			}
			p := &parser{file: "murmur.yaml", opts: Options{LookupEnv: env(nil)}, m: &Manifest{declared: map[string]Pos{}}, valPos: map[string]Pos{}}
			p.top(doc.Content[0])
			for _, w := range p.m.Warnings {
				if w.Code == "W-MAN-001" {
					t.Errorf("knownKeys[%q] lists %q, which the parser does not take: %s\n%s", path, k, w.Message, src)
				}
			}
		}
	}
	// The check can fail: a key the parser does not take is warned about.
	p := &parser{file: "murmur.yaml", opts: Options{LookupEnv: env(nil)}, m: &Manifest{declared: map[string]Pos{}}, valPos: map[string]Pos{}}
	var doc yaml.Node
	yaml.Unmarshal([]byte(yamlAt("capabilities.limits", "memory_byte")), &doc)
	p.top(doc.Content[0])
	if len(p.m.Warnings) != 1 || !strings.HasSuffix(p.m.Warnings[0].Message, "unknown key 'capabilities.limits.memory_byte' is ignored; did you mean 'memory_bytes'?") {
		t.Errorf("a near miss: %v", p.m.Warnings)
	}
}

func TestNearKeys(t *testing.T) {
	for _, tc := range []struct {
		parent, key string
		want        []string
	}{
		{"", "descripton", []string{"description"}},
		{"", "colour", nil},
		{"", "tag", []string{"tags"}},
		{"capabilities", "netwrk", []string{"network"}},
		{"artifacts[2].capabilities.limits", "instance", []string{"instances"}},
		{"artifacts[0]", "verison", []string{"version"}},
		{"artifacts[0].gateway", "endpont", []string{"endpoint"}},
		{"inference", "max_token", []string{"max_tokens"}},
		{"capabilities.network", "alow", []string{"allow"}},
		{"no.such.place", "allow", nil},
	} {
		got := nearKeys(tc.parent, tc.key)
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("nearKeys(%q, %q) = %v, want %v", tc.parent, tc.key, got, tc.want)
		}
	}
}
