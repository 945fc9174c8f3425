package wasmhost

import (
	"strings"
	"testing"
)

func driverRun(t *testing.T, rc RunConfig) *Instance {
	t.Helper()
	rc.GoIO = true
	return instantiate(t, "wasiio.wat", rc)
}

// TestDriverIOResources: a dropped pollable frees its Go state (and the
// handles lifted for its calls), and the cap on a run's host resources
// applies to Go streams and pollables as to wasi:http's.
func TestDriverIOResources(t *testing.T) {
	i := driverRun(t, RunConfig{})
	if _, err := i.Call(bg, "", "churn", uint32(10_000)); err != nil {
		t.Fatal(err)
	}
	if n, m := len(i.run.objs), len(i.run.resources); n > 2 || m > 2 {
		t.Fatalf("after 10,000 dropped pollables the run holds %d objects and %d handles", n, m)
	}
	defer func(n int) { maxHostObjects = n }(maxHostObjects)
	maxHostObjects = 1000
	_, err := i.Call(bg, "", "subscribe", uint32(2000))
	if te := asTrap(t, err); !strings.Contains(te.Message, "the host allows 1000") {
		t.Fatalf("trap %q", te.Message)
	}
}

// TestRunKindsLinkApart: one component, run as a capsule (wasip2) and as a
// driver (Go wasi:io): each kind gets its own linker, and both read stdin.
func TestRunKindsLinkApart(t *testing.T) {
	for _, goIO := range []bool{false, true, false} {
		i := instantiate(t, "wasiio.wat", RunConfig{GoIO: goIO, WASI: WASI{Stdin: []byte("xyz")}})
		if v, err := i.Call(bg, "", "read-stdin", uint64(8)); err != nil || v != uint32(3) {
			t.Fatalf("GoIO %v: read-stdin = %v, %v", goIO, v, err)
		}
		if i.run.goIO != goIO {
			t.Fatalf("GoIO %v: Go wasi:io %v", goIO, i.run.goIO)
		}
	}
}
