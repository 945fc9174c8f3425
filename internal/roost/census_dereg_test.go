package roost

import (
	"os"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/home"
)

// TestDeregisterIsNotEvidence reproduces issue 14 item 5: a client registers
// on the top-level path with the session id of a capsule found running at
// start-up, then deregisters it. The deregistration is not evidence that the
// capsule is gone, so while its process lives it still counts, and the
// ceiling still holds; its exit, seen by the census, is.
func TestDeregisterIsNotEvidence(t *testing.T) {
	homeDir := t.TempDir()
	dir := home.Running(homeDir)
	os.MkdirAll(dir, 0o700)
	var sleepers = map[string]func(){}
	for _, sid := range []string{"ses_up_a", "ses_up_b", "ses_up_c"} {
		cmd, start := startSleeper(t)
		writeRecord(t, dir, record(sid, cmd.Process.Pid, start))
		sleepers[sid] = func() { cmd.Process.Kill(); cmd.Wait() }
	}
	fx := newFixture(t)
	p := newInproc(t, Options{MaxDepth: 3, MaxConcurrent: 8, MaxLiveCapsules: 4,
		SpawnAllow: []string{"local/orchestrator"}, Registry: StoreRegistry(fx.reg), RunningDir: dir})
	census := func() int { return p.srv.ref.Snapshot().Census }
	if got := census(); got != 3 {
		t.Fatalf("start-up census %d, want 3", got)
	}

	for _, sid := range []string{"ses_up_a", "ses_up_b"} {
		cred := p.mustRegister(sid, "local/orchestrator", "0.1.0", "")
		if got := census(); got != 3 {
			t.Fatalf("after registering %s: census %d, want 3 (one capsule)", sid, got)
		}
		expect(t, "deregister "+sid, p.deregister(cred, "complete"), 200, "")
		if got := census(); got != 3 {
			t.Fatalf("after deregistering %s while its process lives: census %d, want 3", sid, got)
		}
	}

	// Under a ceiling of 4 with 3 live, one more top-level session fits and
	// a spawn from it is refused at the ceiling.
	cred := p.mustRegister("ses_top", "local/orchestrator", "0.1.0", "")
	expect(t, "spawn at the ceiling", p.spawn(cred, "local/worker-a", "0.1.0"), 403, msgCeiling(4, 4))

	// The process's exit is the evidence.
	sleepers["ses_up_a"]()
	waitStartup(t, p.srv.ref, 2)
	if got := census(); got != 3 {
		t.Fatalf("after ses_up_a exited: census %d, want 3", got)
	}
}

// waitStartup reads the census, as a request would, until it counts want
// start-up capsules (an exit reaches its pidfd asynchronously to the kill).
func waitStartup(t *testing.T, r *Referee, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := r.Snapshot().Startup
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("census counts %d start-up capsules, want %d", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
