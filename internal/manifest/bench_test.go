package manifest

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParseTypical measures what every `mur run` and every mur-roost
// resolve pays per manifest: parse + validate + EffectiveGrants of a typical
// agent capsule manifest (testdata/typical.yaml). Target: < 200 µs.
func BenchmarkParseTypical(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "typical.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{LookupEnv: env(map[string]string{"ANTHROPIC_API_KEY": "k"})}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		m, err := Parse(data, "murmur.yaml", opts)
		if err != nil {
			b.Fatal(err)
		}
		if g, _ := m.EffectiveGrants(); len(g.Artifacts) != 3 {
			b.Fatal("wrong artifact count")
		}
	}
}
