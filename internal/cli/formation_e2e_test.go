package cli_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestFormationVariables: formations are not built yet, but every launch
// checks their variables. A formation id is shown on the readiness line; a
// value that is not one is E-RUN-044, and a peers list in mur run's own
// environment is E-RUN-046 — both before any session exists.
func TestFormationVariables(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "probe"), "name: probe\nversion: 1.0.0\n", fixture(t, "capsule-probe.wasm"))
	const id = "frm_00112233445566778899aabbccddeeff"

	r := runMur(t, homeDir, proj, []string{"MURMUR_FORMATION_ID=" + id}, "run", "--json", "--task", "task")
	if r.Code != 0 {
		t.Fatalf("with a formation id: %+v", r)
	}
	var ready struct {
		SessionID   string `json:"session_id"`
		FormationID string `json:"formation_id"`
	}
	first, _, _ := strings.Cut(r.Stdout, "\n")
	if err := json.Unmarshal([]byte(first), &ready); err != nil || ready.FormationID != id || !strings.HasPrefix(ready.SessionID, "ses_") {
		t.Fatalf("ready line %q: %+v %v", first, ready, err)
	}
	plain := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "task")
	if plain.Code != 0 || strings.Contains(plain.Stdout, "formation_id") {
		t.Fatalf("without one, the ready line says nothing of formations: %+v", plain)
	}
	before := len(sessionsUnder(homeDir))

	for _, c := range []struct{ env, code string }{
		{"MURMUR_FORMATION_ID=frm_nothex", "E-RUN-044"},
		{"MURMUR_FORMATION_PEERS=a=http://a.formation.invalid", "E-RUN-046"},
		{"MURMUR_FORMATION_LIFELINE=3", "E-RUN-046"},
	} {
		r := runMur(t, homeDir, proj, []string{c.env}, "run", "--json", "--task", "task")
		if r.Code == 0 || !jsonErrorOnly(r.Stdout, c.code) || !strings.Contains(r.Stderr, "error["+c.code+"]") {
			t.Errorf("%s: %+v", c.env, r)
		}
	}
	if after := len(sessionsUnder(homeDir)); after != before {
		t.Errorf("a refused launch made a session: %d sessions, %d before", after, before)
	}
}
