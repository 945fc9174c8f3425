package cli_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/trace"
)

func TestRunOKLeavesTheRecords(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "proj"), "name: hello\nversion: 0.1.0\n", fixture(t, "ok.wat"))
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "say hi")
	if r.Code != 0 {
		t.Fatalf("mur run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	if rd.URL != nil || rd.Name != "local/hello" || rd.Version != "0.1.0" || !ids.Valid(ids.Session, rd.SessionID) || rd.PID <= 0 {
		t.Errorf("ready line %+v", rd)
	}
	if want := filepath.Join(proj, "workdir", rd.SessionID); rd.Workdir != want {
		t.Errorf("workdir %s, want %s", rd.Workdir, want)
	}
	if want := filepath.Join(home.ProjectRecords(homeDir, proj), rd.SessionID); rd.RecordsDir != want {
		t.Errorf("records dir %s, want %s", rd.RecordsDir, want)
	}
	if !strings.Contains(r.Stderr, rd.SessionID+": ok") {
		t.Errorf("ending not printed: %q", r.Stderr)
	}
	lines := traceLines(t, rd.RecordsDir)
	if len(lines) != 2 || lines[0].EventType != trace.TypeSessionStart {
		t.Fatalf("trace %+v", lines)
	}
	st := lines[0]
	if st.Str("capsule_name") != "local/hello" || st.Str("kind") != "script" || st.ParentID != "" || st.SessionID != rd.SessionID {
		t.Errorf("session_start %v", st.Fields)
	}
	end := lastEnd(t, lines)
	if end.Str("exit_status") != "ok" || end.ParentID != st.EventID {
		t.Errorf("session_end %v", end.Fields)
	}
	// The runtime dir is gone, the records stay, no running record is left.
	if _, err := os.Stat(filepath.Join(homeDir, ".murmur", "sessions", rd.SessionID)); !os.IsNotExist(err) {
		t.Errorf("runtime dir left behind: %v", err)
	}
	for _, d := range []string{"logs", "out"} {
		if st, err := os.Stat(filepath.Join(rd.RecordsDir, d)); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("records %s: %v", d, err)
		}
	}
	if left, _ := running.Scan(home.Running(homeDir)); len(left) != 0 {
		t.Errorf("running records left: %+v", left)
	}
	// Human output: the ending on stderr (the answer, if any, on stdout).
	r = runMur(t, homeDir, proj, nil, "run")
	if r.Code != 0 || !regexp.MustCompile(`(?m)^ses_[0-9a-z]+: ok$`).MatchString(r.Stderr) {
		t.Errorf("plain run: %+v", r)
	}
	if r := runMur(t, homeDir, proj, nil, "trace", "show"); r.Code != 0 || !strings.Contains(r.Stdout, "ending:    ok") {
		t.Errorf("trace show after a run: %+v", r)
	}
}

func TestRunEndings(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	probe := fixture(t, "capsule-probe.wasm")
	tests := []struct {
		name, wat, task, manifestExtra string
		wasm                           []byte
		ending, code                   string
		deadline                       bool // a call_deadline line
	}{
		{name: "trapped", wat: "trap.wat", ending: "trapped", code: "E-RUN-010"},
		{name: "spin", wat: "spin.wat", manifestExtra: "capabilities:\n  limits:\n    deadline_seconds: 1\n", ending: "deadline_exceeded", code: "E-RUN-011"},
		{name: "grow", wat: "grow.wat", manifestExtra: "capabilities:\n  limits:\n    memory_bytes: 16777216\n", ending: "resource_limit", code: "E-RUN-012"},
		{name: "probe-fail", wasm: probe, task: "fail", ending: "failed", code: "E-RUN-013"},
		{name: "probe-trap", wasm: probe, task: "trap", ending: "trapped", code: "E-RUN-010"},
		{name: "probe-sleep", wasm: probe, task: "sleep 30s", manifestExtra: "capabilities:\n  limits:\n    deadline_seconds: 1\n", ending: "deadline_exceeded", code: "E-RUN-011", deadline: true},
	}
	for _, tc := range tests {
		wasm := tc.wasm
		if wasm == nil {
			wasm = fixture(t, tc.wat)
		}
		proj := capsule(t, filepath.Join(base, tc.name), "name: "+tc.name+"\nversion: 1.0.0\n"+tc.manifestExtra, wasm)
		// Subtests, not bare goroutines: runMur and the trace helpers call
		// t.Fatal, which must run on the test's own goroutine.
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"run", "--json"}
			if tc.task != "" {
				args = append(args, "--task", tc.task)
			}
			r := runMur(t, homeDir, proj, nil, args...)
			if r.Code != 1 || !strings.Contains(r.Stderr, "error["+tc.code+"]") || !strings.Contains(r.Stderr, ": "+tc.ending+"\n") {
				t.Errorf("%s: want exit 1, %s, ending %s; got %+v", tc.name, tc.code, tc.ending, r)
				return
			}
			rd := parseReady(t, r.Stdout)
			lines := traceLines(t, rd.RecordsDir)
			end := lastEnd(t, lines)
			if end.Str("exit_status") != tc.ending || end.Str("reason") == "" {
				t.Errorf("%s: session_end %v", tc.name, end.Fields)
			}
			var cd *trace.Line
			for i := range lines {
				if lines[i].EventType == trace.TypeCallDeadline {
					cd = &lines[i]
				}
			}
			switch {
			case tc.deadline && cd == nil:
				t.Errorf("%s: no call_deadline line", tc.name)
			case tc.deadline:
				if cd.Str("component") != "capsule.wasm" || cd.Str("call") != "murmur:capsule/run@0.1.0#run" || cd.Int("deadline_ms") != 1000 {
					t.Errorf("%s: call_deadline %v", tc.name, cd.Fields)
				}
			case cd != nil:
				t.Errorf("%s: unexpected call_deadline %v", tc.name, cd.Fields)
			}
		})
	}
}

func TestRunKilledAndTerminated(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "sleeper"), "name: sleeper\nversion: 1.0.0\n", fixture(t, "capsule-probe.wasm"))

	// SIGKILL mid-run: no session_end; mur ps prunes the record; trace show
	// says the session ended without one.
	cmd, out, _ := startMur(t, homeDir, proj, "run", "--json", "--task", "sleep 60s")
	rd := readReady(t, out)
	r := runMur(t, homeDir, proj, nil, "ps")
	if !strings.Contains(r.Stdout, rd.SessionID) || !strings.Contains(r.Stdout, "local/sleeper@1.0.0") {
		t.Fatalf("ps while running: %+v", r)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	r = runMur(t, homeDir, proj, nil, "ps")
	if r.Stdout != "no running capsules\n" || !strings.Contains(r.Stderr, "pruned: "+rd.SessionID) {
		t.Errorf("ps after SIGKILL: %+v", r)
	}
	r = runMur(t, homeDir, proj, nil, "trace", "show", rd.SessionID)
	if !strings.Contains(r.Stdout, "ended without a session_end; its last event is session_start") {
		t.Errorf("trace show after SIGKILL: %+v", r)
	}

	// SIGTERM: session_end {failed, terminated}, exit 143 at once, records cleaned.
	cmd, out, stderr := startMur(t, homeDir, proj, "run", "--json", "--task", "sleep 60s")
	rd = readReady(t, out)
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 143 {
		t.Fatalf("exit after SIGTERM: %v (stderr %s)", err, stderr)
	}
	end := lastEnd(t, traceLines(t, rd.RecordsDir))
	if end.Str("exit_status") != "failed" || end.Str("reason") != "terminated" {
		t.Errorf("session_end after SIGTERM: %v", end.Fields)
	}
	if left, _ := running.Scan(home.Running(homeDir)); len(left) != 0 {
		t.Errorf("running record left after SIGTERM: %+v", left)
	}
	if _, err := os.Stat(filepath.Join(homeDir, ".murmur", "sessions", rd.SessionID)); !os.IsNotExist(err) {
		t.Errorf("runtime dir left after SIGTERM: %v", err)
	}
}

func TestRunWhatTheComponentSees(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	manifest := "name: probe\nversion: 0.3.0\ncapabilities:\n  env:\n    allow: [ALLOWED_VAR, UNSET_VAR]\n"
	proj := capsule(t, filepath.Join(base, "probe"), manifest, fixture(t, "capsule-probe.wasm"))
	wd := filepath.Join(base, "wd")

	r := runMur(t, homeDir, proj, []string{"ALLOWED_VAR=yes", "SECRET_TOKEN=no"}, "run", "--workdir", wd, "--task", "env")
	if r.Code != 0 {
		t.Fatalf("env run: %+v", r)
	}
	got, _ := os.ReadFile(filepath.Join(wd, "out", "result.txt"))
	sid := regexp.MustCompile(`(?m)^(ses_[0-9a-z]+): ok$`).FindStringSubmatch(r.Stderr)[1]
	want := "env ALLOWED_VAR: yes\nenv MURMUR_CAPSULE_NAME: local/probe\nenv MURMUR_CAPSULE_VERSION: 0.3.0\n" +
		"env MURMUR_RUNTIME_DIR: murmur-runtime\nenv MURMUR_SESSION_ID: " + sid + "\n"
	if string(got) != want {
		t.Errorf("the component's environment:\n%s\nwant:\n%s", got, want)
	}

	// The task arrives through murmur-runtime/task.md, from a file or text.
	taskFile := filepath.Join(base, "task.txt")
	os.WriteFile(taskFile, []byte("task\nsecond line\n"), 0o644)
	if r := runMur(t, homeDir, proj, nil, "run", "--workdir", wd, "--task", taskFile); r.Code != 0 {
		t.Fatalf("task run: %+v", r)
	}
	got, _ = os.ReadFile(filepath.Join(wd, "out", "result.txt"))
	if string(got) != "task: \"task\\nsecond line\\n\"\n" {
		t.Errorf("task seen: %q", got)
	}

	// Escapes: nothing is written outside the work folder, the runtime dir is read-only.
	marker := filepath.Join(base, "before")
	os.WriteFile(marker, nil, 0o644)
	if r := runMur(t, homeDir, proj, nil, "run", "--workdir", wd, "--task", "escape"); r.Code != 0 {
		t.Fatalf("escape run: %+v", r)
	}
	got, _ = os.ReadFile(filepath.Join(wd, "out", "result.txt"))
	if !strings.Contains(string(got), "escape runtime-dir-write: blocked") || !strings.Contains(string(got), "escape absolute-read: blocked") {
		t.Errorf("escape report:\n%s", got)
	}
	for _, p := range []string{filepath.Join(base, "escape-dotdot.txt"), filepath.Join(base, "escape-deep.txt"),
		"/escape-absolute.txt", "/tmp/capsule-probe-escape.txt", filepath.Join(filepath.Dir(base), "escape-symlink.txt")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the component wrote %s outside its work folder", p)
			os.Remove(p)
		}
	}
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		if n := e.Name(); n != "probe" && n != "wd" && n != "task.txt" && n != "before" {
			t.Errorf("unexpected %s beside the work folder", n)
		}
	}
}

func TestRunRefusals(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	coreModule := []byte("\x00asm\x01\x00\x00\x00")
	two := capsule(t, filepath.Join(base, "two"), "name: two\nversion: 1.0.0\n", nil)
	os.WriteFile(filepath.Join(two, "a.wasm"), fixture(t, "ok.wat"), 0o644)
	os.WriteFile(filepath.Join(two, "b.wasm"), fixture(t, "ok.wat"), 0o644)
	tests := []struct {
		name string
		dir  string
		args []string
		code string
	}{
		{"core module", capsule(t, filepath.Join(base, "core"), "name: core\nversion: 1.0.0\n", coreModule), nil, "E-RUN-005"},
		{"garbage", capsule(t, filepath.Join(base, "garbage"), "name: garbage\nversion: 1.0.0\n", []byte("hello")), nil, "E-RUN-005"},
		{"no run export", capsule(t, filepath.Join(base, "noexport"), "name: noexport\nversion: 1.0.0\n", fixture(t, "noexport.wat")), nil, "E-RUN-006"},
		{"two root wasm", two, nil, "E-RUN-004"},
		{"no wasm", capsule(t, filepath.Join(base, "none"), "name: none\nversion: 1.0.0\n", nil), nil, "E-RUN-003"},
		{"missing tool", capsule(t, filepath.Join(base, "tools"), "name: tools\nversion: 1.0.0\nartifacts:\n  - name: acme/echo\n    version: 1.2.0\n", fixture(t, "ok.wat")), nil, "E-RUN-008"},
		{"agent", capsule(t, filepath.Join(base, "agent"), "name: agent\nversion: 1.0.0\ninference:\n  model: m\n  driver:\n    artifact: acme/d\nartifacts:\n  - name: acme/d\n    version: 1.0.0\n    runtime: driver\n", nil), nil, "E-RUN-047"},
		{"capsule not installed", base, []string{"--capsule", "acme/nothing", "--capsule-version", "1.0.0"}, "E-RUN-008"},
		{"containment with workdir_exec", capsule(t, filepath.Join(base, "wx"), "name: wx\nversion: 1.0.0\ncapabilities:\n  filesystem:\n    workdir_exec: true\n", fixture(t, "ok.wat")), []string{"--containment", "sealed"}, "E-CAP-003"},
		{"half --capsule", base, []string{"--capsule", "acme/x"}, "E-CFG-001"},
		{"no manifest", base, nil, "E-MAN-020"},
	}
	for _, tc := range tests {
		r := runMur(t, homeDir, tc.dir, nil, append([]string{"run"}, tc.args...)...)
		if r.Code == 0 || !strings.Contains(r.Stderr, "error["+tc.code+"]") || !strings.Contains(r.Stderr, "hint:") {
			t.Errorf("%s: want %s, got %+v", tc.name, tc.code, r)
		}
		if tc.name == "missing tool" && !strings.Contains(r.Stderr, "acme/echo@1.2.0") || tc.name == "missing tool" && !strings.Contains(r.Stderr, "mur install") {
			t.Errorf("missing tool message: %s", r.Stderr)
		}
	}
	// Nothing started: no session was recorded, no runtime dir made.
	for _, d := range []string{"records", "sessions", "running"} {
		entries, _ := os.ReadDir(filepath.Join(homeDir, ".murmur", d))
		if len(entries) != 0 {
			t.Errorf("a refused run left ~/.murmur/%s entries", d)
		}
	}
}

func TestRunInstalledCapsule(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	src := capsule(t, filepath.Join(base, "src"), "name: acme/probe\nversion: 2.0.0\n", fixture(t, "capsule-probe.wasm"))
	if r := runMur(t, homeDir, src, nil, "build"); r.Code != 0 {
		t.Fatalf("build: %+v", r)
	}
	if r := runMur(t, homeDir, src, nil, "publish"); r.Code != 0 {
		t.Fatalf("publish: %+v", r)
	}
	cwd := filepath.Join(base, "elsewhere")
	os.MkdirAll(cwd, 0o755)
	r := runMur(t, homeDir, cwd, nil, "run", "--capsule", "acme/probe", "--capsule-version", "2.0.0", "--task", "task", "--json")
	if r.Code != 0 {
		t.Fatalf("--capsule run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	if want := filepath.Join(cwd, "workdir", rd.SessionID); rd.Workdir != want {
		t.Errorf("--capsule workdir %s, want %s", rd.Workdir, want)
	}
	if want := filepath.Join(home.ProjectRecords(homeDir, rd.Workdir), rd.SessionID); rd.RecordsDir != want {
		t.Errorf("--capsule records dir %s, want %s", rd.RecordsDir, want)
	}
	if got, _ := os.ReadFile(filepath.Join(rd.Workdir, "out", "result.txt")); string(got) != "task: \"task\"\n" {
		t.Errorf("result %q", got)
	}
}

func TestRunTwentyAtOnce(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "many"), "name: many\nversion: 1.0.0\n", fixture(t, "capsule-probe.wasm"))
	if r := runMur(t, homeDir, proj, nil, "run", "--task", "task"); r.Code != 0 { // warm the compile cache
		t.Fatalf("first run: %+v", r)
	}
	var wg sync.WaitGroup
	results := make([]murResult, 20)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = runMur(t, homeDir, proj, nil, "run", "--json", "--task", fmt.Sprintf("task %d", i))
		}(i)
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, r := range results {
		if r.Code != 0 {
			t.Errorf("run %d: %+v", i, r)
			continue
		}
		rd := parseReady(t, r.Stdout)
		if seen[rd.SessionID] {
			t.Errorf("session id %s reused", rd.SessionID)
		}
		seen[rd.SessionID] = true
		got, _ := os.ReadFile(filepath.Join(rd.Workdir, "out", "result.txt"))
		if want := fmt.Sprintf("task: \"task %d\"\n", i); string(got) != want {
			t.Errorf("run %d result %q, want %q", i, got, want)
		}
		if lastEnd(t, traceLines(t, rd.RecordsDir)).Str("exit_status") != "ok" {
			t.Errorf("run %d did not end ok", i)
		}
	}
	if left, _ := running.Scan(home.Running(homeDir)); len(left) != 0 {
		t.Errorf("%d running records left", len(left))
	}
}

func TestRunTraceRetain(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "ret"), "name: ret\nversion: 1.0.0\ntrace:\n  retain:\n    max_sessions: 2\n", fixture(t, "ok.wat"))
	var last string
	for i := 0; i < 4; i++ {
		r := runMur(t, homeDir, proj, nil, "run", "--json")
		if r.Code != 0 {
			t.Fatalf("run %d: %+v", i, r)
		}
		last = parseReady(t, r.Stdout).SessionID
	}
	entries, _ := os.ReadDir(home.ProjectRecords(homeDir, proj))
	if len(entries) != 2 {
		t.Fatalf("%d sessions kept, want 2", len(entries))
	}
	if entries[1].Name() != last {
		t.Errorf("the newest session %s is not among those kept: %v", last, entries)
	}
}

// A full disk under the records dir: the run goes on and ends ok, warning once.
func TestRunTraceOnFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "full"), "name: full\nversion: 1.0.0\n", fixture(t, "ok.wat"))
	if r := runMur(t, homeDir, proj, nil, "run"); r.Code != 0 { // warm the compile cache
		t.Fatalf("first run: %+v", r)
	}
	recs := filepath.Join(homeDir, ".murmur", "records")
	os.RemoveAll(recs)
	os.MkdirAll(recs, 0o700)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", recs).CombinedOutput(); err != nil {
		t.Skipf("mount refused (%v: %s): cannot test a full disk here", err, bytes.TrimSpace(out))
	}
	defer exec.Command("umount", recs).Run()
	// Fill it.
	f, _ := os.Create(filepath.Join(recs, "filler"))
	f.Write(make([]byte, 1<<20))
	f.Close()
	// A trace that cannot be written ends the session: it does not go on
	// unrecorded (E-IO-056, exit 1), and what was written stays readable.
	r := runMur(t, homeDir, proj, nil, "run", "--json")
	if r.Code != 1 || !strings.Contains(r.Stderr, "warning[W-IO-050]") || strings.Count(r.Stderr, "W-IO-050") != 1 ||
		!strings.Contains(r.Stderr, "error[E-IO-056]") {
		t.Fatalf("run on a full disk: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	tf, err := trace.ReadFile(filepath.Join(rd.RecordsDir, trace.FileName))
	if err != nil || tf.Truncated || len(tf.Bad) != 0 {
		t.Errorf("trace on a full disk: %+v, %v", tf, err)
	}
}

// A capsule that invokes a declared WASM tool: one tool_call line per
// invoke (ok or error), totals in session_end, and with otel_endpoint set,
// one capsule.session span and one capsule.tool_call span per invoke.
func TestRunToolCallsAndSpans(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	publishEchoTool(t, homeDir, base)
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	manifest := "name: caller\nversion: 0.1.0\nartifacts:\n  - name: acme/echo\n    version: 1.0.0\nobservability:\n  otel_endpoint: " + srv.URL + "\n"
	proj := capsule(t, filepath.Join(base, "caller"), manifest, fixture(t, "capsule-probe.wasm"))

	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "invoke echo hello tools")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	got, _ := os.ReadFile(filepath.Join(rd.Workdir, "out", "result.txt"))
	if !strings.Contains(string(got), "status: passed") || !strings.Contains(string(got), `data: "hello tools"`) {
		t.Errorf("tool result seen by the capsule:\n%s", got)
	}
	lines := traceLines(t, rd.RecordsDir)
	if len(lines) != 3 || lines[1].EventType != trace.TypeToolCall {
		t.Fatalf("trace: %+v", lines)
	}
	tc := lines[1]
	if tc.Str("tool_name") != "acme/echo" || tc.Str("status") != "ok" || tc.Int("input_bytes") != 11 || tc.ParentID != lines[0].EventID {
		t.Errorf("tool_call %v", tc.Fields)
	}
	if st := lines[0]; !strings.Contains(string(st.Fields["tools_declared"]), "acme/echo") {
		t.Errorf("tools_declared %s", st.Fields["tools_declared"])
	}
	if end := lastEnd(t, lines); end.Int("tool_calls") != 1 || end.Int("tool_errors") != 0 {
		t.Errorf("session_end %v", end.Fields)
	}
	recv.Mu.Lock()
	names := map[string]int{}
	for _, s := range recv.Spans {
		names[s.Name]++
	}
	recv.Mu.Unlock()
	if names["capsule.session"] != 1 || names["capsule.tool_call"] != 1 {
		t.Errorf("spans received: %v", names)
	}

	// An undeclared tool: the invoke answers err, the run goes on and ends ok.
	r = runMur(t, homeDir, proj, nil, "run", "--json", "--task", "invoke nope x")
	if r.Code != 0 {
		t.Fatalf("run with an undeclared tool: %+v", r)
	}
	rd = parseReady(t, r.Stdout)
	got, _ = os.ReadFile(filepath.Join(rd.Workdir, "out", "result.txt"))
	if !strings.Contains(string(got), "invoke error:") {
		t.Errorf("undeclared tool result:\n%s", got)
	}
	lines = traceLines(t, rd.RecordsDir)
	if end := lastEnd(t, lines); end.Int("tool_calls") != 1 || end.Int("tool_errors") != 1 || lines[1].Str("status") != "error" {
		t.Errorf("undeclared tool trace: %+v", lines)
	}
	if r := runMur(t, homeDir, proj, nil, "trace", "show", rd.SessionID); !strings.Contains(r.Stdout, "tools:     1 (1 failed)") {
		t.Errorf("trace show: %s", r.Stdout)
	}

	// A collector that is down: the run still ends ok, the trace is whole,
	// and the export error is in logs/otel.log.
	srv.Close()
	r = runMur(t, homeDir, proj, nil, "run", "--json", "--task", "invoke echo again")
	if r.Code != 0 {
		t.Fatalf("run with the collector down: %+v", r)
	}
	rd = parseReady(t, r.Stdout)
	if lines := traceLines(t, rd.RecordsDir); len(lines) != 3 {
		t.Errorf("trace with the collector down: %d lines", len(lines))
	}
	if log, _ := os.ReadFile(filepath.Join(rd.RecordsDir, "logs", "otel.log")); !strings.Contains(string(log), "level=ERROR") {
		t.Errorf("otel.log:\n%s", log)
	}
}

// The Go-kit example: build and publish its tool, install into the capsule's
// project, run it, and read it back with mur trace show.
func TestRunGoKitExample(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	tool, capsuleDir := filepath.Join(base, "echo-tool"), filepath.Join(base, "hello-script")
	copyDir(t, filepath.Join(repoRoot(), "examples", "echo-tool"), tool)
	copyDir(t, filepath.Join(repoRoot(), "examples", "hello-script"), capsuleDir)
	for _, step := range []struct {
		dir  string
		args []string
	}{
		{tool, []string{"build"}}, {tool, []string{"publish"}}, {capsuleDir, []string{"install"}},
	} {
		if r := runMur(t, homeDir, step.dir, nil, step.args...); r.Code != 0 {
			t.Fatalf("mur %v: %+v", step.args, r)
		}
	}
	r := runMur(t, homeDir, capsuleDir, nil, "run", "--json", "--task", "hello from the test")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	got, err := os.ReadFile(filepath.Join(rd.Workdir, "out", "result.txt"))
	if err != nil || !strings.Contains(string(got), "hello from the test") {
		t.Errorf("result.txt %q, %v", got, err)
	}
	r = runMur(t, homeDir, capsuleDir, nil, "trace", "show")
	for _, want := range []string{rd.SessionID, "local/hello-script@0.1.0 (script)", "ending:    ok", "local/echo-tool", "tools:     1"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("trace show lacks %q:\n%s", want, r.Stdout)
		}
	}
}

// publishWAT wraps a WAT component into a .mur.zip (murmur.yaml + one root
// .wasm holding the WAT text, which the engine compiles) and publishes it to
// the global store under home.
func publishWAT(t testing.TB, homeDir, name, version, runtime string, wat []byte) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"murmur.yaml", []byte(fmt.Sprintf("name: %s\nversion: %s\nruntime: %s\n", name, version, runtime))},
		{"component.wasm", wat},
	} {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(f.data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Global(homeDir).Publish(buf.Bytes(), false); err != nil {
		t.Fatal(err)
	}
}

// A tool that traps: the capsule's invoke answers err, the capsule goes on
// and ends ok; the tool_call line records the error.
func TestRunToolThatTraps(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	wat, err := os.ReadFile(filepath.Join(repoRoot(), "internal", "hostapi", "testdata", "trap_tool.wat"))
	if err != nil {
		t.Fatal(err)
	}
	publishWAT(t, homeDir, "acme/trapper", "1.0.0", "tool", wat)
	proj := capsule(t, filepath.Join(base, "caller"), "name: caller\nversion: 0.1.0\nartifacts:\n  - name: acme/trapper\n    version: 1.0.0\n", fixture(t, "capsule-probe.wasm"))
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "invoke trapper boom")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	got, _ := os.ReadFile(filepath.Join(rd.Workdir, "out", "result.txt"))
	if !strings.Contains(string(got), "invoke error:") {
		t.Errorf("result of invoking a trapping tool:\n%s", got)
	}
	lines := traceLines(t, rd.RecordsDir)
	end := lastEnd(t, lines)
	if len(lines) != 3 || lines[1].Str("status") != "error" || lines[1].Str("error") == "" || end.Str("exit_status") != "ok" || end.Int("tool_errors") != 1 {
		t.Errorf("trace: %+v", lines)
	}
}

// A running record that cannot be written is a W-SEC-023 warning; the run
// goes on and ends ok.
func TestRunRunningRecordUnwritable(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "p"), "name: p\nversion: 1.0.0\n", fixture(t, "ok.wat"))
	os.MkdirAll(filepath.Join(homeDir, ".murmur"), 0o700)
	os.WriteFile(filepath.Join(homeDir, ".murmur", "running"), []byte("a file, not a directory"), 0o600)
	r := runMur(t, homeDir, proj, nil, "run", "--json")
	if r.Code != 0 || !strings.Contains(r.Stderr, "warning[W-SEC-023]") {
		t.Fatalf("run with ~/.murmur/running unwritable: %+v", r)
	}
	if end := lastEnd(t, traceLines(t, parseReady(t, r.Stdout).RecordsDir)); end.Str("exit_status") != "ok" {
		t.Errorf("session_end %v", end.Fields)
	}
}

// wasi:http from the built binary: the request is denied (the capsule's run
// returns only then) and logged in logs/http.log.
func TestRunDeniesHTTP(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "net"), "name: net\nversion: 1.0.0\n", fixture(t, "http_capsule.wat"))
	r := runMur(t, homeDir, proj, nil, "run", "--json")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	log, _ := os.ReadFile(filepath.Join(rd.RecordsDir, "logs", "http.log"))
	if !strings.Contains(string(log), "wasi:http request denied") || !strings.Contains(string(log), "blocked.example.com") {
		t.Errorf("http.log:\n%s", log)
	}
	if n := len(traceLines(t, rd.RecordsDir)); n != 2 {
		t.Errorf("a capsule's own wasi:http requests are not traced, yet the trace has %d lines", n)
	}
}

// A work folder that holds the runtime's own state is refused before
// anything is created (E-RUN-056): $HOME, /, the project directory.
func TestRunRefusesAWorkFolderHoldingState(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "p"), "name: p\nversion: 1.0.0\n", fixture(t, "ok.wat"))
	for _, wd := range []string{homeDir, "/", proj, filepath.Join(homeDir, ".murmur")} {
		r := runMur(t, homeDir, proj, nil, "run", "--workdir", wd)
		if r.Code != 1 || !strings.Contains(r.Stderr, "error[E-RUN-056]") {
			t.Errorf("--workdir %s: %+v", wd, r)
		}
	}
	if _, err := os.Stat(filepath.Join(homeDir, ".murmur", "records")); !os.IsNotExist(err) {
		t.Errorf("a refused run left records: %v", err)
	}
}
