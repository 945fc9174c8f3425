package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/trace"
)

// midTranscript is a child that delegates in turn, to local/leaf.
const midTranscript = `version: 1
responses:
  - content:
      - {type: tool_call, id: call_1, name: delegate-task, input: {capsule: leaf, version: 1.0.0, task: "go one level down"}}
  - content:
      - {type: text, text: "Waiting for the leaf."}
  - content:
      - {type: text, text: "The leaf reported back."}
`

// delegationTree publishes orch → mid → leaf (three levels, each child
// delegating with delegate-task) and starts mur-roost for it.
func delegationTree(t *testing.T, homeDir, base, orchExtra string) (orch, roost string) {
	t.Helper()
	replayCapsule(t, homeDir, filepath.Join(base, "leaf"), "leaf", "1.0.0", "lifecycle:\n  after_task: exit\n", workerTranscript)
	replayCapsule(t, homeDir, filepath.Join(base, "mid"), "mid", "1.0.0",
		"lifecycle:\n  after_task: exit\ncapabilities:\n  spawn:\n    allow: [local/leaf]\n", midTranscript)
	orchTr := strings.ReplaceAll(orchTranscript, "capsule: worker", "capsule: mid")
	orch = replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/mid, local/leaf]\n"+orchExtra, orchTr)
	return orch, startRoost(t, homeDir, "--spawn-allow", "local/orch")
}

// runTree runs orch once and returns its records dir and the records dirs
// of its child and grandchild, checked to exist outside the parent's.
func runTree(t *testing.T, homeDir, orch, roost string) (parent, child, grandchild string) {
	t.Helper()
	r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "delegate it")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	parent = parseReady(t, r.Stdout).RecordsDir
	child = childRecordsOf(t, homeDir, parent)
	grandchild = childRecordsOf(t, homeDir, child)
	for _, d := range []string{child, grandchild} {
		if strings.HasPrefix(d, parent+"/") {
			t.Fatalf("%s lies inside the parent's records dir: the test would not reproduce the leak", d)
		}
	}
	return parent, child, grandchild
}

// childRecordsOf is the records dir of the one child a session delegated to.
func childRecordsOf(t *testing.T, homeDir, recordsDir string) string {
	t.Helper()
	lines := traceLines(t, recordsDir)
	ds := byType(lines, trace.TypeDelegationStart)
	if len(ds) != 1 {
		for _, l := range byType(lines, trace.TypeDelegation) {
			t.Logf("delegation: %v", l.Fields)
		}
		t.Fatalf("%s: %d delegation_start lines:\n%s", recordsDir, len(ds), types(lines))
	}
	return childRecordsIn(t, homeDir, ds[0].Str("child_workdir"))
}

func mustBeGone(t *testing.T, what string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s: %s is still there", what, p)
		}
	}
}

// TestTraceRmRemovesChildRecords: `mur trace rm` of a parent removes its
// delegated children's own records, which lie outside its records dir under
// ~/.murmur/records/<parent records dir>/children/, and the grandchildren's
// below theirs (docs/delegation.md "The tree"). Issue 22 item 15: they were left behind.
func TestTraceRmRemovesChildRecords(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	orch, roost := delegationTree(t, homeDir, base, "")
	parent, child, grandchild := runTree(t, homeDir, orch, roost)
	// A second tree, left alone: removing one parent's children must not
	// touch another's.
	other, otherChild, otherGrand := runTree(t, homeDir, orch, roost)

	r := runMur(t, homeDir, orch, nil, "trace", "rm", filepath.Base(parent))
	if r.Code != 0 {
		t.Fatalf("trace rm: %+v", r)
	}
	tree := filepath.Join(home.Records(homeDir), strings.TrimPrefix(parent, "/"), "children")
	if !strings.Contains(r.Stdout, "removed "+parent+"\n") || !strings.Contains(r.Stdout, "removed "+tree+"\n") {
		t.Errorf("trace rm printed %q", r.Stdout)
	}
	mustBeGone(t, "after trace rm", parent, child, grandchild, tree,
		filepath.Join(home.Records(homeDir), strings.TrimPrefix(parent, "/")))
	for _, d := range []string{other, otherChild, otherGrand} {
		if _, err := os.Stat(filepath.Join(d, trace.FileName)); err != nil {
			t.Errorf("another session's records were touched: %v", err)
		}
	}
}

// TestRetainRemovesChildRecords: trace.retain removes a retired parent's
// delegated children's records with the parent's (docs/delegation.md).
func TestRetainRemovesChildRecords(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	orch, roost := delegationTree(t, homeDir, base, "trace:\n  retain:\n    max_sessions: 2\n")
	parent, child, grandchild := runTree(t, homeDir, orch, roost)
	kept, keptChild, keptGrand := runTree(t, homeDir, orch, roost)
	// The third run keeps itself and the second: the first goes, with its tree.
	runTree(t, homeDir, orch, roost)
	mustBeGone(t, "after trace.retain", parent, child, grandchild,
		filepath.Join(home.Records(homeDir), strings.TrimPrefix(parent, "/")))
	for _, d := range []string{kept, keptChild, keptGrand} {
		if _, err := os.Stat(filepath.Join(d, trace.FileName)); err != nil {
			t.Errorf("a retained session's records were touched: %v", err)
		}
	}
}
