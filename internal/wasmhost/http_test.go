package wasmhost

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestResourceFromAnotherInstanceRefused(t *testing.T) {
	var captured *Resource
	h := NewHost()
	h.Define("wasi:http/types", "[constructor]fields", func(ctx context.Context, a []Value) (Value, error) {
		if captured != nil {
			return captured, nil // a handle of the first instance's store
		}
		return HostResource{Rep: 7}, nil
	})
	h.Define("wasi:http/types", "[constructor]outgoing-request", func(ctx context.Context, a []Value) (Value, error) {
		res := a[0].(*Resource)
		if rep, ok := res.HostRep(); !ok || rep != 7 {
			t.Errorf("HostRep = %d, %v", rep, ok)
		}
		captured = res
		return nil, errors.New("stop here")
	})
	first := instantiate(t, "http.wat", RunConfig{Host: h})
	if _, err := first.Call(bg, "", "attempt"); !strings.Contains(err.Error(), "stop here") {
		t.Fatalf("first: %v", err)
	}
	second := instantiate(t, "http.wat", RunConfig{Host: h})
	_, err := second.Call(bg, "", "attempt")
	if te := asTrap(t, err); !strings.Contains(te.Message, "belongs to another instance") {
		t.Fatalf("second: %v", err)
	}
}

// TestSpoolHelperCompiles: the stream helper's WAT is valid against
// wasip2's filesystem and io types (a mistyped import fails at link time).
func TestSpoolHelperCompiles(t *testing.T) {
	if _, err := testEngine.spoolHelperComponent(); err != nil {
		t.Fatal(err)
	}
}
