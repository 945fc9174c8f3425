package delegate

import (
	"slices"
	"strings"
	"testing"
)

// TestChildEnvFormation: a parent in a formation hands its children its
// formation id and none of the other formation variables, even when the
// parent's env.allow lists them.
func TestChildEnvFormation(t *testing.T) {
	const id = "frm_00112233445566778899aabbccddeeff"
	parent := map[string]string{"PATH": "/bin", "HOME": "/h", EnvFormationID: id,
		EnvFormationChannel: "4", EnvFormationPeers: "a=http://a.formation.invalid", EnvFormationLifeline: "5", "GITHUB_TOKEN": "t"}
	lookup := func(k string) (string, bool) { v, ok := parent[k]; return v, ok }
	for _, formation := range []string{id, ""} {
		r := &Runtime{cfg: Config{Lookup: lookup, FormationID: formation, RoostURL: "http://127.0.0.1:7700",
			EnvAllow: []string{"GITHUB_TOKEN", EnvFormationChannel, EnvFormationPeers, EnvFormationLifeline, EnvFormationID}}}
		env := r.childEnv(&delegation{id: "dlg_1", envAllow: r.cfg.EnvAllow})
		has := func(kv string) bool { return slices.Contains(env, kv) }
		if formation != "" && !has(EnvFormationID+"="+id) {
			t.Errorf("the child lacks the formation id: %v", env)
		}
		if formation == "" && slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, EnvFormationID+"=") }) {
			t.Errorf("a parent in no formation handed one on: %v", env)
		}
		for _, kv := range env {
			if strings.HasPrefix(kv, "MURMUR_FORMATION_") && !strings.HasPrefix(kv, EnvFormationID+"=") {
				t.Errorf("the child got %s", kv)
			}
		}
		if !has("GITHUB_TOKEN=t") {
			t.Errorf("an allowed name was not copied: %v", env)
		}
	}
}
