package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/trace"
)

// envRecordingMur is a MURMUR_MUR_BINARY that writes the environment it was
// started with (its own /proc environ: exactly what the parent built, with
// nothing a shell adds) to file, then becomes the real mur.
func envRecordingMur(t *testing.T, dir, file string) string {
	t.Helper()
	w := filepath.Join(dir, "env-mur")
	os.WriteFile(w, []byte(fmt.Sprintf("#!/bin/sh\ntr '\\000' '\\n' < /proc/$$/environ > %s\nexec %s \"$@\"\n", file, murBin(t))), 0o755)
	return w
}

// runtimeNames are the nine names the runtime sets on a child.
var runtimeNames = []string{"PATH", "HOME", "USER", "LOGNAME", "MURMUR_ROOST_URL", "MURMUR_HOST_WARNINGS_REPORTED",
	"MURMUR_SPAWNER_LIFELINE", "MURMUR_SPAWNER", "MURMUR_FORMATION_ID"}

// TestDelegateChildEnvironment walks "The child's environment": the child
// holds the runtime's names with the runtime's values, whatever either
// manifest lists; a name both declare reaches it only when the parent's
// process holds it; nothing else of the parent's environment does; a name
// only the child declares is refused at POST /spawn.
func TestDelegateChildEnvironment(t *testing.T) {
	t.Parallel()
	homeDir, base := t.TempDir(), t.TempDir()
	allow := "[GITHUB_TOKEN, SHARED_OK, " + strings.Join(runtimeNames, ", ") + "]"
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0",
		"capabilities:\n  env:\n    allow: "+allow+"\nlifecycle:\n  after_task: exit\n", workerTranscript)
	replayCapsule(t, homeDir, filepath.Join(base, "tokened"), "tokened", "1.0.0",
		"capabilities:\n  env:\n    allow: [GITHUB_TOKEN]\nlifecycle:\n  after_task: exit\n", workerTranscript)
	// orch lists everything worker does; narrow lists neither GITHUB_TOKEN
	// nor anything else.
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n  env:\n    allow: "+allow+"\n", orchTranscript)
	narrowTranscript := strings.ReplaceAll(orchTranscript, "capsule: worker", "capsule: tokened")
	narrow := replayCapsule(t, homeDir, filepath.Join(base, "narrow"), "narrow", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/tokened]\n", narrowTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch", "--spawn-allow", "local/narrow")

	envFile := filepath.Join(base, "child.env")
	const formationID = "frm_00112233445566778899aabbccddeeff"
	parentEnv := []string{"MURMUR_ROOST_URL=" + roost, "MURMUR_MUR_BINARY=" + envRecordingMur(t, base, envFile),
		"SHARED_OK=from-the-parent", "NOT_DECLARED=must-not-leak", "USER=parent-user", "LOGNAME=parent-login",
		"MURMUR_FORMATION_ID=" + formationID}
	// (The channel, peers and lifeline variables refuse a launch outright —
	// TestFormationVariables — so no child can be handed them.)
	// GITHUB_TOKEN is declared by both and absent from the parent's process.
	r := runMur(t, homeDir, orch, parentEnv, "run", "--json", "--task", "delegate it")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	ds := byType(lines, trace.TypeDelegationStart)
	if len(ds) != 1 {
		t.Fatalf("no delegation: %s", types(lines))
	}
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		got[k] = v
		names = append(names, k)
	}
	sort.Strings(names)
	want := []string{"HOME", "LOGNAME", "MURMUR_FORMATION_ID", "MURMUR_HOST_WARNINGS_REPORTED", "MURMUR_ROOST_URL", "MURMUR_SPAWNER", "MURMUR_SPAWNER_LIFELINE", "PATH", "SHARED_OK", "USER"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("the child's environment holds %v, want %v", names, want)
	}
	for k, v := range map[string]string{"HOME": homeDir, "PATH": os.Getenv("PATH"), "USER": "parent-user", "LOGNAME": "parent-login",
		"MURMUR_ROOST_URL": roost, "MURMUR_HOST_WARNINGS_REPORTED": "1", "MURMUR_FORMATION_ID": formationID, "MURMUR_SPAWNER_LIFELINE": "3", "SHARED_OK": "from-the-parent"} {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	var sp map[string]string
	if err := json.Unmarshal([]byte(got["MURMUR_SPAWNER"]), &sp); err != nil || sp["session_id"] != rd.SessionID ||
		sp["delegation_id"] != ds[0].Str("delegation_id") || sp["url"] != "http://"+*rd.URL || !strings.HasPrefix(sp["context_id"], "") || len(sp) != 4 {
		t.Errorf("MURMUR_SPAWNER=%s", got["MURMUR_SPAWNER"])
	}
	if strings.Contains(got["MURMUR_SPAWNER"], " ") {
		t.Errorf("MURMUR_SPAWNER is not compact JSON: %s", got["MURMUR_SPAWNER"])
	}

	// A name only the child declares: refused at POST /spawn, no child.
	os.Remove(envFile)
	r = runMur(t, homeDir, narrow, append(parentEnv, "GITHUB_TOKEN=ghp_parent"), "run", "--json", "--task", "delegate it")
	if r.Code != 0 {
		t.Fatalf("run narrow: %+v", r)
	}
	lines = traceLines(t, parseReady(t, r.Stdout).RecordsDir)
	dl := byType(lines, trace.TypeDelegation)
	const sentence = "capabilities.env.allow: the child declares 'GITHUB_TOKEN', which its parent does not hold — a spawned capsule can never hold more capability than the capsule that spawned it"
	if len(dl) != 1 || dl[0].Str("outcome") != "refused" || dl[0].Str("reason") != sentence || len(byType(lines, trace.TypeDelegationStart)) != 0 {
		t.Errorf("narrow parent: %s %v", types(lines), dl)
	}
	if _, err := os.Stat(envFile); err == nil {
		t.Errorf("a refused spawn started a child")
	}
}
