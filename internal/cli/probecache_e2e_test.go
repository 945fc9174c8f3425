package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestHostProbeKept: a launch that holds native commands keeps the host
// probe's answer under the user's home, and the next launch reads the same
// tier from it (what is kept, and when it is trusted: internal/contain's
// probe cache tests).
func TestHostProbeKept(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := agentProject(t, homeDir, base, "capabilities:\n  shell:\n    allow: [bash]\n", agentTranscript)
	file := filepath.Join(homeDir, ".murmur", "host-probe.json")
	tier := func() string {
		t.Helper()
		r := runMur(t, homeDir, proj, nil, "run", "--explain-scope", "--json")
		if r.Code != 0 {
			t.Fatalf("--explain-scope --json: %+v", r)
		}
		var out struct {
			Achieved string `json:"achieved"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, r.Stdout)
		}
		return out.Achieved
	}
	first := tier()
	fi, err := os.Stat(file)
	if first != "sealed" {
		if err == nil {
			t.Fatalf("this host achieves %s, yet its probe answer was kept", first)
		}
		t.Skipf("this host achieves %s: a probe answer that misses a mechanism is never kept", first)
	}
	if err != nil {
		t.Fatalf("no probe answer kept: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", file, fi.Mode().Perm())
	}
	if again := tier(); again != first {
		t.Fatalf("the kept answer gives %s, the probe gave %s", again, first)
	}
	// A file that is not a kept answer is probed past and replaced.
	if err := os.WriteFile(file, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if again := tier(); again != first {
		t.Fatalf("after a torn file: %s, want %s", again, first)
	}
	if b, _ := os.ReadFile(file); !json.Valid(b) {
		t.Fatalf("the torn file was not replaced: %q", b)
	}
}
