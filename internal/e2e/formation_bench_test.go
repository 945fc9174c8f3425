package e2e_test

import (
	"bufio"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/e2e"
)

// BenchmarkFormationStartToReady: `mur run --roster` of a three-member
// formation (the entry and two peers, replay-driven agents) from process
// start to the entry's ready line (the second --json line), measured side
// by side with one plain `mur run --capsule` of the same agent to its ready
// line (plain-ms): peers start at once, so the formation's figure should be
// near one member's start plus the entry's (which starts after the peers'
// doors answer), not three. Each formation is then ended by SIGTERM to its
// launcher.
func BenchmarkFormationStartToReady(b *testing.B) {
	homeDir, base := b.TempDir(), b.TempDir()
	e2e.ReplayCapsule(b, homeDir, filepath.Join(base, "lead"), "lead", "0.1.0", doorAuth, workerTranscript)
	e2e.ReplayCapsule(b, homeDir, filepath.Join(base, "worker"), "worker", "0.1.0", doorAuth+peerSleep, workerTranscript)
	proj := filepath.Join(base, "team")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "roster.yaml"), []byte(`roster_version: 1
members:
  - {name: lead, capsule: lead, version: "0.1.0", entry: true}
  - {name: alpha, capsule: worker, version: "0.1.0"}
  - {name: beta, capsule: worker, version: "0.1.0"}
reachability:
  - from: lead
    to: [alpha, beta]
`), 0o644)
	shareCompileCache(b, homeDir)
	formation := func() time.Duration {
		cmd := murCmd(b, homeDir, base, "run", "--roster", proj, "--json")
		out, _ := cmd.StdoutPipe()
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReader(out)
		for i := 0; i < 2; i++ {
			if _, err := br.ReadString('\n'); err != nil {
				b.Fatal(err)
			}
		}
		d := time.Since(t0)
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		return d
	}
	plain := func() time.Duration {
		wd := b.TempDir()
		cmd := murCmd(b, homeDir, base, "run", "--capsule", "local/worker", "--capsule-version", "0.1.0", "--workdir", wd, "--json")
		d, _, _ := startToReady(b, cmd)
		terminate(b, cmd)
		return d
	}
	formation()
	plain()
	var fd, pd []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fd = append(fd, formation())
		pd = append(pd, plain())
	}
	b.StopTimer()
	reportMedian(b, fd, "formation-ms")
	reportMedian(b, pd, "plain-ms")
}
