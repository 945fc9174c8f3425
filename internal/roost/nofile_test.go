package roost

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/murmur-go/murmur/internal/home"
)

// TestStartupPastDescriptorLimit reproduces issue 14 item 11: more live
// start-up records than the daemon's descriptor limit. Started under a hard
// limit of 64 open files with 300 live records, the daemon must start, serve
// concurrent requests, count all 300 and still see their capsule's exit (past
// the limit it asks /proc instead of holding a pidfd).
func TestStartupPastDescriptorLimit(t *testing.T) {
	t.Parallel()
	homeDir := t.TempDir()
	dir := home.Running(homeDir)
	os.MkdirAll(dir, 0o700)
	sleeper, start := startSleeper(t)
	const n = 300
	for i := range n {
		writeRecord(t, dir, record(fmt.Sprintf("ses_many_%03d", i), sleeper.Process.Pid, start))
	}
	fx := newFixture(t)
	limited := func(args []string) *exec.Cmd {
		// dash's and bash's ulimit -n without -S or -H sets both limits.
		return exec.Command("sh", append([]string{"-c", `ulimit -n 64 && exec "$0" "$@"`, roostBin}, args...)...)
	}
	d := startDaemonCmd(t, homeDir, limited, "--registry-path", fx.reg, "--spawn-allow", "local/orchestrator",
		"--max-live-capsules", "1000")
	if m := censusRE.FindStringSubmatch(d.lines[0]); m == nil || m[1] != fmt.Sprint(n) {
		t.Fatalf("census line: %q", d.lines[0])
	}
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sid := fmt.Sprintf("ses_req_%d", i)
			if r := d.register(sid, "local/orchestrator", "0.1.0", ""); r.code != 200 {
				errs <- fmt.Sprintf("register %s: %d %s", sid, r.code, r.raw)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	expectFigures(t, d.client, "ses_req_0", "running", 3, 0, n+16)
	sleeper.Process.Kill()
	sleeper.Wait()
	expectFigures(t, d.client, "ses_req_0", "running", 3, 0, 16)
}
