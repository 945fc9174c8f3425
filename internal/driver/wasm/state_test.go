package wasm_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/driver/wasm"
	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/trace"
)

// stateDriver is the driver-state fixture (a Go-kit driver that counts its
// turns in /state/turns) handed the store name of a fresh home.
func stateDriver(t *testing.T, store string, max int64, deadline time.Duration) (*wasm.Driver, grant.StateCall) {
	t.Helper()
	src, err := os.ReadFile("../../../testdata/components/driver-state/driver-state.wasm")
	if err != nil {
		t.Fatal(err)
	}
	h := t.TempDir()
	if err := grant.PrepareStateStores(h, []string{store}); err != nil {
		t.Fatal(err)
	}
	st := grant.StateCall{Name: store, Dir: home.StateStore(h, store), Lock: home.StateLock(h, store), MaxBytes: max}
	d, err := wasm.New(wasm.Config{Engine: testEngine, Name: "local/driver-state", Version: "1.0.0", Component: src,
		Limits: limits(deadline), Logger: slog.New(slog.DiscardHandler), State: &st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, st
}

func turns(t *testing.T, st grant.StateCall) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(st.Dir, "turns"))
	return strings.TrimSpace(string(b))
}

// A stored driver sees its artifact's store as /state, across calls (and
// drivers: a later one reads what the last left), holds the store's lock
// for the whole call, does not run when the lock is not got within its
// deadline (deadline_exceeded, naming the store), and is stopped past
// state_max_bytes (resource_limit, E-RUN-058) — and not run at all while
// the store is already past it.
func TestStoredDriverStateStore(t *testing.T) {
	ctx := context.Background()
	d, st := stateDriver(t, "counts", 1<<20, 2*time.Second)
	if d.StateStore() != "counts" {
		t.Fatalf("StateStore() = %q", d.StateStore())
	}
	for i, want := range []string{"turn 1", "turn 2"} {
		r, err := d.Call(ctx, userRequest("count"), nil)
		if err != nil || r.Text() != want {
			t.Fatalf("call %d: %v %+v", i, err, r)
		}
	}
	if got := turns(t, st); got != "2" {
		t.Fatalf("the store holds %q, want 2", got)
	}
	if fi, err := os.Stat(st.Dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("store folder: %v %v", fi.Mode(), err)
	}

	// While a call runs (it sleeps 600 ms after writing), the store's lock
	// is held: another holder waiting 100 ms does not get it.
	done := make(chan error, 1)
	go func() {
		_, err := d.Call(ctx, userRequest("count, hold 600"), nil)
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for turns(t, st) != "3" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	_, _, _, err := grant.HoldState(ctx, st.Name, st.Lock, 100*time.Millisecond)
	var busy *grant.StateBusyError
	if !errors.As(err, &busy) {
		t.Fatalf("during a call, HoldState = %v, want a StateBusyError", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("held call: %v", err)
	}

	// The lock held elsewhere for the whole deadline: the call does not run.
	_, release, _, err := grant.HoldState(ctx, st.Name, st.Lock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	busyD, err := wasm.New(wasm.Config{Engine: testEngine, Name: "local/driver-state", Version: "1.0.0",
		Component: mustRead(t, "../../../testdata/components/driver-state/driver-state.wasm"),
		Limits:    limits(200 * time.Millisecond), Logger: slog.New(slog.DiscardHandler), State: &st})
	if err != nil {
		t.Fatal(err)
	}
	defer busyD.Close()
	_, err = busyD.Call(ctx, userRequest("count"), nil)
	release()
	if status, _ := wasm.Ending(err); status != trace.EndDeadlineExceeded || !errors.As(err, &busy) ||
		!strings.Contains(err.Error(), "the state store counts was held by another call") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("busy store: %s %v", status, err)
	}
	if got := turns(t, st); got != "3" {
		t.Fatalf("a call that did not get the lock ran: the store holds %q", got)
	}

	// Past state_max_bytes during the call, then already past at the next.
	small, sst := stateDriver(t, "small", 4096, 2*time.Second)
	for i, req := range []string{"count, pad 10000", "count"} {
		_, err := small.Call(ctx, userRequest(req), nil)
		var sl *grant.StateLimitError
		if status, _ := wasm.Ending(err); status != trace.EndResourceLimit || !errors.As(err, &sl) ||
			!strings.Contains(err.Error(), "E-RUN-058: the state store small holds ") ||
			!strings.Contains(err.Error(), "past capabilities.resources.state_max_bytes (4096)") {
			t.Fatalf("call %d past the limit: %s %v", i, status, err)
		}
		var de *driver.Error
		if !errors.As(err, &de) || de.Kind != driver.KindProvider {
			t.Fatalf("call %d: not a provider error: %#v", i, err)
		}
	}
	if got := turns(t, sst); got != "1" {
		t.Fatalf("a call on a store already past the limit ran: the store holds %q", got)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
