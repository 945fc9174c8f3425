package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echoRegistry answers murmur:tool-registry#invoke with plain Values: the
// echo tool passes its input's data back.
func echoRegistry(calls *atomic.Int32) *Host {
	h := NewHost()
	h.Define(toolRegistry, "invoke", func(ctx context.Context, a []Value) (Value, error) {
		calls.Add(1)
		if a[0] != "echo" {
			return Err("tool not allowlisted: " + a[0].(string)), nil
		}
		return Ok(toolResult("passed", a[1].(Record).Get("data"))), nil
	})
	return h
}

func TestHostImportToolRegistry(t *testing.T) {
	// capsule.wat has the import shapes of components built by other
	// toolchains: a types-only murmur:tool/run instance, WASI @0.2.9/@0.2.12.
	var calls atomic.Int32
	i := instantiate(t, "capsule.wat", RunConfig{Host: echoRegistry(&calls), WASI: WASI{Args: []string{"capsule"}}})
	if err := callCapsuleRun(i); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Fatalf("invoke called %d times", calls.Load())
	}
}

func TestHostImportAnswersWrongly(t *testing.T) {
	// The guest checks the answer and traps on anything but ok(passed, "hi").
	h := NewHost()
	h.Define(toolRegistry, "invoke", func(ctx context.Context, a []Value) (Value, error) {
		return Err("no such tool"), nil
	})
	i := instantiate(t, "capsule.wat", RunConfig{Host: h})
	te := asTrap(t, callCapsuleRun(i))
	if !strings.Contains(te.Message, "unreachable") || te.Err != nil {
		t.Fatalf("trap %+v", te)
	}
}

func TestUnknownImportNamesCapability(t *testing.T) {
	// Nothing granted: the component still instantiates, and its call of the
	// import fails naming the capability.
	i := instantiate(t, "capsule.wat", RunConfig{})
	err := callCapsuleRun(i)
	te := asTrap(t, err)
	want := "capability not granted: murmur:tool-registry/invoke@0.1.0#invoke"
	if te.Message != want {
		t.Fatalf("message %q, want %q", te.Message, want)
	}
	var ce *CapabilityError
	if !errors.As(err, &ce) || ce.Name != "murmur:tool-registry/invoke@0.1.0#invoke" {
		t.Fatalf("cause %#v", te.Err)
	}
}

func TestHostImportErrors(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name string
		f    HostFunc
		want string
	}{
		{"error", func(ctx context.Context, a []Value) (Value, error) { return nil, boom }, "boom"},
		{"panic", func(ctx context.Context, a []Value) (Value, error) { panic("kaboom") }, "panicked: kaboom"},
		{"wrong type", func(ctx context.Context, a []Value) (Value, error) { return "x", nil }, "invalid value"},
		{"bad utf-8", func(ctx context.Context, a []Value) (Value, error) {
			return Err("\xff\xfe"), nil
		}, "not valid UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := NewHost()
			h.Define("murmur:tool-registry/invoke", "invoke", c.f)
			i := instantiate(t, "capsule.wat", RunConfig{Host: h})
			err := callCapsuleRun(i)
			te := asTrap(t, err)
			if !strings.Contains(te.Message, c.want) || te.Err == nil {
				t.Fatalf("trap %+v, want message containing %q", te, c.want)
			}
			if c.name == "error" && !errors.Is(err, boom) {
				t.Fatal("the host error is not in the chain")
			}
		})
	}
}

func TestHostImport100k(t *testing.T) {
	var n atomic.Int64
	h := NewHost()
	h.Define("murmur:bench/ping", "ping", func(ctx context.Context, a []Value) (Value, error) {
		n.Add(1)
		return a[0].(uint32) + 1, nil
	})
	i := instantiate(t, "ping.wat", RunConfig{Host: h})
	v, err := i.Call(bg, "", "loop", uint32(100_000))
	if err != nil {
		t.Fatal(err)
	}
	if v != uint32(100_000) || n.Load() != 100_000 {
		t.Fatalf("loop = %v after %d host calls", v, n.Load())
	}
}

func TestHostFuncWaitingPastDeadline(t *testing.T) {
	// A Go host function that blocks until its context ends: the call is
	// stopped at deadline+grace and reported waiting on that import.
	h := NewHost()
	h.Define("murmur:bench/ping", "ping", func(ctx context.Context, a []Value) (Value, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	i := instantiate(t, "ping.wat", RunConfig{Host: h, Limits: Limits{Deadline: 100e6, Grace: 200e6}})
	_, err := i.Call(bg, "", "loop", uint32(1))
	de := asDeadline(t, err)
	if !de.Waiting || de.Call != "murmur:bench/ping#ping" {
		t.Fatalf("got %+v", de)
	}
}

// TestHostFuncCallsItsOwnInstance: a host function calling back into the
// instance it serves (with the context it was given) gets an error instead
// of waiting forever on the instance's lock; the outer call goes on.
func TestHostFuncCallsItsOwnInstance(t *testing.T) {
	var inst *Instance
	nested := make(chan error, 1)
	h := NewHost()
	h.Define("murmur:bench/ping", "ping", func(ctx context.Context, a []Value) (Value, error) {
		_, err := inst.Call(ctx, "", "loop", uint32(1))
		nested <- err
		return a[0].(uint32) + 1, nil
	})
	inst = instantiate(t, "ping.wat", RunConfig{Host: h})
	done := make(chan error, 1)
	go func() {
		v, err := inst.Call(bg, "", "loop", uint32(1))
		if err == nil && v != uint32(1) {
			err = fmt.Errorf("loop = %v", v)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a host function calling its own instance deadlocked")
	}
	if err := <-nested; err == nil || !strings.Contains(err.Error(), "own host functions") {
		t.Fatalf("nested call: %v", err)
	}
}

// TestHostFuncIgnoringItsContext: a Go host function that ignores its
// context and blocks for long is abandoned by the watchdog shortly after
// deadline + grace, and the ending names it.
func TestHostFuncIgnoringItsContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h := NewHost()
	h.Define("murmur:bench/ping", "ping", func(ctx context.Context, a []Value) (Value, error) {
		<-release // not ctx.Done()
		return a[0].(uint32) + 1, nil
	})
	i := instantiate(t, "ping.wat", RunConfig{Host: h, Limits: Limits{Deadline: 100 * time.Millisecond, Grace: 100 * time.Millisecond}})
	ended := make(chan error, 1)
	go func() { _, err := i.Call(bg, "", "loop", uint32(1)); ended <- err }()
	select {
	case err := <-ended:
		de := asDeadline(t, err)
		if !de.Waiting || de.Call != "murmur:bench/ping#ping" {
			t.Fatalf("got %+v", de)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a host function ignoring its context held the caller")
	}
}

func TestHostImportWrappedDeadline(t *testing.T) {
	// A host function that wraps the deadline error it got (as callers
	// adding context do) still ends the call as a deadline, not a trap.
	h := NewHost()
	h.Define(toolRegistry, "invoke", func(ctx context.Context, a []Value) (Value, error) {
		return nil, fmt.Errorf("invoking %v: %w", a[0], &DeadlineError{Waiting: true, Call: "murmur:probe/wait#wait"})
	})
	i := instantiate(t, "capsule.wat", RunConfig{Host: h})
	err := callCapsuleRun(i)
	if te := (*TrapError)(nil); errors.As(err, &te) {
		t.Fatalf("ended as a trap: %v", err)
	}
	de := asDeadline(t, err)
	if !de.Waiting || de.Call != "murmur:probe/wait#wait" {
		t.Fatalf("deadline %+v", de)
	}
}
