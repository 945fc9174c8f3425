package cli_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// mur run --explain-scope --json prints one JSON object of the documented
// shape (docs/containment.md), and nothing else on stdout.
func TestExplainScopeJSON(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := agentProject(t, homeDir, base, "capabilities:\n  shell:\n    allow: [bash]\n", agentTranscript)
	r := runMur(t, homeDir, proj, nil, "run", "--explain-scope", "--json")
	if r.Code != 0 {
		t.Fatalf("--explain-scope --json: %+v", r)
	}
	if n := strings.Count(strings.TrimSpace(r.Stdout), "\n"); n != 0 {
		t.Fatalf("stdout holds %d lines, want one JSON object:\n%s", n+1, r.Stdout)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.Stdout), &raw); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.Stdout)
	}
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"achieved", "declared", "detail", "effective_grants", "floor_met", "from", "kind", "mcp", "mechanism", "name", "network", "not_protected", "resources", "version", "warnings"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	var s struct {
		Declared, Achieved, Mechanism string
		FloorMet                      bool `json:"floor_met"`
		Resources                     struct {
			Plane   string
			Rlimits map[string]uint64
			Cgroup  map[string]uint64
		}
		EffectiveGrants struct {
			Containment struct{ Declared, Achieved, Mechanism string }
		} `json:"effective_grants"`
		NotProtected []string `json:"not_protected"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil {
		t.Fatal(err)
	}
	if s.Declared != "none" || s.Achieved == "" || !s.FloorMet || s.Mechanism == "" {
		t.Errorf("the decision: %+v", s)
	}
	if s.EffectiveGrants.Containment.Achieved != s.Achieved || s.EffectiveGrants.Containment.Declared != "none" {
		t.Errorf("effective_grants.containment %+v", s.EffectiveGrants.Containment)
	}
	if s.Resources.Rlimits["max_processes"] != 128 || s.Resources.Plane == "" {
		t.Errorf("resources %+v", s.Resources)
	}
	// Root on this machine kind has cgroup v1 (the reference study).
	if os.Geteuid() == 0 && (s.Resources.Plane == "rlimits" || s.Resources.Cgroup["cgroup_pids_max"] != 256) {
		t.Errorf("as root: resources %+v, want a cgroup plane", s.Resources)
	}
	if len(s.NotProtected) == 0 {
		t.Error("no not_protected lines")
	}
	// The text form says the same plane.
	r = runMur(t, homeDir, proj, nil, "run", "--explain-scope")
	if !strings.Contains(r.Stdout, "resources: rlimits on every command") || !strings.Contains(r.Stdout, s.Resources.Plane) {
		t.Errorf("--explain-scope's resources: line does not name %q:\n%s", s.Resources.Plane, r.Stdout)
	}
}
