package roost

import (
	"os"
	"testing"

	"github.com/murmur-go/murmur/internal/home"
)

// TestKilledSessionStopsCounting: a registered session killed without a
// deregistration (kill -9) is ended once the census has the evidence `mur ps`
// prunes on — its running record's process gone — so its slot is not held for
// the daemon's life. Found by the delegation tests: after three kill -9s
// under --max-live-capsules 4 every spawn was refused.
func TestKilledSessionStopsCounting(t *testing.T) {
	homeDir := t.TempDir()
	dir := home.Running(homeDir)
	os.MkdirAll(dir, 0o700)
	fx := newFixture(t)
	p := newInproc(t, Options{MaxDepth: 3, MaxConcurrent: 8, MaxLiveCapsules: 3,
		SpawnAllow: []string{"local/orchestrator"}, Registry: StoreRegistry(fx.reg), RunningDir: dir})
	census := func() int { return p.srv.ref.Snapshot().Census }

	// a: alive when the ceiling is first reached, killed afterwards.
	a, aStart := startSleeper(t)
	p.mustRegister("ses_kill_a", "local/orchestrator", "0.1.0", "")
	writeRecord(t, dir, record("ses_kill_a", a.Process.Pid, aStart))
	// b: already dead (its record stale) when the ceiling is reached.
	b, bStart := startSleeper(t)
	p.mustRegister("ses_kill_b", "local/orchestrator", "0.1.0", "")
	writeRecord(t, dir, record("ses_kill_b", b.Process.Pid, bStart))
	b.Process.Kill()
	b.Wait()
	// c: never writes a record; it keeps counting (the count errs toward refusing).
	cred := p.mustRegister("ses_kill_c", "local/orchestrator", "0.1.0", "")
	if got := census(); got != 3 {
		t.Fatalf("census %d, want 3", got)
	}

	// At the ceiling: b's stale record ends b; a is watched from now on.
	expect(t, "spawn with b gone", p.spawn(cred, "local/worker-a", "0.1.0"), 200, "")
	if got := census(); got != 3 {
		t.Fatalf("census %d after b's end and one reservation, want 3", got)
	}
	expect(t, "spawn at the ceiling", p.spawn(cred, "local/worker-a", "0.1.0"), 403, msgCeiling(3, 3))

	// a is killed: its exit, seen through the watch, ends it.
	a.Process.Kill()
	a.Wait()
	expect(t, "spawn with a gone", p.spawn(cred, "local/worker-a", "0.1.0"), 200, "")
	if got := census(); got != 3 {
		t.Fatalf("census %d, want 3 (c and two reservations)", got)
	}
	// Both ended sessions read as failed.
	for _, sid := range []string{"ses_kill_a", "ses_kill_b"} {
		st, err := p.srv.ref.Status(sid)
		if err != nil || st.Status != statusFailed {
			t.Errorf("status of %s: %+v %v, want failed", sid, st, err)
		}
	}
}
