package cli_test

// Findings of an acceptance walkthrough as a new user, each pinned on the
// real binary: warnings printed once, --explain-scope, the order of the
// agent-capsule refusal, trace show on --capsule runs, non-traces and live
// sessions, MURMUR.md and the records' file modes.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A manifest warning names its place once, and mur run prints a narrowing
// warning (W-SEC-007) once, not once per reader of the grants.
func TestWarningsPrintedOnce(t *testing.T) {
	home, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "warned"), "name: warned\nversion: 1.0.0\ncolour: blue\n"+
		"artifacts:\n  - name: local/echo\n    version: 1.0.0\n    capabilities:\n      shell:\n        allow: [bash]\n",
		fixture(t, "capsule-probe.wasm"))
	publishWAT(t, home, "echo", "1.0.0", "tool", fixture(t, "ok.wat"))
	for _, args := range [][]string{{"build", "-o", filepath.Join(base, "w.mur.zip")}, {"run", "--task", "task"}, {"run", "--explain-scope"}} {
		r := runMur(t, home, proj, nil, args...)
		if r.Code != 0 {
			t.Fatalf("mur %v: %+v", args, r)
		}
		for _, want := range []string{"warning[W-MAN-001]: ", "warning[W-SEC-007]: "} {
			if n := strings.Count(r.Stderr, want); n != 1 {
				t.Errorf("mur %v printed %q %d times:\n%s", args, want, n, r.Stderr)
			}
		}
		if n := strings.Count(r.Stderr, "murmur.yaml:3:1:"); n != 1 {
			t.Errorf("mur %v names the unknown key's place %d times:\n%s", args, n, r.Stderr)
		}
	}
}

func TestRunExplainScope(t *testing.T) {
	home, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "lead"), `name: lead
version: 1.0.0
capabilities:
  env:
    allow: [LANG]
  spawn:
    allow: [acme/worker, acme/tester]
    workdir_snapshot: [acme/tester]
  containment: sealed
artifacts:
  - name: acme/lint
    version: 2.0.0
`, nil) // no component: explaining compiles nothing and needs no artifact
	r := runMur(t, home, proj, nil, "run", "--explain-scope")
	if r.Code != 0 {
		t.Fatalf("--explain-scope: %+v", r)
	}
	for _, want := range []string{
		"local/lead@1.0.0: script capsule (" + filepath.Join(proj, "murmur.yaml") + ")\n",
		"declared: sealed\n",
		"achieved: sealed\n",
		"floor met: ",
		"  spawn workdir snapshot: acme/tester\n",
		"  spawn:                  acme/worker, acme/tester\n",
		"  env:                    LANG\n",
		"  acme/lint@2.0.0 (tool): the capsule's grants\n",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("--explain-scope lacks %q:\n%s", want, r.Stdout)
		}
	}
	// Nothing ran: no session, no work folder.
	for _, d := range []string{"records", "sessions", "running"} {
		if entries, _ := os.ReadDir(filepath.Join(home, ".murmur", d)); len(entries) != 0 {
			t.Errorf("--explain-scope left ~/.murmur/%s entries", d)
		}
	}
	if _, err := os.Stat(filepath.Join(proj, "workdir")); !os.IsNotExist(err) {
		t.Errorf("--explain-scope made a work folder: %v", err)
	}

	// An agent capsule is explained, its provider key unread.
	agent := capsule(t, filepath.Join(base, "agent"), "name: agent\nversion: 1.0.0\ninference:\n  model: m\n  driver:\n    artifact: acme/d\n"+
		"artifacts:\n  - name: acme/d\n    version: 1.0.0\n    runtime: driver\n    gateway:\n      endpoint: https://api.example.com\n      api_key: ${WALK_UNSET_KEY}\n", nil)
	r = runMur(t, home, agent, nil, "run", "--explain-scope")
	if r.Code != 0 || !strings.Contains(r.Stdout, "local/agent@1.0.0: agent capsule") ||
		!strings.Contains(r.Stdout, "the inference loop runs in mur itself") {
		t.Errorf("--explain-scope of an agent capsule: %+v", r)
	}

	// An installed capsule, by name, with no project.
	src := capsule(t, filepath.Join(base, "src"), "name: acme/probe\nversion: 2.0.0\n", fixture(t, "capsule-probe.wasm"))
	if r := runMur(t, home, src, nil, "build", "-o", filepath.Join(base, "probe.mur.zip")); r.Code != 0 {
		t.Fatalf("build: %+v", r)
	}
	if r := runMur(t, home, src, nil, "publish", filepath.Join(base, "probe.mur.zip")); r.Code != 0 {
		t.Fatalf("publish: %+v", r)
	}
	r = runMur(t, home, base, nil, "run", "--capsule", "acme/probe", "--capsule-version", "2.0.0", "--explain-scope")
	if r.Code != 0 || !strings.Contains(r.Stdout, "acme/probe@2.0.0: script capsule (") || !strings.Contains(r.Stdout, "mechanism: ") {
		t.Errorf("--explain-scope --capsule: %+v", r)
	}
	r = runMur(t, home, base, nil, "run", "--capsule", "acme/none", "--capsule-version", "1.0.0", "--explain-scope")
	expectFail(t, r, "E-RUN-008", 1)
	if !strings.Contains(r.Stderr, "mur publish") || strings.Contains(r.Stderr, "mur install -g acme/none@1.0.0") {
		t.Errorf("a missing --capsule is hinted at publishing its zip (install -g NAME@V reads the same store): %s", r.Stderr)
	}
}

// An agent capsule's ${NAME} key is resolved before anything starts: unset
// is E-MAN-003 naming the variable, and nothing of a session is left.
func TestRunAgentNeedsItsKey(t *testing.T) {
	home, base := t.TempDir(), t.TempDir()
	agent := capsule(t, filepath.Join(base, "agent"), "name: agent\nversion: 1.0.0\ninference:\n  model: m\n  driver:\n    artifact: acme/d\n"+
		"artifacts:\n  - name: acme/d\n    version: 1.0.0\n    runtime: driver\n    gateway:\n      endpoint: https://api.example.com\n      api_key: ${WALK_UNSET_KEY}\n", nil)
	r0 := runMur(t, home, agent, nil, "run")
	expectFail(t, r0, "E-MAN-003", 1)
	if r := r0; !strings.Contains(r.Stderr, "WALK_UNSET_KEY") {
		t.Errorf("the refusal should name the variable: %s", r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(home, ".murmur", "records")); !os.IsNotExist(err) {
		t.Errorf("a refused agent left records: %v", err)
	}

	// A script capsule still has its ${NAME} resolved: unset is E-MAN-003.
	script := capsule(t, filepath.Join(base, "script"), "name: script\nversion: 1.0.0\n"+
		"artifacts:\n  - name: acme/d\n    version: 1.0.0\n    runtime: driver\n    gateway:\n      endpoint: https://api.example.com\n      api_key: ${WALK_UNSET_KEY}\n",
		fixture(t, "ok.wat"))
	r := runMur(t, home, script, nil, "run")
	expectFail(t, r, "E-MAN-003", 1)
	if !strings.Contains(r.Stderr, "WALK_UNSET_KEY") {
		t.Errorf("E-MAN-003 does not name the variable: %s", r.Stderr)
	}
}

func TestTraceShowFindsCapsuleRunsAndRefusesNonTraces(t *testing.T) {
	home, base := t.TempDir(), t.TempDir()
	src := capsule(t, filepath.Join(base, "src"), "name: acme/okay\nversion: 1.0.0\n", fixture(t, "capsule-probe.wasm"))
	zip := filepath.Join(base, "okay.mur.zip")
	if r := runMur(t, home, src, nil, "build", "-o", zip); r.Code != 0 {
		t.Fatalf("build: %+v", r)
	}
	if r := runMur(t, home, src, nil, "publish", zip); r.Code != 0 {
		t.Fatalf("publish: %+v", r)
	}
	cwd := filepath.Join(base, "elsewhere")
	os.MkdirAll(cwd, 0o755)
	r := runMur(t, home, cwd, nil, "run", "--capsule", "acme/okay", "--capsule-version", "1.0.0", "--json", "--task", "task")
	if r.Code != 0 {
		t.Fatalf("--capsule run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	// Its records dir is keyed by its work folder, which is named after the
	// session too; trace show and trace rm by id must find the records, not
	// the folder above them.
	r = runMur(t, home, base, nil, "trace", "show", rd.SessionID)
	if r.Code != 0 || !strings.Contains(r.Stdout, "ending:    ok") || !strings.Contains(r.Stdout, filepath.Join(rd.RecordsDir, "trace.jsonl")) {
		t.Errorf("trace show of a --capsule session: %+v", r)
	}
	r = runMur(t, home, base, nil, "trace", "rm", rd.SessionID)
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != "removed "+rd.RecordsDir {
		t.Errorf("trace rm of a --capsule session: %+v", r)
	}

	// A file that holds no trace event is refused, not summarised as one.
	notTrace := filepath.Join(base, "notes.txt")
	os.WriteFile(notTrace, []byte("root:x:0:0:root:/root:/bin/bash\nsecond line\n"), 0o644)
	r = runMur(t, home, base, nil, "trace", "show", notTrace)
	expectFail(t, r, "E-TRC-009", 1)
	if !strings.Contains(r.Stderr, "hint:") || r.Stdout != "" {
		t.Errorf("trace show of a non-trace: %+v", r)
	}
	// A project with no session yet: the hint says how to make one.
	fresh := capsule(t, filepath.Join(base, "fresh"), "name: fresh\nversion: 1.0.0\n", nil)
	r = runMur(t, home, fresh, nil, "trace", "show")
	expectFail(t, r, "E-TRC-004", 1)
	if !strings.Contains(r.Stderr, "has been recorded yet") || !strings.Contains(r.Stderr, "mur run") {
		t.Errorf("trace show in a project with no session: %s", r.Stderr)
	}
	// An empty trace (a session that died before its first line) still reads.
	empty := filepath.Join(base, "empty.jsonl")
	os.WriteFile(empty, nil, 0o600)
	if r := runMur(t, home, base, nil, "trace", "show", empty); r.Code != 0 || !strings.Contains(r.Stdout, "the trace holds no events") {
		t.Errorf("trace show of an empty trace: %+v", r)
	}
}

// While a session runs: its trace reads as running, its MURMUR.md lists
// identity and grants readably, and every file of its records is owner-only.
func TestRunningSessionFiles(t *testing.T) {
	home, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "sleeper"), "name: sleeper\nversion: 1.0.0\ncapabilities:\n  env:\n    allow: [LANG]\n",
		fixture(t, "capsule-probe.wasm"))
	cmd, out, _ := startMur(t, home, proj, "run", "--json", "--task", "sleep 60s")
	rd := readReady(t, out)

	r := runMur(t, home, proj, nil, "trace", "show", rd.SessionID)
	if r.Code != 0 || !strings.Contains(r.Stdout, "ending:    still running (pid ") {
		t.Errorf("trace show of a live session: %+v", r)
	}

	doc, err := os.ReadFile(filepath.Join(home, ".murmur", "sessions", rd.SessionID, "runtime", "MURMUR.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- capsule: local/sleeper\n", "- version: 1.0.0\n", "- session: " + rd.SessionID + "\n",
		"  env:                    LANG\n", "  spawn workdir snapshot: none\n", "  deadline:               600 s per component call"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("MURMUR.md lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(string(doc), "{") || strings.Contains(string(doc), "- url:") {
		t.Errorf("MURMUR.md holds raw JSON or a url for a script capsule:\n%s", doc)
	}

	// The component has written nothing yet, but its logs exist: owner-only.
	deadline := time.Now().Add(10 * time.Second)
	for _, f := range []string{"stdout.log", "stderr.log"} {
		p := filepath.Join(rd.RecordsDir, "logs", f)
		for {
			st, err := os.Stat(p)
			if err == nil {
				if st.Mode().Perm() != 0o600 {
					t.Errorf("%s mode %o, want 600", p, st.Mode().Perm())
				}
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: %v", p, err)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if r := runMur(t, home, proj, nil, "trace", "show", rd.SessionID); !strings.Contains(r.Stdout, "ending:    failed (terminated)") {
		t.Errorf("trace show after SIGTERM: %+v", r)
	}
}

// Every command explains itself beyond its one-line summary, and names its
// flags' arguments.
func TestHelpReadsWell(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	for _, cmd := range [][]string{{"build"}, {"publish"}, {"install"}, {"list"}, {"doctor"}, {"run"}, {"ps"}, {"trace"}, {"trace", "show"}, {"trace", "rm"}} {
		r := runMur(t, home, dir, nil, append(cmd, "--help")...)
		if r.Code != 0 || !strings.Contains(r.Stdout, "Usage:") {
			t.Errorf("mur %v --help: %+v", cmd, r)
			continue
		}
		// A Long text: the first paragraph is more than one line.
		first, _, _ := strings.Cut(r.Stdout, "\n\n")
		if !strings.Contains(first, "\n") {
			t.Errorf("mur %v --help has no explanation beyond %q", cmd, first)
		}
	}
	r := runMur(t, home, dir, nil, "run", "--help")
	for _, want := range []string{"--capsule FULLNAME", "--capsule-version VERSION", "--task FILE|TEXT", "--workdir DIR", "--manifest PATH", "--explain-scope"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("mur run --help lacks %q:\n%s", want, r.Stdout)
		}
	}
}

// A declared containment floor above advisory that cannot be delivered is
// refused (E-CAP-003) before anything starts: here filesystem.workdir_exec,
// which caps containment at advisory on any host.
func TestRunRefusesAContainmentFloorItCannotDeliver(t *testing.T) {
	home, base := t.TempDir(), t.TempDir()
	for _, class := range []string{"scoped", "sealed"} {
		proj := capsule(t, filepath.Join(base, class), "name: floor\nversion: 1.0.0\ncapabilities:\n  containment: "+class+"\n  filesystem:\n    workdir_exec: true\n",
			fixture(t, "ok.wat"))
		r := runMur(t, home, proj, nil, "run")
		expectFail(t, r, "E-CAP-003", 1)
		if !strings.Contains(r.Stderr, "the "+class+" containment floor") || !strings.Contains(r.Stderr, "hint:") {
			t.Errorf("%s: %s", class, r.Stderr)
		}
	}
	for _, d := range []string{"records", "sessions", "running"} {
		if entries, _ := os.ReadDir(filepath.Join(home, ".murmur", d)); len(entries) != 0 {
			t.Errorf("a refused run left ~/.murmur/%s entries", d)
		}
	}
	proj := capsule(t, filepath.Join(base, "advisory"), "name: floor\nversion: 1.0.0\ncapabilities:\n  containment: advisory\n", fixture(t, "ok.wat"))
	if r := runMur(t, home, proj, nil, "run"); r.Code != 0 {
		t.Errorf("an advisory floor is what this build delivers: %+v", r)
	}
}

// BenchmarkMurRunExplainScope: a whole `mur run --explain-scope` process of
// a typical manifest (parse, effective grants, render; nothing compiled).
func BenchmarkMurRunExplainScope(b *testing.B) {
	home, base := b.TempDir(), b.TempDir()
	typical, err := os.ReadFile(filepath.Join(repoRoot(), "internal", "manifest", "testdata", "typical.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	proj := capsule(b, filepath.Join(base, "explain"), string(typical), nil)
	timeRuns(b, func() {
		cmd := exec.Command(murBin(b), "run", "--explain-scope")
		cmd.Dir = proj
		cmd.Env = []string{"HOME=" + home, "TYPICAL_API_KEY=x"}
		mustRun(b, cmd)
	})
}

// A session killed with SIGKILL leaves its runtime dir (task.md, MURMUR.md):
// mur ps, pruning the stale record, removes it too.
func TestPsPrunesAKilledSessionsRuntimeDir(t *testing.T) {
	home, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "killed"), "name: killed\nversion: 1.0.0\n", fixture(t, "capsule-probe.wasm"))
	cmd, out, _ := startMur(t, home, proj, "run", "--json", "--task", "sleep 60s")
	rd := readReady(t, out)
	runtimeDir := filepath.Join(home, ".murmur", "sessions", rd.SessionID)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, err := os.Stat(filepath.Join(runtimeDir, "runtime", "task.md")); err != nil {
		t.Fatalf("after SIGKILL the runtime dir should still be there until pruned: %v", err)
	}
	// Another session's runtime dir, live (a process holds its begun lock), is not touched.
	other := filepath.Join(home, ".murmur", "sessions", "ses_0123456789abcdef0123456789abcdef")
	os.MkdirAll(other, 0o700)
	lock := filepath.Join(other, "begun.lock")
	holder := exec.Command("flock", "-x", lock, "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { holder.Process.Kill(); holder.Wait() }()
	for i := 0; exec.Command("flock", "-n", "-s", lock, "true").Run() == nil; i++ {
		if i > 500 { // a probe until flock holds it, not a timed assertion
			t.Fatal("flock never took the lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := runMur(t, home, proj, nil, "ps")
	if !strings.Contains(r.Stderr, "pruned: "+rd.SessionID) {
		t.Fatalf("ps: %+v", r)
	}
	if _, err := os.Stat(runtimeDir); !os.IsNotExist(err) {
		t.Errorf("ps left the killed session's runtime dir: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("ps removed a runtime dir with no stale record: %v", err)
	}
	// The records stay.
	if _, err := os.Stat(filepath.Join(rd.RecordsDir, "trace.jsonl")); err != nil {
		t.Errorf("the records went with the runtime dir: %v", err)
	}
}

// A name@version missing from the stores is hinted at publishing its zip:
// 'mur install NAME@V' reads the global store, so it cannot be the fix.
func TestNotInstalledHintIsNotCircular(t *testing.T) {
	home, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "proj"), "name: proj\nversion: 1.0.0\n", nil)
	for _, args := range [][]string{{"install", "acme/nothing@1.0.0"}, {"install", "-g", "acme/nothing@1.0.0"}} {
		r := runMur(t, home, proj, nil, args...)
		expectFail(t, r, "E-REG-001", 1)
		if !strings.Contains(r.Stderr, "mur publish <zip>") || strings.Contains(r.Stderr, "install it with 'mur install'") {
			t.Errorf("mur %v hint: %s", args, r.Stderr)
		}
	}
}

// An unknown command is a usage error (E-CFG-001, exit 2), at the top level
// and under trace, never the catch-all E-RUN-001 or a help page with exit 0.
func TestUnknownCommandIsAUsageError(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	for _, args := range [][]string{{"bogus"}, {"trace", "bogus"}, {"trace", "show", "--bogus"}} {
		r := runMur(t, home, dir, nil, args...)
		expectFail(t, r, "E-CFG-001", 2)
		if !strings.Contains(r.Stderr, "hint:") || r.Stdout != "" {
			t.Errorf("mur %v: %+v", args, r)
		}
	}
	if r := runMur(t, home, dir, nil, "trace"); r.Code != 0 || !strings.Contains(r.Stdout, "Available Commands:") {
		t.Errorf("mur trace alone shows its help: %+v", r)
	}
}

// A usage error's hint names the help of the command that was misused.
func TestUsageHintNamesTheCommand(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	for args, want := range map[string]string{"build a b": "mur build --help", "trace show --x": "mur trace show --help", "bogus": "mur --help"} {
		r := runMur(t, home, dir, nil, strings.Fields(args)...)
		expectFail(t, r, "E-CFG-001", 2)
		if !strings.Contains(r.Stderr, "hint: run '"+want+"' for usage") {
			t.Errorf("mur %s: %s", args, r.Stderr)
		}
	}
}
