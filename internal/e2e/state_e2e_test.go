package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// State stores through the binaries: examples/state-counter (a tool that
// adds one to state/count per call) declared with a store, called by the
// capsule-repeat fixture (a script that invokes a tool N times).

// stateProject publishes the state-counter example as local/state-counter
// (once per home) and writes a script capsule project in dir that declares
// it with extra under its artifacts entry (a capabilities block) and
// capsuleExtra at capsule level.
func stateProject(t *testing.T, homeDir, dir, name, artExtra, capsuleExtra string) string {
	t.Helper()
	tool := filepath.Join(homeDir, "src", "state-counter")
	if _, err := os.Stat(tool); err != nil {
		CopyDir(t, filepath.Join(RepoRoot(), "examples", "state-counter"), tool)
		PublishDir(t, homeDir, tool)
	}
	wasm, err := os.ReadFile(filepath.Join(RepoRoot(), "testdata", "components", "capsule-repeat", "capsule-repeat.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	return Capsule(t, dir, fmt.Sprintf(`name: %s
version: 0.1.0
artifacts:
  - name: local/state-counter
    version: "0.1.0"
%s
%s`, name, artExtra, capsuleExtra), wasm)
}

// repeatResult reads capsule-repeat's report from a work folder.
func repeatResult(t *testing.T, workdir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(workdir, "out", "result.txt"))
	if err != nil {
		t.Fatalf("result: %v", err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(l, ": ")
		out[k] = v
	}
	return out
}

func readCount(t *testing.T, homeDir, store string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(homeDir, ".murmur", "state", store, "count"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// Two sessions of two capsules that name one store increment it 1,000
// times each at once: every read-modify-write ran alone, so the count is
// exact. A later session goes on from it; each tool_call line names the
// store; the store and the root are 0700.
func TestStateStoreSharedAcrossConcurrentSessions(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	const n = 1000
	projs := []string{
		stateProject(t, homeDir, filepath.Join(base, "a"), "counter-a", "    capabilities:\n      state: {store: tally}", ""),
		stateProject(t, homeDir, filepath.Join(base, "b"), "counter-b", "    capabilities:\n      state: {store: tally}", ""),
	}
	var wg sync.WaitGroup
	results := make([]Result, len(projs))
	for i, p := range projs {
		wg.Go(func() {
			results[i] = RunMur(t, homeDir, p, nil, "run", "--workdir", filepath.Join(base, fmt.Sprintf("wd%d", i)), "--task", fmt.Sprintf("state-counter %d", n))
		})
	}
	wg.Wait()
	for i, r := range results {
		if r.Code != 0 {
			t.Fatalf("session %d: %+v", i, r)
		}
		res := repeatResult(t, filepath.Join(base, fmt.Sprintf("wd%d", i)))
		if res["passed"] != fmt.Sprint(n) {
			t.Fatalf("session %d: %v", i, res)
		}
	}
	if got := readCount(t, homeDir, "tally"); got != fmt.Sprint(2*n) {
		t.Fatalf("after two sessions of %d calls the store counts %s, want %d: calls overlapped", n, got, 2*n)
	}
	for _, d := range []string{filepath.Join(homeDir, ".murmur", "state"), filepath.Join(homeDir, ".murmur", "state", "tally")} {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want 0700", d, st.Mode(), err)
		}
	}
	// A fresh session reads what the last ones left.
	wd := filepath.Join(base, "wd-next")
	if r := RunMur(t, homeDir, projs[0], nil, "run", "--workdir", wd, "--task", "state-counter 1"); r.Code != 0 {
		t.Fatalf("next session: %+v", r)
	}
	if res := repeatResult(t, wd); res["last"] != fmt.Sprint(2*n+1) {
		t.Fatalf("next session saw %v", res)
	}
	lines := TraceLines(t, lastRecords(t, homeDir, projs[0]))
	calls := ByType(lines, "tool_call")
	if len(calls) != 1 || calls[0].Str("state_store") != "tally" {
		t.Fatalf("tool_call lines: %v", calls)
	}
	// mur state ls sees it; rm clears it; the next session starts at 1.
	r := RunMur(t, homeDir, base, nil, "state", "ls", "--json")
	t.Logf("state ls: %s", r.Stdout)
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil || len(rows) != 1 || rows[0]["name"] != "tally" {
		t.Fatalf("state ls: %+v %v", r, err)
	}
	if r := RunMur(t, homeDir, base, nil, "state", "rm", "tally"); r.Code != 0 || !strings.Contains(r.Stdout, "removed the state store tally") {
		t.Fatalf("state rm: %+v", r)
	}
	if r := RunMur(t, homeDir, base, nil, "state", "rm", "tally"); r.Code == 0 || !strings.Contains(r.Stderr, "E-CFG-010") {
		t.Fatalf("state rm of a removed store: %+v", r)
	}
	wd = filepath.Join(base, "wd-after-rm")
	if r := RunMur(t, homeDir, projs[1], nil, "run", "--workdir", wd, "--task", "state-counter 1"); r.Code != 0 {
		t.Fatalf("after rm: %+v", r)
	}
	if res := repeatResult(t, wd); res["last"] != "1" {
		t.Fatalf("after rm the store was not empty: %v", res)
	}
}

// lastRecords is the records dir of the newest session of the project in
// proj (session ids begin with their start time).
func lastRecords(t *testing.T, homeDir, proj string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(homeDir, ".murmur", "records", strings.TrimPrefix(proj, "/"), "ses_*"))
	if len(m) == 0 {
		t.Fatalf("no records for %s", proj)
	}
	sort.Strings(m)
	return m[len(m)-1]
}

// A store past state_max_bytes: a call that grows it is stopped
// resource_limit, and a later call on a store already past it never runs.
func TestStateStorePastStateMaxBytes(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := stateProject(t, homeDir, filepath.Join(base, "p"), "grower", "    capabilities:\n      state: {}",
		"capabilities:\n  resources:\n    state_max_bytes: 4096\n")
	wd := filepath.Join(base, "wd1")
	r := RunMur(t, homeDir, proj, nil, "run", "--workdir", wd, "--task", "state-counter 1 pad 1000000")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	res := repeatResult(t, wd)
	if res["passed"] != "0" || !strings.Contains(res["first-error"], "E-RUN-058: the state store grower holds") ||
		!strings.Contains(res["first-error"], "past capabilities.resources.state_max_bytes (4096)") {
		t.Fatalf("a call past the bound: %v", res)
	}
	// The store now holds the pad (written before the stop): past it at
	// the next call's start, which does not run (the count stays).
	before, _ := os.ReadFile(filepath.Join(homeDir, ".murmur", "state", "grower", "count"))
	wd = filepath.Join(base, "wd2")
	if r := RunMur(t, homeDir, proj, nil, "run", "--workdir", wd, "--task", "state-counter 1"); r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	res = repeatResult(t, wd)
	if res["passed"] != "0" || !strings.Contains(res["first-error"], "E-RUN-058: the state store grower holds") {
		t.Fatalf("a call on a store already past the bound: %v", res)
	}
	after, _ := os.ReadFile(filepath.Join(homeDir, ".murmur", "state", "grower", "count"))
	if string(before) != string(after) {
		t.Errorf("a call on a store past the bound ran: count %q -> %q", before, after)
	}
}

// A store that cannot be used refuses the launch before any session
// exists (E-CAP-009): a symbolic link, a file, another user's folder, a
// state root that is a file.
func TestStateStoreUnusableRefusesTheLaunch(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := stateProject(t, homeDir, filepath.Join(base, "p"), "keeper", "    capabilities:\n      state: {store: box}", "")
	root := filepath.Join(homeDir, ".murmur", "state")
	store := filepath.Join(root, "box")
	reset := func() { os.RemoveAll(root) }
	cases := []struct {
		name  string
		setup func()
		why   string
	}{
		{"symlink", func() { os.MkdirAll(root, 0o700); os.Symlink(base, store) }, store + " is a symbolic link"},
		{"file", func() { os.MkdirAll(root, 0o700); os.WriteFile(store, nil, 0o600) }, store + " is not a directory"},
		{"other user", func() { os.MkdirAll(store, 0o700); os.Chown(store, 4242, 4242) }, store + " is owned by uid 4242"},
		{"root a file", func() { os.WriteFile(root, nil, 0o600) }, root + " is not a directory"},
		{"root a symlink", func() { os.Symlink(base, root) }, root + " is a symbolic link"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reset()
			tc.setup()
			before := SessionsUnder(homeDir)
			r := RunMur(t, homeDir, proj, nil, "run", "--task", "state-counter 1")
			want := "the state store box at " + store + " cannot be used: " + tc.why
			if r.Code == 0 || !strings.Contains(r.Stderr, "E-CAP-009") || !strings.Contains(r.Stderr, want) {
				t.Fatalf("want %q: %+v", want, r)
			}
			if after := SessionsUnder(homeDir); len(after) != len(before) {
				t.Errorf("a session was made: %v", after)
			}
		})
	}
	reset()
	// A mode other than 0700 is put back at launch.
	os.MkdirAll(store, 0o755)
	os.Chmod(root, 0o755)
	if r := RunMur(t, homeDir, proj, nil, "run", "--task", "state-counter 1"); r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	for _, d := range []string{root, store} {
		if st, _ := os.Stat(d); st.Mode().Perm() != 0o700 {
			t.Errorf("%s is %v after a launch", d, st.Mode())
		}
	}
}

// kill -9 while a call holds the store mid-write: the kernel drops the
// lock with the process, so the next session gets it at once and sees the
// store as the last whole write left it.
func TestStateStoreKilledMidWrite(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := stateProject(t, homeDir, filepath.Join(base, "p"), "killed", "    capabilities:\n      state: {store: k}", "")
	if r := RunMur(t, homeDir, proj, nil, "run", "--workdir", filepath.Join(base, "wd0"), "--task", "state-counter 3"); r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	ShareCompileCache(t, homeDir)
	cmd := MurCmdEnv(t, homeDir, proj, nil, "run", "--workdir", filepath.Join(base, "wd1"), "--task", "state-counter 1 hold 60000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(homeDir, ".murmur", "state", "k", "count.tmp")
	WaitFor(t, "the call's temporary write", func() bool { _, err := os.Stat(tmp); return err == nil })
	// While the call holds the store, mur state rm refuses and removes nothing.
	if r := RunMur(t, homeDir, base, nil, "state", "rm", "k"); r.Code == 0 || !strings.Contains(r.Stderr, "E-CFG-011") ||
		!strings.Contains(r.Stderr, "the state store k is in use: a component call holds it now") {
		t.Errorf("state rm of a held store: %+v", r)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Errorf("state rm of a held store removed something: %v", err)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	start := time.Now()
	wd := filepath.Join(base, "wd2")
	if r := RunMur(t, homeDir, proj, nil, "run", "--workdir", wd, "--task", "state-counter 1"); r.Code != 0 {
		t.Fatalf("after kill: %+v", r)
	}
	if res := repeatResult(t, wd); res["last"] != "4" {
		t.Fatalf("after a call killed mid-write the next saw %v (want 4: the killed call's count never landed)", res)
	}
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("the next session waited %v", d)
	}
}

// A hook whose entry declares a store (and no filesystem) is handed it as
// /state: what it writes there is kept across sessions, and each hook_call
// line names the store.
func TestStateStoreHook(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	PublishEchoTool(t, homeDir, base)
	PublishFixture(t, homeDir, filepath.Join(base, "hook-state"), "hook-state", "name: local/hook-state\nversion: 0.1.0\nruntime: hook\n")
	proj := AgentProject(t, homeDir, base, "", AgentTranscript)
	m, _ := os.ReadFile(filepath.Join(proj, "murmur.yaml"))
	m = []byte(strings.Replace(string(m), "inference:", "  - name: local/hook-state\n    version: 0.1.0\n    runtime: hook\n    capabilities:\n      state: {store: hs}\ninference:", 1))
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), m, 0o644)
	for i := 0; i < 2; i++ {
		r := RunMur(t, homeDir, proj, nil, "run", "--json", "--task", "say hello")
		if r.Code != 0 {
			t.Fatalf("run %d: %+v", i, r)
		}
		for _, l := range ByType(TraceLines(t, ParseReady(t, r.Stdout).RecordsDir), "hook_call") {
			if l.Str("status") != "ok" || l.Str("state_store") != "hs" {
				t.Errorf("hook_call %v", l.Fields)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(homeDir, ".murmur", "state", "hs", "events"))
	want := strings.Repeat("on-session-start\non-task-start\non-task-end\non-session-end\n", 2)
	if err != nil || string(b) != want {
		t.Fatalf("the hook's store holds %q (%v), want %q", b, err, want)
	}
}
