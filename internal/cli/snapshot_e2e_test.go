package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/murmur-go/murmur/internal/trace"
)

// snapWorkerTranscript: the worker reads its MURMUR.md and a copied file,
// changes its copy and adds a file, then answers.
const snapWorkerTranscript = `version: 1
responses:
  - content:
      - {type: tool_call, id: call_sh, name: bash, input: {command: "cat \"$MURMUR_RUNTIME_DIR/MURMUR.md\" > seen-murmur.md; cat notes/a.txt > seen-a.txt; echo changed > notes/a.txt; echo new > made-by-child.txt"}}
  - content:
      - {type: text, text: "Read the parent's notes."}
`

// snapOrchTranscript delegates to both workers in one turn: worker's copy
// fits, small's does not.
const snapOrchTranscript = `version: 1
responses:
  - content:
      - {type: tool_call, id: call_1, name: delegate-task, input: {capsule: worker, version: 1.0.0, task: "read the notes"}}
      - {type: tool_call, id: call_2, name: delegate-task, input: {capsule: small, version: 1.0.0, task: "read the notes too"}}
  - content:
      - {type: text, text: "Waiting for the worker."}
  - content:
      - {type: text, text: "The worker reported back."}
`

// TestWorkdirSnapshotEndToEnd: a parent whose spawn.workdir_snapshot lists
// its workers delegates to both through the real mur-roost. The one whose
// ceiling holds the parent's folder starts in a copy of it (the spec's
// table on a real folder), and both sides record the copy: the parent's
// delegation_start.workdir_snapshot, the child's
// session_start.effective_grants.parent_workdir with the restriction its
// tier gives, and its MURMUR.md's line. Nothing the child changes reaches
// the parent. The one whose workdir_max_bytes the folder passes fails
// before a child process exists, its directory removed, with an output
// naming the child, the ceiling and the key.
func TestWorkdirSnapshotEndToEnd(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0",
		"capabilities:\n  shell:\n    allow: [bash]\nlifecycle:\n  after_task: exit\n", snapWorkerTranscript)
	replayCapsule(t, homeDir, filepath.Join(base, "small"), "small", "1.0.0",
		"capabilities:\n  resources:\n    workdir_max_bytes: 1024\nlifecycle:\n  after_task: exit\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  shell:\n    allow: [bash]\n  spawn:\n    allow: [local/worker, local/small]\n    workdir_snapshot: [local/worker, local/small]\n", snapOrchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")

	// The parent's work folder, made before the run.
	pwd := filepath.Join(base, "pwd")
	mk := func(rel, data string, mode os.FileMode) {
		p := filepath.Join(pwd, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	mk("notes/a.txt", "the parent's notes", 0o644)
	mk("big.bin", strings.Repeat("b", 4000), 0o600)
	mk("run.sh", "#!/bin/sh\n", 0o755)
	mk("out/old.txt", "runtime-owned", 0o644)
	os.Symlink(filepath.Join(pwd, "notes", "a.txt"), filepath.Join(pwd, "abs-link"))
	if err := syscall.Mkfifo(filepath.Join(pwd, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--workdir", pwd, "--task", "delegate it")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)

	// The parent's side: delegation_start.workdir_snapshot.
	ds := byType(lines, trace.TypeDelegationStart)
	if len(ds) != 1 || ds[0].Str("capsule") != "worker" {
		t.Fatalf("delegation_start lines %v\n%s", ds, types(lines))
	}
	var snap trace.Snapshot
	if err := json.Unmarshal(ds[0].Fields["workdir_snapshot"], &snap); err != nil {
		t.Fatalf("delegation_start.workdir_snapshot %s: %v", ds[0].Fields["workdir_snapshot"], err)
	}
	wantSkipped := []trace.SnapshotSkip{{Path: "out", Reason: "runtime-owned"}, {Path: "pipe", Reason: "fifo"}}
	if snap.Source != pwd || snap.Files != 3 || snap.Directories != 1 || snap.Symlinks != 1 ||
		snap.Bytes != int64(len("the parent's notes")+4000+len("#!/bin/sh\n")) || len(snap.Skipped) != 2 ||
		snap.Skipped[0] != wantSkipped[0] || snap.Skipped[1] != wantSkipped[1] || snap.Restriction != "" {
		t.Errorf("workdir_snapshot %+v", snap)
	}
	wd := ds[0].Str("child_workdir")

	// The copy as the child left it, and the parent's folder untouched.
	if got, _ := os.ReadFile(filepath.Join(wd, "seen-a.txt")); string(got) != "the parent's notes" {
		t.Errorf("the child read %q from its copy of notes/a.txt", got)
	}
	if got, _ := os.Readlink(filepath.Join(wd, "abs-link")); got != filepath.Join(wd, "notes", "a.txt") {
		t.Errorf("abs-link in the copy points at %q, want it re-pointed into the copy", got)
	}
	if st, err := os.Stat(filepath.Join(wd, "run.sh")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("run.sh in the copy: %v %v", st, err)
	}
	if _, err := os.Stat(filepath.Join(wd, "out", "old.txt")); err == nil {
		t.Errorf("the parent's out/ was copied")
	}
	if got, _ := os.ReadFile(filepath.Join(pwd, "notes", "a.txt")); string(got) != "the parent's notes" {
		t.Errorf("the child's change reached the parent's folder: %q", got)
	}
	if _, err := os.Stat(filepath.Join(pwd, "made-by-child.txt")); err == nil {
		t.Errorf("a file the child made is in the parent's folder")
	}

	// The child's side: session_start.effective_grants.parent_workdir and MURMUR.md.
	matches, _ := filepath.Glob(filepath.Join(homeDir, ".murmur", "records", strings.TrimPrefix(wd, "/"), "ses_*"))
	if len(matches) != 1 {
		t.Fatalf("child records: %v", matches)
	}
	cstart := traceLines(t, matches[0])[0]
	var eg struct {
		ParentWorkdir *trace.Snapshot `json:"parent_workdir"`
		Containment   struct {
			Achieved string `json:"achieved"`
		} `json:"containment"`
	}
	if err := json.Unmarshal(cstart.Fields["effective_grants"], &eg); err != nil || eg.ParentWorkdir == nil {
		t.Fatalf("child effective_grants %s: %v", cstart.Fields["effective_grants"], err)
	}
	want := snap
	want.Restriction = map[string]string{"sealed": "absent", "scoped": "enforced", "advisory": "advisory"}[eg.Containment.Achieved]
	got := *eg.ParentWorkdir
	if got.Restriction == "" || got.Source != want.Source || got.Files != want.Files || got.Bytes != want.Bytes ||
		got.Restriction != want.Restriction || len(got.Skipped) != len(want.Skipped) {
		t.Errorf("parent_workdir %+v; want %+v (tier %s)", got, want, eg.Containment.Achieved)
	}
	md, _ := os.ReadFile(filepath.Join(wd, "seen-murmur.md"))
	if !strings.Contains(string(md), "## Work folder") ||
		!strings.Contains(string(md), "- snapshot: it started as a copy of the parent capsule's work folder, 3 files, 3.9 KiB (4028 bytes); changes here do not reach the parent's work folder") {
		t.Errorf("the child's MURMUR.md:\n%s", md)
	}

	// The worker whose ceiling the folder passes: failed, nothing started.
	var failed *trace.Line
	for _, l := range byType(lines, trace.TypeDelegation) {
		if l.Str("capsule") == "small" {
			failed = &l
		}
	}
	if failed == nil || failed.Str("outcome") != "failed" {
		t.Fatalf("small's delegation line %v\n%s", failed, types(lines))
	}
	reason := failed.Str("reason")
	for _, w := range []string{"small@1.0.0", "1024", "capabilities.resources.workdir_max_bytes"} {
		if !strings.Contains(reason, w) {
			t.Errorf("the failure %q does not name %q", reason, w)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(rd.RecordsDir, "children", "small-*")); len(left) != 0 {
		t.Errorf("small's directory was left: %v", left)
	}
	if got, _ := os.ReadFile(filepath.Join(rd.RecordsDir, "out", "result.txt")); string(got) != "The worker reported back." {
		t.Errorf("result.txt %q", got)
	}
}
