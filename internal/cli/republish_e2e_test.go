package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/trace"
)

// orchOtherTranscript delegates to local/other; refused, its task ends at
// the second answer, else at the third once the child has reported.
const orchOtherTranscript = `version: 1
responses:
  - content:
      - {type: tool_call, id: call_1, name: delegate-task, input: {capsule: other, version: 1.0.0, task: "look"}}
  - content:
      - {type: text, text: "Asked."}
  - content:
      - {type: text, text: "Done."}
`

// Issue 24 item 6(b): spawn.allow edited on disk and not republished.
// mur-roost judges the published copy, so it refuses the child; mur run
// warns at launch (W-RUN-055, naming both copies and the republish command)
// and the refusal carries the same hint. With the copies alike there is
// neither.
func TestRepublishWarning(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "other"), "other", "1.0.0", "lifecycle:\n  after_task: exit\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", orchOtherTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	env := []string{"MURMUR_ROOST_URL=" + roost}

	refusal := func(r murResult) string {
		t.Helper()
		if r.Code != 0 {
			t.Fatalf("run: %+v", r)
		}
		dl := byType(traceLines(t, parseReady(t, r.Stdout).RecordsDir), trace.TypeDelegation)
		if len(dl) != 1 || dl[0].Str("outcome") != "refused" || !strings.Contains(dl[0].Str("reason"), "capsule 'local/other' is not in parent's spawn_allow") {
			t.Fatalf("delegation lines %v", dl)
		}
		return dl[0].Str("reason")
	}
	// Alike: no warning (the tool itself refuses other, which neither lists).
	r := runMur(t, homeDir, orch, env, "run", "--json", "--task", "go")
	if r.Code != 0 || strings.Contains(r.Stderr, "W-RUN-055") {
		t.Fatalf("copies alike: %+v", r)
	}

	// Edited on disk only.
	mp := filepath.Join(orch, "murmur.yaml")
	b, _ := os.ReadFile(mp)
	os.WriteFile(mp, []byte(strings.Replace(string(b), "allow: [local/worker]", "allow: [local/worker, local/other]", 1)), 0o644)
	r = runMur(t, homeDir, orch, env, "run", "--json", "--task", "go")
	why := refusal(r)
	zip := filepath.Join(home.Artifacts(homeDir), "local", "orch", "0.1.0", "orch-0.1.0.mur.zip")
	for _, want := range []string{"warning[W-RUN-055]: " + mp + " differs from the published local/orch@0.1.0",
		"[local/worker, local/other] here, [local/worker] published", zip, "cd " + orch + " && mur build && mur publish --force"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
		}
	}
	if !strings.Contains(why, "\n  hint: mur-roost judges delegation by the published local/orch@0.1.0 ("+zip+"), not by "+mp+"; republish it: cd "+orch) {
		t.Errorf("the refusal has no republish hint: %q", why)
	}

	// Republished as the hint says: no warning, and the child is admitted.
	for _, c := range [][]string{{"build"}, {"publish", "--force"}} {
		if r := runMur(t, homeDir, orch, nil, c...); r.Code != 0 {
			t.Fatalf("%v: %+v", c, r)
		}
	}
	r = runMur(t, homeDir, orch, env, "run", "--json", "--task", "go")
	if r.Code != 0 || strings.Contains(r.Stderr, "W-RUN-055") {
		t.Fatalf("after republishing: %+v", r)
	}
	if ds := byType(traceLines(t, parseReady(t, r.Stdout).RecordsDir), trace.TypeDelegationStart); len(ds) != 1 {
		t.Fatalf("after republishing the child was not started")
	}
}
