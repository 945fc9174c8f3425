package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorBuiltInDriver: a driver mur has built in, declared and not
// installed, is what mur run uses, so doctor passes it (as text and JSON)
// instead of failing it E-REG-001.
func TestDoctorBuiltInDriver(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot(), "examples", "hello-agent", "murmur.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	proj := t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, "murmur.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	homeDir := t.TempDir()
	r := runMur(t, homeDir, proj, nil, "doctor")
	if !strings.Contains(r.Stdout, "ok    murmur/driver-replay@1.0.0 (driver) not installed: built into mur") ||
		strings.Contains(r.Stdout, "FAIL  murmur/driver-replay") {
		t.Errorf("doctor: %+v", r)
	}
	j := runMur(t, homeDir, proj, nil, "doctor", "--json")
	if !strings.Contains(j.Stdout, `{"name":"murmur/driver-replay","version":"1.0.0","ok":true,"runtime":"driver","store":"built-in"`) {
		t.Errorf("doctor --json: %+v", j)
	}
}
