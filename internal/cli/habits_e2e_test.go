package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/e2e"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/version"
)

// Issue 24 item 9: the habits a docker or gh user brings.

// mur version prints the version and the revision the binary was really
// built from, as go version -m reads it from the binary itself.
func TestVersionCommand(t *testing.T) {
	homeDir := t.TempDir()
	out, err := exec.Command("go", "version", "-m", murBin(t)).Output()
	if err != nil {
		t.Fatal(err)
	}
	rev, modified := "devel", false
	if m := regexp.MustCompile(`(?m)^\s+build\s+vcs\.revision=(\S+)$`).FindSubmatch(out); m != nil {
		rev = string(m[1])
	}
	modified = regexp.MustCompile(`(?m)^\s+build\s+vcs\.modified=true$`).Match(out)
	if modified {
		rev += "+modified"
	}
	r := runMur(t, homeDir, t.TempDir(), nil, "version")
	lines := strings.Split(r.Stdout, "\n")
	if r.Code != 0 || len(lines) < 3 || lines[0] != "mur "+version.Version || lines[1] != "revision  "+rev ||
		!strings.HasPrefix(lines[2], "build     ") {
		t.Fatalf("mur version (want revision %s): %+v", rev, r)
	}
	r = runMur(t, homeDir, t.TempDir(), nil, "version", "--json")
	var v struct{ Version, Revision, Build, Go string }
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil || v.Version != version.Version || v.Revision != rev ||
		(v.Build != "in-process" && v.Build != "murdriver") || !strings.HasPrefix(v.Go, "go") {
		t.Fatalf("mur version --json: %+v %v", r, err)
	}
	// --version stays the one line scripts read.
	if r := runMur(t, homeDir, t.TempDir(), nil, "--version"); r.Stdout != "mur "+version.Version+"\n" {
		t.Fatalf("--version: %+v", r)
	}
}

// Each command a newcomer reaches for first shows examples in its help.
func TestHelpHasExamples(t *testing.T) {
	homeDir := t.TempDir()
	for _, c := range [][]string{{"run"}, {"stop"}, {"trace"}, {"trace", "show"}, {"trace", "rm"}, {"build"}, {"publish"}, {"install"}, {"init"}, {"version"}} {
		r := runMur(t, homeDir, t.TempDir(), nil, append(c, "--help")...)
		i := strings.Index(r.Stdout, "\nExamples:\n  mur "+c[0])
		if r.Code != 0 || i < 0 {
			t.Errorf("mur %s --help has no Examples: section: %+v", strings.Join(c, " "), r)
		}
	}
}

// build, publish, install and stop take --json: one JSON line on stdout,
// and the error object when they fail.
func TestJSONOnStoreCommandsAndStop(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	tool := filepath.Join(base, "echo")
	os.MkdirAll(tool, 0o755)
	os.WriteFile(filepath.Join(tool, "murmur.yaml"), []byte("name: acme/echo\nversion: 1.0.0\nruntime: tool\n"), 0o644)
	wasm, err := os.ReadFile(filepath.Join(repoRoot(), "testdata", "components", "tool-echo", "tool-echo.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tool, "tool-echo.wasm"), wasm, 0o644)
	one := func(r murResult, v any) {
		t.Helper()
		if strings.Count(r.Stdout, "\n") != 1 {
			t.Fatalf("not one line on stdout: %+v", r)
		}
		if err := json.Unmarshal([]byte(r.Stdout), v); err != nil {
			t.Fatalf("%v: %+v", err, r)
		}
	}

	var b struct {
		Name, Version, Runtime, Payload, Path, SHA256 string
		Files, Bytes                                  int
	}
	r := runMur(t, homeDir, tool, nil, "build", "--json")
	one(r, &b)
	if r.Code != 0 || b.Name != "acme/echo" || b.Version != "1.0.0" || b.Runtime != "tool" || b.Payload != "tool-echo.wasm" ||
		b.Path != filepath.Join(tool, "echo-1.0.0.mur.zip") || len(b.SHA256) != 64 || b.Files != 2 {
		t.Fatalf("build --json: %+v %+v", b, r)
	}
	if st, err := os.Stat(b.Path); err != nil || st.Size() != int64(b.Bytes) {
		t.Fatalf("the zip build --json names: %v %v", st, err)
	}

	type stored struct {
		Name, Version, Runtime, SHA256, Store, Path string
		Unchanged                                   bool
	}
	for i, want := range []bool{false, true} {
		var p stored
		r = runMur(t, homeDir, tool, nil, "publish", "--json")
		one(r, &p)
		if r.Code != 0 || p.Name != "acme/echo" || p.SHA256 != b.SHA256 || p.Store != "global" || p.Unchanged != want ||
			p.Path != filepath.Join(home.Artifacts(homeDir), "acme", "echo", "1.0.0") {
			t.Fatalf("publish --json #%d: %+v %+v", i, p, r)
		}
	}

	proj := filepath.Join(base, "proj")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte("name: p\nversion: 0.1.0\nartifacts:\n  - name: acme/echo\n    version: 1.0.0\n"), 0o644)
	var s stored
	r = runMur(t, homeDir, proj, nil, "install", "--json", "acme/echo@1.0.0")
	one(r, &s)
	if r.Code != 0 || s.Store != "project" || s.SHA256 != b.SHA256 || s.Unchanged {
		t.Fatalf("install REF --json: %+v %+v", s, r)
	}
	type report struct {
		Artifacts []struct {
			Name, Version, Runtime, SHA256 string
			OK                             bool
			Error                          *struct{ Code, Message string }
		}
		Lock             string
		Pinned, Problems int
		OK               bool
	}
	var rep report
	r = runMur(t, homeDir, proj, nil, "install", "--json")
	one(r, &rep)
	if r.Code != 0 || !rep.OK || rep.Pinned != 1 || len(rep.Artifacts) != 1 || !rep.Artifacts[0].OK ||
		rep.Artifacts[0].SHA256 != b.SHA256 || rep.Lock != filepath.Join(proj, "murmur.lock") {
		t.Fatalf("install --json: %+v %+v", rep, r)
	}
	// A failure is in the report, its diagnostic on stderr, exit 1.
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte("name: p\nversion: 0.1.0\nartifacts:\n  - name: acme/echo\n    version: 1.0.0\n  - name: acme/missing\n    version: 2.0.0\n"), 0o644)
	rep = report{}
	r = runMur(t, homeDir, proj, nil, "install", "--json")
	one(r, &rep)
	if r.Code != 1 || rep.OK || rep.Problems != 1 || len(rep.Artifacts) != 2 || rep.Artifacts[1].Error == nil ||
		rep.Artifacts[1].Error.Code != "E-REG-001" || !strings.Contains(r.Stderr, "error[E-REG-019]") {
		t.Fatalf("install --json with a missing artifact: %+v %+v", rep, r)
	}
	// A command that fails before its JSON prints the error object.
	r = runMur(t, homeDir, t.TempDir(), nil, "build", "--json")
	if r.Code != 1 || !jsonErrorOnly(r.Stdout, "E-BLD-001") {
		t.Fatalf("build --json with no manifest: %+v", r)
	}

	// mur stop --json, by @1 of this project, on a real process it signals.
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { sleeper.Wait(); close(done) }()
	defer func() { sleeper.Process.Kill(); <-done }()
	start, err := running.ProcessStart(sleeper.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	id := ids.New(ids.Session)
	writeTrace(t, homeDir, proj, id, false, 0)
	writeRecord(t, homeDir, id, sleeper.Process.Pid, start)
	var st struct {
		SessionID                       string `json:"session_id"`
		State                           string
		Canceled, Terminated, Signalled []string
	}
	r = runMur(t, homeDir, proj, nil, "stop", "--json", "@1")
	one(r, &st)
	if r.Code != 0 || st.SessionID != id || st.State != "stopped" || len(st.Signalled) != 1 || st.Signalled[0] != "SIGTERM" ||
		st.Canceled == nil || st.Terminated == nil {
		t.Fatalf("stop --json @1: %+v %+v", st, r)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the stopped process is still there")
	}
	// A stale record: not_running.
	own, _ := running.ProcessStart(os.Getpid())
	stale := writeRecord(t, homeDir, "", os.Getpid(), own+"1")
	st = struct {
		SessionID                       string `json:"session_id"`
		State                           string
		Canceled, Terminated, Signalled []string
	}{}
	r = runMur(t, homeDir, proj, nil, "stop", "--json", stale[len(stale)-8:])
	one(r, &st)
	if r.Code != 0 || st.SessionID != stale || st.State != "not_running" {
		t.Fatalf("stop --json on a stale record: %+v %+v", st, r)
	}
}

// Issue 24 item 7: one way to name a session. Every command that takes
// one takes the full id, a unique suffix of 8 or more characters and @N,
// and refuses alike.
func TestSessionNamedAlike(t *testing.T) {
	homeDir, proj := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte("name: demo\nversion: 0.2.0\n"), 0o600)
	older := ids.AtTime(ids.Session, time.Now().Add(-2*time.Hour))
	// Two ids that share their last 8 characters, so 8 of them are ambiguous.
	twinA := ids.AtTime(ids.Session, time.Now().Add(-time.Hour))
	twinB := twinA[:len(twinA)-12] + "0000" + twinA[len(twinA)-8:]
	if twinB == twinA {
		twinB = twinA[:len(twinA)-12] + "1111" + twinA[len(twinA)-8:]
	}
	for _, id := range []string{older, twinA, twinB} {
		writeTrace(t, homeDir, proj, id, true, 1)
	}
	// And two running records sharing the same 8 (stale: nothing is signalled).
	own, _ := running.ProcessStart(os.Getpid())
	writeRecord(t, homeDir, twinA, os.Getpid(), own+"1")
	writeRecord(t, homeDir, twinB, os.Getpid(), own+"1")

	shown := func(args []string, want string) {
		t.Helper()
		r := runMur(t, homeDir, proj, nil, args...)
		if r.Code != 0 || !strings.Contains(r.Stdout, "session:   "+want) {
			t.Errorf("mur %v: want session %s, got %+v", args, want, r)
		}
	}
	shown([]string{"trace", "show", older}, older)
	shown([]string{"trace", "show", older[len(older)-8:]}, older)
	shown([]string{"trace", "show", older[len(older)-20:]}, older)
	shown([]string{"trace", "show", twinA[len(twinA)-12:]}, twinA)
	shown([]string{"trace", "show", "@3"}, older)
	// From another directory, a suffix is looked for under every project.
	r := runMur(t, homeDir, t.TempDir(), nil, "trace", "show", older[len(older)-10:])
	if r.Code != 0 || !strings.Contains(r.Stdout, older) {
		t.Errorf("suffix from elsewhere: %+v", r)
	}

	for _, cmd := range [][]string{{"stop"}, {"trace", "show"}, {"trace", "rm"}} {
		for _, tc := range []struct {
			ref, code string
			status    int
		}{
			{twinA[len(twinA)-3:], "E-RUN-052", 2},
			{"@0", "E-RUN-052", 2},
			{"@x", "E-RUN-052", 2},
			{"not-a-session", "E-RUN-052", 2},
			{"abababababab", "E-RUN-053", 1},
			{twinA[len(twinA)-8:], "E-RUN-054", 1},
		} {
			args := append(append([]string{}, cmd...), tc.ref)
			r := runMur(t, homeDir, proj, nil, args...)
			if r.Code != tc.status || !strings.Contains(r.Stderr, "error["+tc.code+"]") || r.Stdout != "" {
				t.Errorf("mur %v: want %s (exit %d), got %+v", args, tc.code, tc.status, r)
			}
		}
	}
	if left, _ := running.Scan(home.Running(homeDir)); len(left) != 2 {
		t.Fatalf("a refusal touched the running records: %+v", left)
	}
	// trace rm by @N and by suffix; the ids that are left renumber.
	if r := runMur(t, homeDir, proj, nil, "trace", "rm", "@3"); r.Code != 0 || !strings.Contains(r.Stdout, older) {
		t.Fatalf("trace rm @3: %+v", r)
	}
	if r := runMur(t, homeDir, proj, nil, "trace", "rm", twinB[len(twinB)-12:]); r.Code != 0 || !strings.Contains(r.Stdout, twinB) {
		t.Fatalf("trace rm by suffix: %+v", r)
	}
	// mur stop by suffix: the twin left in the records is now named by its 8.
	if r := runMur(t, homeDir, proj, nil, "stop", twinB[len(twinB)-12:]); r.Code != 0 || !strings.Contains(r.Stdout, "not running: "+twinB) {
		t.Fatalf("stop by suffix: %+v", r)
	}
}

// Shell completion, through cobra's __complete (what the scripts of mur
// completion call): session ids and @N, --containment classes, and the
// capsules of the global store with their versions.
func TestCompletion(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := filepath.Join(base, "proj")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte("name: demo\nversion: 0.2.0\n"), 0o600)
	older := ids.AtTime(ids.Session, time.Now().Add(-time.Hour))
	newer := ids.New(ids.Session)
	writeTrace(t, homeDir, proj, older, true, 0)
	writeTrace(t, homeDir, proj, newer, false, 0)
	own, _ := running.ProcessStart(os.Getpid())
	writeRecord(t, homeDir, newer, os.Getpid(), own) // this test's own process: live
	for _, v := range []string{"1.9.0", "1.10.0"} {
		dir := filepath.Join(base, "w"+v)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "murmur.yaml"), []byte("name: acme/worker\nversion: "+v+"\ninference:\n  model: m\n"), 0o644)
		for _, c := range []string{"build", "publish"} {
			if r := runMur(t, homeDir, dir, nil, c); r.Code != 0 {
				t.Fatalf("%s: %+v", c, r)
			}
		}
	}
	complete := func(args ...string) []string {
		t.Helper()
		r := runMur(t, homeDir, proj, nil, append([]string{"__complete"}, args...)...)
		if r.Code != 0 {
			t.Fatalf("__complete %v: %+v", args, r)
		}
		var vals []string
		for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
			if !strings.HasPrefix(l, ":") {
				v, _, _ := strings.Cut(l, "\t")
				vals = append(vals, v)
			}
		}
		return vals
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"stop", ""}, newer + " @1"},
		{[]string{"trace", "show", "@"}, "@1 @2"},
		{[]string{"trace", "rm", ""}, newer + " " + older},
		{[]string{"run", "--containment", ""}, "advisory scoped sealed"},
		{[]string{"run", "--capsule", ""}, "acme/worker"},
		{[]string{"run", "--capsule", "acme/worker", "--capsule-version", ""}, "1.10.0 1.9.0"},
	} {
		if got := strings.Join(complete(tc.args...), " "); got != tc.want {
			t.Errorf("__complete %q = %q, want %q", tc.args, got, tc.want)
		}
	}
	// The scripts themselves call __complete: bash's does.
	r := runMur(t, homeDir, proj, nil, "completion", "bash")
	if r.Code != 0 || !strings.Contains(r.Stdout, "__complete") {
		t.Fatalf("completion bash: %+v", r)
	}
}

// mur run takes the project as DIR or FILE; --capsule alone is a usage
// error that lists the installed versions and names the newest.
func TestRunProjectArgAndNewestCapsule(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	for _, v := range []string{"1.9.0", "1.10.0", "1.10.0-rc1"} {
		dir := filepath.Join(base, "w"+v)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "murmur.yaml"), []byte("name: acme/worker\nversion: "+v+"\ninference:\n  model: m\n"), 0o644)
		for _, c := range []string{"build", "publish"} {
			if r := runMur(t, homeDir, dir, nil, c); r.Code != 0 {
				t.Fatalf("%s: %+v", c, r)
			}
		}
	}
	dir := filepath.Join(base, "w1.9.0")
	elsewhere := t.TempDir()
	for _, arg := range []string{dir, filepath.Join(dir, "murmur.yaml")} {
		r := runMur(t, homeDir, elsewhere, nil, "run", arg, "--explain-scope")
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "acme/worker@1.9.0: ") {
			t.Errorf("run %s --explain-scope: %+v", arg, r)
		}
	}
	for _, args := range [][]string{{"run", dir, "--manifest", dir}, {"run", dir, "--capsule", "acme/worker"}, {"run", dir, dir},
		{"run", "--capsule-version", "1.9.0"}} {
		if r := runMur(t, homeDir, elsewhere, nil, args...); r.Code != 2 || !strings.Contains(r.Stderr, "E-CFG-001") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	r := runMur(t, homeDir, elsewhere, nil, "run", "--capsule", "acme/worker", "--explain-scope")
	if r.Code != 2 || !strings.Contains(r.Stderr, "error[E-CFG-001]") || !strings.Contains(r.Stderr, "--capsule-version 1.10.0") ||
		!strings.Contains(r.Stderr, "1.9.0") || !strings.Contains(r.Stderr, "1.10.0-rc1") {
		t.Fatalf("--capsule alone: %+v", r)
	}
	r = runMur(t, homeDir, elsewhere, nil, "run", "--capsule", "acme/worker", "--capsule-version", "1.9.0", "--explain-scope")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "acme/worker@1.9.0: ") || strings.Contains(r.Stderr, "newest") {
		t.Fatalf("--capsule with --capsule-version: %+v", r)
	}
	if r := runMur(t, homeDir, elsewhere, nil, "run", "--capsule", "acme/none"); r.Code != 2 || !strings.Contains(r.Stderr, "no version of acme/none is installed") {
		t.Fatalf("--capsule not installed: %+v", r)
	}
}

// Colour: error, warning and hint on a terminal's stderr, status words on a
// terminal's stdout; none into a pipe or with NO_COLOR set.
func TestColourOnATerminalOnly(t *testing.T) {
	homeDir, proj := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte("name: demo\nversion: 0.2.0\ncolour: red\n"), 0o600)
	const esc = "\x1b["
	onTTY := func(env []string, args ...string) string {
		t.Helper()
		master, slave := openPTY(t)
		defer master.Close()
		ctx, cancel := context.WithTimeout(context.Background(), murTimeout)
		defer cancel()
		cmd := e2e.CommandContext(ctx, t, murBin(t), homeDir, proj, append([]string{"TERM=xterm"}, env...), args...)
		cmd.Stdout, cmd.Stderr = slave, slave
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		slave.Close()
		var buf bytes.Buffer
		io.Copy(&buf, master) // ends with EIO once the child exits
		cmd.Wait()
		return buf.String()
	}
	out := onTTY(nil, "doctor")
	for _, want := range []string{esc + "1;33mwarning" + esc + "0m[W-MAN-001]", esc + "32mok" + esc + "0m    manifest local/demo@0.2.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor on a terminal lacks %q:\n%q", want, out)
		}
	}
	out = onTTY(nil, "trace", "show", "@0")
	for _, want := range []string{esc + "1;31merror" + esc + "0m[E-RUN-052]", "  " + esc + "36mhint" + esc + "0m: "} {
		if !strings.Contains(out, want) {
			t.Errorf("an error on a terminal lacks %q:\n%q", want, out)
		}
	}
	for _, env := range [][]string{{"NO_COLOR=1"}, {"TERM=dumb"}} {
		if out := onTTY(env, "doctor"); strings.Contains(out, esc) || !strings.Contains(out, "warning[W-MAN-001]") {
			t.Errorf("%v: colour anyway:\n%q", env, out)
		}
	}
	r := runMur(t, homeDir, proj, nil, "doctor")
	if strings.Contains(r.Stdout+r.Stderr, esc) || !strings.Contains(r.Stderr, "warning[W-MAN-001]") {
		t.Errorf("colour into a pipe: %+v", r)
	}
}
