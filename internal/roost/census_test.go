package roost

import (
	"os"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/running"
)

// waitCount polls the set until it reports want (a process's exit reaches
// its pidfd asynchronously to the kill that caused it).
func waitCount(t *testing.T, s *startupSet, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := s.count()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("census counts %d start-up capsules, want %d", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStartupSetZombie: a capsule whose process has exited but not been
// reaped still holds its pid, and Alive counts it, as mur ps would; it stops
// counting once reaped, and is never counted again.
func TestStartupSetZombie(t *testing.T) {
	dir := home.Running(t.TempDir())
	os.MkdirAll(dir, 0o700)
	a, aStart := startSleeper(t)
	b, bStart := startSleeper(t)
	writeRecord(t, dir, record("ses_a", a.Process.Pid, aStart))
	writeRecord(t, dir, record("ses_b", b.Process.Pid, bStart))
	set, cnt, err := scanStartup(dir)
	if err != nil || cnt.Live != 2 {
		t.Fatalf("scan: %+v %v", cnt, err)
	}
	defer set.close()
	if len(set.fds) != 2 {
		t.Fatalf("%d pidfds opened, want 2", len(set.fds))
	}
	a.Process.Kill() // a zombie until Wait
	time.Sleep(50 * time.Millisecond)
	if got := set.count(); got != 2 {
		t.Fatalf("a zombie stopped counting: %d", got)
	}
	a.Wait()
	waitCount(t, set, 1)
	b.Process.Kill()
	b.Wait()
	waitCount(t, set, 0)
	if len(set.fds) != 0 || len(set.slow) != 0 {
		t.Fatalf("gone records still watched: %d fds, %d slow", len(set.fds), len(set.slow))
	}
}

// TestStartupSetSlowPath: records without a pidfd are asked Alive on every
// read and give the same answers.
func TestStartupSetSlowPath(t *testing.T) {
	dir := home.Running(t.TempDir())
	os.MkdirAll(dir, 0o700)
	a, aStart := startSleeper(t)
	writeRecord(t, dir, record("ses_a", a.Process.Pid, aStart))
	pid, start, _ := running.Self()
	writeRecord(t, dir, record("ses_self", pid, start))
	set, _, err := scanStartup(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer set.close()
	for _, r := range append([]*startupRecord(nil), set.owner...) {
		set.moveToSlow(r)
	}
	set.fds, set.owner = nil, nil
	if got := set.count(); got != 2 {
		t.Fatalf("slow path counts %d, want 2", got)
	}
	a.Process.Kill()
	a.Wait()
	if got := set.count(); got != 1 {
		t.Fatalf("slow path after exit counts %d, want 1", got)
	}
	// Absorbing a registered session's record stops counting it once.
	if !set.absorb("ses_self") || set.absorb("ses_self") {
		t.Fatal("absorb did not take the record exactly once")
	}
	if got := set.count(); got != 0 {
		t.Fatalf("after absorb counts %d", got)
	}
}

// TestStartupSetAbsorbWatched: an absorbed record stops counting but stays
// watched, so that a release after its session deregisters counts it again
// only while its process lives (issue 14 item 5).
func TestStartupSetAbsorbWatched(t *testing.T) {
	dir := home.Running(t.TempDir())
	os.MkdirAll(dir, 0o700)
	a, aStart := startSleeper(t)
	b, bStart := startSleeper(t)
	writeRecord(t, dir, record("ses_a", a.Process.Pid, aStart))
	writeRecord(t, dir, record("ses_b", b.Process.Pid, bStart))
	set, _, _ := scanStartup(dir)
	defer set.close()
	if !set.absorb("ses_a") || !set.absorb("ses_b") || len(set.fds) != 2 || set.count() != 0 {
		t.Fatalf("absorb: fds %d count %d", len(set.fds), set.count())
	}
	if set.absorb("ses_a") {
		t.Fatal("absorbed twice")
	}
	// ses_a's process exits while its session runs: nothing changes in the
	// count, and its release hands nothing back.
	a.Process.Kill()
	a.Wait()
	waitDone(t, set, "ses_a")
	if set.count() != 0 || set.release("ses_a") || set.count() != 0 {
		t.Fatalf("a gone absorbed record counted: %d", set.count())
	}
	// ses_b's session deregisters while its process lives: it counts again,
	// until its exit.
	if !set.release("ses_b") || set.count() != 1 {
		t.Fatalf("released live record: count %d, want 1", set.count())
	}
	b.Process.Kill()
	b.Wait()
	waitCount(t, set, 0)
	if set.absorb("ses_nobody") || set.release("ses_nobody") {
		t.Fatal("an unknown id absorbed or released")
	}
}

// waitDone polls the set until the record with this id is found gone.
func waitDone(t *testing.T, s *startupSet, sid string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !s.byID[sid].done {
		if time.Now().After(deadline) {
			t.Fatalf("%s never found gone", sid)
		}
		s.count()
		time.Sleep(5 * time.Millisecond)
	}
}
