package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The floor runs examples/hello-script with its echo-tool to the end (the
// capsule's out/result.txt written), compiling both into the cache on the
// first run and loading them from it on the second; anything else it is
// given is refused with its usage.
func TestFloorRunsHelloScript(t *testing.T) {
	root := filepath.Join("..", "..", "examples")
	capsule := filepath.Join(root, "hello-script", "hello-script.wasm")
	tool := filepath.Join(root, "echo-tool", "echo-tool.wasm")
	cache := t.TempDir()
	for i := range 2 {
		if err := run([]string{"-cache", cache, capsule, tool}); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	entries, err := os.ReadDir(cache)
	if err != nil || len(entries) == 0 {
		t.Fatalf("the cache holds %d entries (%v), want the two components'", len(entries), err)
	}
	for _, args := range [][]string{nil, {capsule, tool}, {"-cache", cache, capsule}} {
		if err := run(args); err == nil {
			t.Errorf("run(%q) = nil, want the usage", args)
		}
	}
}
