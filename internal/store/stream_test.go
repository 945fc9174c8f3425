package store

import (
	"os"
	"sync"
	"testing"
	"time"
)

// TestResolveManifestShares: repeated and concurrent resolves of one file
// share one pass (the same parsed manifest comes back), the result matches
// Resolve's, and a change to the file's identity makes a new pass.
func TestResolveManifestShares(t *testing.T) {
	s := At(t.TempDir())
	if _, err := s.Publish(artifactZip(t, "acme/lint", "1.0.0", "payload"), false); err != nil {
		t.Fatal(err)
	}
	full, err := s.Resolve("acme/lint", "1.0.0", noSecrets)
	if err != nil {
		t.Fatal(err)
	}
	c := NewManifestCache(2)
	const n = 16
	got := make([]*Resolved, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.ResolveManifest("acme/lint", "1.0.0", c)
			if err != nil {
				t.Error(err)
			}
			got[i] = r
		}()
	}
	wg.Wait()
	for i, r := range got {
		if r == nil {
			t.Fatalf("resolve %d failed", i)
		}
		if r.Manifest != got[0].Manifest {
			t.Fatalf("resolve %d made a pass of its own", i)
		}
		if r.SHA256 != full.SHA256 || r.Name != full.Name || r.Version != full.Version ||
			r.Runtime != full.Runtime || r.ZipPath != full.ZipPath || r.Archive != nil ||
			r.Manifest.Description != full.Manifest.Description {
			t.Fatalf("ResolveManifest %+v disagrees with Resolve %+v", r, full)
		}
	}
	again, err := s.ResolveManifest("acme/lint", "1.0.0", c)
	if err != nil || again.Manifest != got[0].Manifest {
		t.Fatalf("a repeated resolve made a new pass: %v", err)
	}
	// A new mtime is a new identity: the file is read again.
	zp, _, _ := s.Paths("acme/lint", "1.0.0")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(zp, later, later); err != nil {
		t.Fatal(err)
	}
	fresh, err := s.ResolveManifest("acme/lint", "1.0.0", c)
	if err != nil || fresh.Manifest == got[0].Manifest || fresh.SHA256 != full.SHA256 {
		t.Fatalf("a changed file was not read again: %v", err)
	}
}
