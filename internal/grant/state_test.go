package grant

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
)

func TestPrepareStateStores(t *testing.T) {
	h := t.TempDir()
	if err := PrepareStateStores(h, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{".murmur/state", ".murmur/state/a", ".murmur/state/b"} {
		if st, err := os.Lstat(filepath.Join(h, d)); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", d, st, err)
		}
	}
	os.Remove(filepath.Join(h, ".murmur/state/b"))
	os.Symlink(t.TempDir(), filepath.Join(h, ".murmur/state/b"))
	err := PrepareStateStores(h, []string{"a", "b"})
	if diag.Code(err) != "E-CAP-009" || !strings.Contains(err.Error(), "the state store b at "+filepath.Join(h, ".murmur/state/b")+" cannot be used: ") ||
		!strings.Contains(err.Error(), "is a symbolic link") {
		t.Fatalf("a store that is a link: %v", err)
	}
}

// A second holder waits for the first, gets it once released, and one that
// cannot get it by its deadline is a *StateBusyError naming the store; a
// call nested in a holder's ctx runs under its hold.
func TestHoldState(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "s.lock")
	ctx, release, _, err := HoldState(context.Background(), "s", lock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, rel2, waited, err := HoldState(ctx, "s", lock, time.Millisecond); err != nil || waited != 0 {
		t.Fatalf("nested: %v %v", waited, err)
	} else {
		rel2()
	}
	_, _, _, err = HoldState(context.Background(), "s", lock, 30*time.Millisecond)
	var busy *StateBusyError
	if !errors.As(err, &busy) || busy.Store != "s" || !strings.Contains(err.Error(), "the state store s was held by another call") {
		t.Fatalf("busy: %v", err)
	}
	if e := EndingOf(err); e.Status != "deadline_exceeded" {
		t.Errorf("ending %s", e.Status)
	}
	// Across processes the lock file is what holds: a second open file
	// description cannot take it while this process holds it.
	if _, ok, err := TryHoldStateFile(lock); ok || err != nil {
		t.Fatalf("TryHoldStateFile while held: %v %v", ok, err)
	}
	got := make(chan time.Duration)
	go func() {
		_, rel, waited, err := HoldState(context.Background(), "s", lock, 5*time.Second)
		if err == nil {
			rel()
		}
		got <- waited
	}()
	time.Sleep(50 * time.Millisecond)
	release()
	if w := <-got; w < 40*time.Millisecond {
		t.Errorf("the second holder waited only %v", w)
	}
	rel, ok, err := TryHoldStateFile(lock)
	if !ok || err != nil {
		t.Fatalf("TryHoldStateFile once free: %v %v", ok, err)
	}
	rel()
}

// The lock file replaced (mur state rm) while a process keeps the old one
// open: the next hold locks the new file, so a TryHoldStateFile on it fails.
func TestHoldStateFollowsAReplacedLockFile(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "r.lock")
	_, rel, _, err := HoldState(context.Background(), "r", lock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rel()
	os.Remove(lock)
	_, rel, _, err = HoldState(context.Background(), "r", lock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer rel()
	if _, ok, _ := TryHoldStateFile(lock); ok {
		t.Fatal("the hold is on a file no longer at the path")
	}
}

func TestStateBytes(t *testing.T) {
	d := t.TempDir()
	os.WriteFile(filepath.Join(d, "f"), make([]byte, 100), 0o600)
	if e := StateBytes("x", d, 100); e != nil {
		t.Fatalf("at the bound: %v", e)
	}
	e := StateBytes("x", d, 99)
	if e == nil || e.Error() != "E-RUN-058: the state store x holds 100 bytes, past capabilities.resources.state_max_bytes (99)" {
		t.Fatalf("past the bound: %v", e)
	}
	if EndingOf(e).Status != "resource_limit" {
		t.Error("not a resource_limit ending")
	}
}

// BenchmarkStateLock is the per-call cost of a store's lock, uncontended:
// take and release, as each component call that sees a store does.
func BenchmarkStateLock(b *testing.B) {
	lock := filepath.Join(b.TempDir(), "bench.lock")
	ctx := context.Background()
	for b.Loop() {
		_, rel, _, err := HoldState(ctx, "bench", lock, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		rel()
	}
}
