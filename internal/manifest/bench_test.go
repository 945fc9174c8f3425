package manifest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time. The benchmarks report it per
// operation beside the wall-clock ns/op because the machine they run on is
// shared: under contention wall time measures the neighbours, CPU time much
// less so.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

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
	start := cpuTime(b)
	for b.Loop() {
		m, err := Parse(data, "murmur.yaml", opts)
		if err != nil {
			b.Fatal(err)
		}
		if g, _ := m.EffectiveGrants(); len(g.Artifacts) != 3 {
			b.Fatal("wrong artifact count")
		}
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkEffectiveGrants isolates the grant computation (narrowing
// included), which mur-roost repeats per spawn on manifests it already holds.
func BenchmarkEffectiveGrants(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "typical.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	m, err := Parse(data, "murmur.yaml", Options{SkipSecrets: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := cpuTime(b)
	for b.Loop() {
		if g, _ := m.EffectiveGrants(); len(g.Artifacts) != 3 {
			b.Fatal("wrong artifact count")
		}
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}
