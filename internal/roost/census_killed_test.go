package roost

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/home"
)

// TestKilledSessionStopsCounting: a registered session killed without a
// deregistration (kill -9) is ended once the census has the evidence `mur ps`
// prunes on — its process gone — so its slot is not held for the daemon's
// life, even once its record has been pruned; and a registration with no
// running record behind it is never counted (issue 22 item 4). Found first
// by the delegation tests: after three kill -9s under --max-live-capsules 4
// every spawn was refused.
func TestKilledSessionStopsCounting(t *testing.T) {
	homeDir := t.TempDir()
	dir := home.Running(homeDir)
	os.MkdirAll(dir, 0o700)
	fx := newFixture(t)
	p := newInproc(t, Options{MaxDepth: 3, MaxConcurrent: 8, MaxLiveCapsules: 3,
		SpawnAllow: []string{"local/orchestrator"}, Registry: StoreRegistry(fx.reg), RunningDir: dir})
	p.client.running = "" // each record is written here, for another process
	census := func() int { return p.srv.ref.Snapshot().Census }

	// Each stands for a runtime: its record is written, then it registers.
	reg := func(sid string) func() {
		cmd, start := startSleeper(t)
		writeRecord(t, dir, record(sid, cmd.Process.Pid, start))
		p.mustRegister(sid, "local/orchestrator", "0.1.0", "")
		return func() { cmd.Process.Kill(); cmd.Wait() }
	}
	killA := reg("ses_kill_a")
	killB := reg("ses_kill_b")
	// c never writes a record: no capsule stands behind it.
	cred := p.mustRegister("ses_kill_c", "local/orchestrator", "0.1.0", "")
	if got := census(); got != 2 {
		t.Fatalf("census %d, want 2 (a and b; c has no record)", got)
	}

	// b is killed and its record pruned, as `mur ps` does: the watch on its
	// process is the evidence, read at the next census read.
	killB()
	os.Remove(filepath.Join(dir, "ses_kill_b.json"))
	waitCensus(t, p.srv.ref, 1)

	expect(t, "spawn", p.spawn(cred, "local/worker-a", "0.1.0"), 200, "")
	expect(t, "spawn", p.spawn(cred, "local/worker-a", "0.1.0"), 200, "")
	expect(t, "spawn at the ceiling", p.spawn(cred, "local/worker-a", "0.1.0"), 403, msgCeiling(3, 3))

	killA()
	waitCensus(t, p.srv.ref, 2) // the two reservations
	expect(t, "spawn with a gone", p.spawn(cred, "local/worker-a", "0.1.0"), 200, "")
	for _, sid := range []string{"ses_kill_a", "ses_kill_b"} {
		st, err := p.srv.ref.Status(sid)
		if err != nil || st.Status != statusFailed {
			t.Errorf("status of %s: %+v %v, want failed", sid, st, err)
		}
	}
	if st, _ := p.srv.ref.Status("ses_kill_c"); st.Status != statusRunning {
		t.Errorf("ses_kill_c: %+v, want running (uncounted, not ended)", st)
	}
}

// waitCensus reads the census, as a request would, until it is want (an
// exit reaches its pidfd asynchronously to the kill).
func waitCensus(t *testing.T, r *Referee, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := r.Snapshot().Census
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("census %d, want %d", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
