package formation

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/store"
)

// publish packs a capsule whose murmur.yaml is name, version and body into
// the store s, returning its sha256.
func publish(t *testing.T, s *store.Store, name, version, body string) string {
	t.Helper()
	dir := t.TempDir()
	src := fmt.Sprintf("name: %s\nversion: %q\n%s", name, version, body)
	if err := os.WriteFile(filepath.Join(dir, "murmur.yaml"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "inference:") { // a script capsule: a component header is all Pack checks
		if err := os.WriteFile(filepath.Join(dir, "c.wasm"), []byte{0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00}, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b, err := store.Pack(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Publish(b.Zip, false)
	if err != nil {
		t.Fatal(err)
	}
	return r.SHA256
}

const (
	agent     = "inference:\n  model: m\n"
	auth      = "network:\n  authentication:\n    scheme: bearer\n"
	accepts   = "exports:\n  peer_tasks:\n    accept: true\n"
	sleepy    = "lifecycle:\n  after_task: sleep\n"
	noTasks   = "lifecycle:\n  task_acceptance: none\n"
	queueOf3  = "lifecycle:\n  task_acceptance: queue\n  queue_depth: 2\n  after_task: sleep\n"
	rosterTop = "roster_version: 1\nmembers:\n"
)

type fixture struct {
	home, project string
	global, proj  *store.Store
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{home: t.TempDir(), project: t.TempDir()}
	f.project, _ = filepath.EvalSymlinks(f.project)
	f.global, f.proj = store.Global(f.home), store.Project(f.project)
	return f
}

func (f *fixture) admit(t *testing.T, roster string) (*Admitted, error) {
	t.Helper()
	p := filepath.Join(f.project, FileName)
	if err := os.WriteFile(p, []byte(roster), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Load(f.project)
	if err != nil {
		return nil, err
	}
	return Admit(r, f.home)
}

func member(name, capsule string, entry bool) string {
	return fmt.Sprintf("  - name: %s\n    capsule: %s\n    version: \"0.1.0\"\n    entry: %v\n", name, capsule, entry)
}

func TestAdmit(t *testing.T) {
	f := newFixture(t)
	leadSum := publish(t, f.global, "lead", "0.1.0", agent+auth)
	publish(t, f.proj, "worker", "0.1.0", agent+auth+accepts+sleepy)
	publish(t, f.global, "busy", "0.1.0", agent+auth+accepts)
	publish(t, f.global, "script", "0.1.0", "")
	publish(t, f.global, "quiet", "0.1.0", agent+auth+noTasks)
	publish(t, f.global, "public", "0.1.0", agent+accepts+sleepy)
	publish(t, f.global, "closed", "0.1.0", agent+auth+sleepy)
	publish(t, f.global, "queue", "0.1.0", agent+auth+accepts+queueOf3)

	a, err := f.admit(t, rosterTop+member("lead", "lead", true)+member("worker", "worker", false)+member("w2", "worker", false)+
		"reachability:\n  - from: lead\n    to: [worker, w2]\n  - from: worker\n    to: [w2]\n  - from: lead\n    to: [worker]\n")
	if err != nil {
		t.Fatal(err)
	}
	if a.Bound[0].SHA256 != leadSum || a.Edges() != 3 || fmt.Sprint(a.Callees) != "[[1 2] [2] []]" {
		t.Fatalf("bound %v, callees %v", a.Bound[0].SHA256, a.Callees)
	}
	// w2 has two callers and holds one task at a time.
	if len(a.Warnings) != 1 || a.Warnings[0].Code != "W-RUN-008" || !strings.Contains(a.Warnings[0].Message, "member 'w2' (local/worker@0.1.0) holds 1 task(s) at a time and 2 members may call it") {
		t.Fatalf("warnings %v", a.Warnings)
	}

	// all: every ordered pair whose callee accepts peer tasks, never the entry.
	a, err = f.admit(t, rosterTop+member("lead", "lead", true)+member("worker", "worker", false)+member("q", "queue", false)+member("c", "closed", false)+"reachability: all\n")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a.Callees) != "[[1 2] [2] [1] [1 2]]" || len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0].Message, "member 'worker'") {
		t.Fatalf("callees %v warnings %v", a.Callees, a.Warnings)
	}

	// after_task: exit warns.
	a, err = f.admit(t, rosterTop+member("lead", "lead", true)+member("b", "busy", false)+"reachability:\n  - from: lead\n    to: [b]\n")
	if err != nil || len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0].Message, "ends its session after its first task (lifecycle.after_task: exit), so later calls to it fail") {
		t.Fatalf("%v %v", err, a)
	}

	// No edges: a public door is fine, a script entry too.
	if _, err := f.admit(t, rosterTop+member("s", "script", true)+member("p", "public", false)); err != nil {
		t.Fatal(err)
	}

	cases := []struct{ name, roster, code, has string }{
		{"not installed", rosterTop + member("lead", "lead", true) + member("x", "nothere", false), "E-ROS-007", "member 'x': local/nothere@0.1.0 is not installed in the project or global store"},
		{"script peer", rosterTop + member("lead", "lead", true) + member("s", "script", false), "E-ROS-009", "member 's' (local/script@0.1.0) cannot run as a peer: it is a script capsule, which has no door"},
		{"none peer", rosterTop + member("lead", "lead", true) + member("q", "quiet", false), "E-ROS-009", "its lifecycle.task_acceptance is none"},
		{"callee refuses", rosterTop + member("lead", "lead", true) + member("c", "closed", false) + "reachability:\n  - from: lead\n    to: [c]\n", "E-ROS-005", "member 'c' is called by 'lead', but local/closed@0.1.0 does not declare exports.peer_tasks.accept: true"},
		{"public door", rosterTop + member("lead", "lead", true) + member("p", "public", false) + "reachability:\n  - from: lead\n    to: [p]\n", "E-ROS-006", "member 'p' (local/public@0.1.0) declares no network.authentication"},
		{"an unrelated member too", rosterTop + member("lead", "lead", true) + member("w", "worker", false) + member("p", "public", false) + "reachability:\n  - from: lead\n    to: [w]\n", "E-ROS-006", "member 'p'"},
		// 7 comes before 5 and 6: a script peer is refused first.
		{"order", rosterTop + member("lead", "lead", true) + member("c", "closed", false) + member("s", "script", false) + "reachability:\n  - from: lead\n    to: [c]\n", "E-ROS-009", ""},
		// 6 takes members in roster order.
		{"first member first", rosterTop + member("lead", "nothere", true) + member("x", "gone", false), "E-ROS-007", "member 'lead'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.admit(t, c.roster)
			if diag.Code(err) != c.code || !strings.Contains(err.Error(), c.has) {
				t.Fatalf("err = %v, want %s holding %q", err, c.code, c.has)
			}
		})
	}
}

func TestAdmitStoreFaults(t *testing.T) {
	f := newFixture(t)
	publish(t, f.global, "lead", "0.1.0", agent+auth)
	sum := publish(t, f.global, "worker", "0.1.0", agent+auth+accepts)
	roster := rosterTop + member("lead", "lead", true) + member("w", "worker", false)

	// The lock pins worker at another sha256: E-REG-005; lead is unpinned and admitted.
	lock := &store.Lock{Version: store.LockVersion, Artifacts: []store.LockEntry{{Name: "local/worker", Version: "0.1.0", SHA256: strings.Repeat("0", 64)}}}
	if err := store.WriteLock(f.project, lock); err != nil {
		t.Fatal(err)
	}
	if _, err := f.admit(t, roster); diag.Code(err) != "E-REG-005" || !strings.Contains(err.Error(), "member 'w'") {
		t.Fatalf("lock: %v", err)
	}
	lock.Artifacts[0].SHA256 = sum
	if err := store.WriteLock(f.project, lock); err != nil {
		t.Fatal(err)
	}
	if _, err := f.admit(t, roster); err != nil {
		t.Fatalf("pinned: %v", err)
	}
	// Bytes that no longer hash to the sidecar.
	zip, _, _ := f.global.Paths("local/worker", "0.1.0")
	data, _ := os.ReadFile(zip)
	data[len(data)-1] ^= 1
	if err := os.WriteFile(zip, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.admit(t, roster); diag.Code(err) != "E-ROS-007" || !strings.Contains(err.Error(), "does not match its recorded sha256") {
		t.Fatalf("tampered: %v", err)
	}
	// Admission created nothing under home or the project but what the test wrote.
	entries, _ := os.ReadDir(f.project)
	for _, e := range entries {
		if e.Name() != FileName && e.Name() != ".murmur" && e.Name() != store.LockFile {
			t.Errorf("admission left %s", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(f.home, ".murmur", "formations")); !os.IsNotExist(err) {
		t.Errorf("formations dir: %v", err)
	}
}
