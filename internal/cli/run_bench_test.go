package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/running"
)

// timeRuns runs f b.N times and reports the median wall time of one run, the
// figure docs/benchmarks.md quotes (ns/op is the mean).
func timeRuns(b *testing.B, f func()) {
	b.Helper()
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		f()
		d = append(d, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "median-ms")
}

func mustRun(b *testing.B, cmd *exec.Cmd) {
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
}

// BenchmarkForkExecTrue is the floor: starting and reaping a process that
// does nothing.
func BenchmarkForkExecTrue(b *testing.B) {
	timeRuns(b, func() { mustRun(b, exec.Command("/bin/true")) })
}

// benchRun times whole `mur run` processes of a capsule whose component is
// already in the compile cache.
func benchRun(b *testing.B, wasm []byte, manifest, task string) {
	homeDir, base := b.TempDir(), b.TempDir()
	proj := capsule(b, filepath.Join(base, "bench"), manifest, wasm)
	wd := filepath.Join(base, "wd")
	run := func() {
		cmd := exec.Command(murBin(b), "run", "--workdir", wd, "--task", task)
		cmd.Dir = proj
		cmd.Env = []string{"HOME=" + homeDir}
		mustRun(b, cmd)
	}
	shareCompileCache(b, homeDir)
	run() // compile once
	timeRuns(b, run)
}

// BenchmarkMurRunCachedWAT: `mur run` of a small cached WAT script capsule.
func BenchmarkMurRunCachedWAT(b *testing.B) {
	benchRun(b, fixture(b, "ok.wat"), "name: bench\nversion: 1.0.0\n", "")
}

// BenchmarkMurRunCachedGoKit: `mur run` of the cached Go-kit probe, which
// reads its task and writes out/result.txt.
func BenchmarkMurRunCachedGoKit(b *testing.B) {
	benchRun(b, fixture(b, "capsule-probe.wasm"), "name: bench\nversion: 1.0.0\n", "task")
}

// BenchmarkMurPs256: `mur ps` over 256 live records.
func BenchmarkMurPs256(b *testing.B) {
	homeDir := b.TempDir()
	pid, start, err := running.Self()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 256; i++ {
		if err := running.Write(home.Running(homeDir), running.Record{SessionID: ids.New(ids.Session), PID: pid, ProcessStart: start,
			CapsuleName: "local/bench", CapsuleVersion: "1.0.0", RecordsDir: "/r", Workdir: "/w",
			StartedAt: time.Now().UTC().Format(time.RFC3339)}); err != nil {
			b.Fatal(err)
		}
	}
	timeRuns(b, func() {
		cmd := exec.Command(murBin(b), "ps")
		cmd.Env = []string{"HOME=" + homeDir}
		cmd.Stdout, cmd.Stderr = nil, os.Stderr
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	})
}
