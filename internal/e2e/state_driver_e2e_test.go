package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A stored driver whose entry declares a store is handed it as /state
// through the real binary: the driver-state fixture counts its turns there,
// so a second session's answer continues the first's count, and
// --explain-scope names the driver's store.
func TestStateStoreDriver(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	PublishFixture(t, homeDir, filepath.Join(base, "driver-state"), "driver-state",
		"name: local/driver-state\nversion: 0.1.0\nruntime: driver\ndescription: Counts its turns in its state store.\n")
	proj := filepath.Join(base, "turner")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte(`name: turner
version: 0.1.0
artifacts:
  - name: local/driver-state
    version: 0.1.0
    runtime: driver
    capabilities:
      state: {store: turns}
inference:
  model: none
  driver:
    artifact: local/driver-state
`), 0o644)
	if r := RunMur(t, homeDir, proj, nil, "run", "--explain-scope"); r.Code != 0 ||
		!strings.Contains(r.Stdout, "  local/driver-state: turns -> $HOME/.murmur/state/turns") {
		t.Fatalf("--explain-scope: %+v", r)
	}
	for i, want := range []string{"turn 1", "turn 2"} {
		r := RunMur(t, homeDir, proj, nil, "run", "--json", "--task", "count")
		if r.Code != 0 {
			t.Fatalf("run %d: %+v", i, r)
		}
		got, _ := os.ReadFile(filepath.Join(ParseReady(t, r.Stdout).RecordsDir, "out", "result.txt"))
		if string(got) != want {
			t.Errorf("run %d answered %q, want %q", i, got, want)
		}
	}
	store := filepath.Join(homeDir, ".murmur", "state", "turns")
	b, err := os.ReadFile(filepath.Join(store, "turns"))
	if err != nil || strings.TrimSpace(string(b)) != "2" {
		t.Fatalf("the driver's store holds %q (%v), want 2", b, err)
	}
	if fi, err := os.Stat(store); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the store folder: %v %v", fi, err)
	}
}
