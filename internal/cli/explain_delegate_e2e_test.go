package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExplainScopeDelegateTask: --explain-scope's detail line says whether
// the capsule has delegate-task, from its spawn.allow, for agent and script
// capsules, in the text and the --json forms. Issue 22 item 19: it said
// "delegate-task is not provided" for every capsule.
func TestExplainScopeDelegateTask(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	agent := agentProject(t, homeDir, base, "capabilities:\n  spawn:\n    allow: [local/worker, acme/reviewer]\n", agentTranscript)
	plainAgent := agentProject(t, homeDir, filepath.Join(base, "plain"), "", agentTranscript)
	wasm, err := os.ReadFile(filepath.Join(repoRoot(), delegatorWasm))
	if err != nil {
		t.Fatal(err)
	}
	script := capsule(t, filepath.Join(base, "script"), "name: deleg\nversion: 0.1.0\ncapabilities:\n  spawn:\n    allow: [local/worker]\n", wasm)
	plainScript := capsule(t, filepath.Join(base, "plain-script"), "name: plain\nversion: 0.1.0\n", wasm)
	env := []string{"MURMUR_ROOST_URL=http://127.0.0.1:9"}

	for _, tc := range []struct {
		name, dir, want string
	}{
		{"agent with spawn.allow", agent, "delegate-task is provided for local/worker, acme/reviewer (spawn.allow)"},
		{"agent without", plainAgent, "delegate-task is not provided"},
		{"script with spawn.allow", script, "delegate-task is provided for local/worker (spawn.allow)"},
		{"script without", plainScript, "delegate-task is not provided"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runMur(t, homeDir, tc.dir, env, "run", "--explain-scope")
			if r.Code != 0 {
				t.Fatalf("--explain-scope: %+v", r)
			}
			if !strings.Contains(r.Stdout, tc.want) {
				t.Errorf("the detail line does not say %q:\n%s", tc.want, r.Stdout)
			}
			provided := strings.Contains(tc.want, "is provided")
			if provided && strings.Contains(r.Stdout, "not provided") {
				t.Errorf("says delegate-task is not provided:\n%s", r.Stdout)
			}
			r = runMur(t, homeDir, tc.dir, env, "run", "--explain-scope", "--json")
			var s struct{ Detail string }
			if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil || r.Code != 0 {
				t.Fatalf("--explain-scope --json: %v %+v", err, r)
			}
			if !strings.Contains(s.Detail, tc.want) {
				t.Errorf("--json detail %q, want %q", s.Detail, tc.want)
			}
		})
	}
}
