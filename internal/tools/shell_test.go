package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/logfile"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/testbin"
)

// shellFixture is a session with a work folder, a records dir and a
// runtime dir, and mur's own environment holding secrets that must never
// reach a command.
type shellFixture struct {
	env    *ShellEnv
	helper string // the murmur-argv helper binary
}

func newShellFixture(t *testing.T) *shellFixture {
	t.Helper()
	root := t.TempDir()
	sess := &session.Session{
		ID: "ses_0123456789abcdef0123456789abcdef", Name: "local/shelly", Version: "1.2.3",
		CapsuleURL: "http://127.0.0.1:4567",
		Workdir:    filepath.Join(root, "work"), RecordsDir: filepath.Join(root, "records"), RuntimeDir: filepath.Join(root, "runtime"),
	}
	for _, d := range []string{sess.Workdir, sess.RecordsDir, sess.RuntimeDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	helper := testbin.Path(t, "./internal/tools/testdata/murmur-argv")
	// mur's own environment: the real one, so a leak of anything in it
	// would show.
	t.Setenv("PATH", filepath.Dir(helper)+string(filepath.ListSeparator)+os.Getenv("PATH"))
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	t.Setenv("GITHUB_TOKEN", "ghp_secret")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
	t.Setenv("SHELLY_ALLOWED", "yes")
	t.Setenv("HOME", "/root/real-home")
	t.Setenv("MURMUR_SESSION_ID", "ses_spoofed")
	os.Unsetenv("SHELLY_MISSING")
	env := &ShellEnv{
		Session:  sess,
		EnvAllow: []string{"SHELLY_ALLOWED", "SHELLY_MISSING", "HOME", "MURMUR_SESSION_ID", "PATH"},
		Deadline: 30 * time.Second,
	}
	return &shellFixture{env: env, helper: helper}
}

func (f *shellFixture) call(t *testing.T, binary, cmd string) ShellResult {
	t.Helper()
	r, err := f.try(binary, cmd, "call_1")
	if err != nil {
		t.Fatalf("%s %q: %v", binary, cmd, err)
	}
	return r
}

func (f *shellFixture) try(binary, cmd, id string) (ShellResult, error) {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return NewShell(f.env, binary).Run(context.Background(), ShellCall{TaskID: "tsk_1", Turn: 2, ToolCallID: id, Input: in})
}

type argvOut struct {
	Args       []string `json:"args"`
	Env        []string `json:"env"`
	Dir        string   `json:"dir"`
	StdinBytes int      `json:"stdin_bytes"`
	StdinErr   bool     `json:"stdin_err"`
}

func (f *shellFixture) argv(t *testing.T, cmd string) (argvOut, ShellResult) {
	t.Helper()
	r := f.call(t, "murmur-argv", cmd)
	_, rest, ok := strings.Cut(r.Text, "Stdout:\n")
	if !ok {
		t.Fatalf("no Stdout in %q", r.Text)
	}
	var out argvOut
	if err := json.Unmarshal([]byte(strings.SplitN(rest, "\n", 2)[0]), &out); err != nil {
		t.Fatalf("helper said %q: %v", r.Text, err)
	}
	return out, r
}

func TestShellEntry(t *testing.T) {
	f := newShellFixture(t)
	bash, ls := NewShell(f.env, "bash"), NewShell(f.env, "ls")
	if bash.Name() != "bash" || bash.Kind() != KindShell || string(bash.Schema()) != `{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}` {
		t.Fatalf("entry %s %s %s", bash.Name(), bash.Kind(), bash.Schema())
	}
	if d := bash.Description(); !strings.Contains(d, "bash -c <command>") || !strings.Contains(d, "30s") {
		t.Errorf("bash description %q", d)
	}
	if d := ls.Description(); !strings.Contains(d, "directly") || !strings.Contains(d, "nothing expanded") {
		t.Errorf("ls description %q", d)
	}
	var _ Entry = bash
}

func TestShellEnvironmentExactly(t *testing.T) {
	f := newShellFixture(t)
	out, _ := f.argv(t, "")
	recs := f.env.Session.RecordsDir
	want := []string{
		"PATH=" + os.Getenv("PATH"),
		"LANG=C.UTF-8",
		"HOME=" + filepath.Join(recs, "home"),
		"MURMUR_SESSION_ID=ses_0123456789abcdef0123456789abcdef",
		"MURMUR_CAPSULE_NAME=local/shelly",
		"MURMUR_CAPSULE_VERSION=1.2.3",
		"MURMUR_RUNTIME_DIR=" + f.env.Session.RuntimeDir,
		"MURMUR_CAPSULE_URL=http://127.0.0.1:4567",
		"SHELLY_ALLOWED=yes",
	}
	got := slices.Clone(out.Env)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("environment\n%s\nwant exactly\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Through a shell too: bash adds its own few (PWD, SHLVL, _), nothing of mur's.
	r := f.call(t, "bash", "env")
	for _, secret := range []string{"sk-ant-secret", "sk-secret", "ghp_secret", "aws-secret", "real-home", "ses_spoofed"} {
		if strings.Contains(r.Text, secret) {
			t.Errorf("a command saw %q:\n%s", secret, r.Text)
		}
	}
	fi, err := os.Stat(filepath.Join(recs, "home"))
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("HOME: %v %v", fi, err)
	}
}

func TestShellBashResult(t *testing.T) {
	f := newShellFixture(t)
	r := f.call(t, "bash", "cd /tmp && X=42; echo \"$PWD $X\"; echo oops >&2; exit 3")
	work := f.env.Session.Workdir
	bash, _ := exec.LookPath("bash")
	if bash == "" {
		t.Skip("no bash")
	}
	logPath := filepath.Join(f.env.Session.RecordsDir, "logs", "shell", "call_1.log")
	want := "$ cd /tmp && X=42; echo \"$PWD $X\"; echo oops >&2; exit 3\nExit code: 3\nStdout:\n/tmp 42\nStderr:\noops\nThe whole output is in " + logPath + "\n"
	if r.Text != want {
		t.Fatalf("text\n%q\nwant\n%q", r.Text, want)
	}
	l := r.Line
	if l.TaskID != "tsk_1" || l.Turn != 2 || l.ToolCallID != "call_1" || l.ExitCode != 3 || l.StdoutBytes != 8 || l.StderrBytes != 5 || l.Truncated || l.LogPath != logPath {
		t.Errorf("line %+v", l)
	}
	if real, _ := filepath.EvalSymlinks(l.Binary); !filepath.IsAbs(l.Binary) || filepath.Base(real) != "bash" {
		t.Errorf("binary %q", l.Binary)
	}
	log, _ := os.ReadFile(logPath)
	if !strings.Contains(string(log), "$ cd /tmp") || !strings.Contains(string(log), "/tmp 42\n") || !strings.Contains(string(log), "oops\n") {
		t.Errorf("log %q", log)
	}
	// The working directory is the work folder.
	if r := f.call(t, "bash", "pwd"); !strings.Contains(r.Text, "Stdout:\n"+work+"\n") {
		t.Errorf("pwd: %q", r.Text)
	}
	// Stdin is /dev/null.
	if r := f.call(t, "bash", "wc -c"); !strings.Contains(r.Text, "Stdout:\n0\n") {
		t.Errorf("stdin: %q", r.Text)
	}
}

func TestShellScope(t *testing.T) {
	f := newShellFixture(t)
	scope := "sub/dir"
	f.env.Scope = &scope
	out, _ := f.argv(t, "")
	want, _ := filepath.EvalSymlinks(filepath.Join(f.env.Session.Workdir, "sub", "dir"))
	if out.Dir != want {
		t.Fatalf("dir %q, want %q", out.Dir, want)
	}
}

func TestShellDirectBinary(t *testing.T) {
	f := newShellFixture(t)
	out, r := f.argv(t, `a 'b c' "d \"e\" \$f" g\ h $HOME * ~ '|' ; > x && $(id) `+"`id`"+` ""`)
	want := []string{"a", "b c", `d "e" $f`, "g h", "$HOME", "*", "~", "|", ";", ">", "x", "&&", "$(id)", "`id`", ""}
	if !slices.Equal(out.Args, want) {
		t.Fatalf("args %q, want %q", out.Args, want)
	}
	if out.StdinBytes != 0 || out.StdinErr {
		t.Errorf("stdin %d bytes (err %v)", out.StdinBytes, out.StdinErr)
	}
	if r.Line.Binary != f.helper {
		t.Errorf("binary %q, want %q", r.Line.Binary, f.helper)
	}
	// ls, run directly: a file of the work folder, and a non-zero exit.
	if err := os.WriteFile(filepath.Join(f.env.Session.Workdir, "it's here.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := f.call(t, "ls", `-1 "it's here.txt"`); !strings.Contains(r.Text, "Exit code: 0\nStdout:\nit's here.txt\n") {
		t.Errorf("ls: %q", r.Text)
	}
	if r := f.call(t, "ls", "no-such-file"); !strings.Contains(r.Text, "Exit code: 2\n") || !strings.Contains(r.Text, "no-such-file") {
		t.Errorf("ls of a missing file: %q", r.Text)
	}
	if _, err := exec.LookPath("git"); err == nil {
		if r := f.call(t, "git", "--version"); !strings.Contains(r.Text, "Exit code: 0\nStdout:\ngit version") {
			t.Errorf("git: %q", r.Text)
		}
	}
}

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string
	}{
		{"", nil, ""},
		{"   \t\n ", nil, ""},
		{"a  b\tc\nd", []string{"a", "b", "c", "d"}, ""},
		{`'a b'c"d e"f`, []string{"a bcd ef"}, ""},
		{`'it''s'`, []string{"its"}, ""},
		{`"it's"`, []string{"it's"}, ""},
		{`'a\nb'`, []string{`a\nb`}, ""},
		{`"a\nb\\c\$d\"e"`, []string{`a\nb\c$d"e`}, ""},
		{`a\ b \'c`, []string{"a b", "'c"}, ""},
		{"a\\\nb", []string{"ab"}, ""},
		{`'' ""`, []string{"", ""}, ""},
		{"é 'ü x'", []string{"é", "ü x"}, ""},
		{`$HOME ~/x *.go {a,b} $(rm -rf /)`, []string{"$HOME", "~/x", "*.go", "{a,b}", "$(rm", "-rf", "/)"}, ""},
		{`'open`, nil, "single quote at byte 0 is never closed"},
		{`a "open \"`, nil, "double quote at byte 2 is never closed"},
		{`a\`, nil, "lone backslash"},
	}
	for _, tc := range tests {
		got, err := SplitCommand(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("SplitCommand(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestShellBadInput(t *testing.T) {
	f := newShellFixture(t)
	tests := []struct {
		name, binary string
		input        string
		code, msg    string
	}{
		{"not an object", "bash", `"echo hi"`, "E-RUN-075", `{"command": string}`},
		{"no command", "bash", `{"cmd":"echo"}`, "E-RUN-075", `{"command": string}`},
		{"command not a string", "bash", `{"command":["echo"]}`, "E-RUN-075", `{"command": string}`},
		{"1 MiB", "bash", mustJSON(strings.Repeat("x", 1<<20)), "E-RUN-075", "must be under 1048576 bytes"},
		{"NUL byte", "bash", mustJSON("echo a\x00b"), "E-RUN-075", "NUL byte"},
		{"open quote", "ls", mustJSON(`"x`), "E-RUN-075", "never closed"},
		{"does not resolve", "murmur-no-such-binary", mustJSON("x"), "E-RUN-076", "does not resolve on the session's PATH"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewShell(f.env, tc.binary).Run(context.Background(), ShellCall{ToolCallID: "c", Input: json.RawMessage(tc.input)})
			if diag.Code(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err %v, want %s %q", err, tc.code, tc.msg)
			}
		})
	}
	// An allowed name the host's PATH lacks: the host PATH is what is searched.
	t.Setenv("PATH", "/nonexistent")
	if _, err := f.try("bash", "true", "c"); diag.Code(err) != "E-RUN-076" {
		t.Fatalf("bash off PATH: %v", err)
	}
}

func mustJSON(s string) string {
	in, _ := json.Marshal(map[string]string{"command": s})
	return string(in)
}

func TestShellBigOutput(t *testing.T) {
	f := newShellFixture(t)
	const total = 100_000_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := f.call(t, "bash", fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a; echo done >&2", total))
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Errorf("allocated %d bytes for 100 MB of output: the capture is not bounded", grew)
	}
	l := r.Line
	if l.StdoutBytes != total || !l.Truncated || l.StderrBytes != 5 {
		t.Fatalf("line %+v", l)
	}
	if !strings.Contains(r.Text, fmt.Sprintf("[cut at 16384 of %d bytes]\n", total)) || len(r.Text) > 20<<10 {
		t.Fatalf("text is %d bytes: %q…", len(r.Text), r.Text[:200])
	}
	// The log is capped as a script's logs are (issue 22 item 12: it was
	// kept whole, 100 MB here, outside workdir_max_bytes).
	fi, err := os.Stat(l.LogPath)
	if err != nil || fi.Size() > logfile.LogHeadBytes+logfile.LogTailBytes+4096 || fi.Size() < logfile.LogHeadBytes+logfile.LogTailBytes {
		t.Fatalf("log %v %v: want its head and tail, %d bytes and a line", fi, err, logfile.LogHeadBytes+logfile.LogTailBytes)
	}
	b, _ := os.ReadFile(l.LogPath)
	if !bytes.Contains(b, []byte("bytes dropped here")) || !bytes.Contains(b[len(b)-logfile.LogTailBytes:], []byte("done\n")) || !bytes.HasSuffix(b, []byte("\n[exit code 0]\n")) {
		t.Errorf("log tail %q", b[len(b)-200:])
	}
	if !strings.Contains(r.Text, "bytes between were dropped") {
		t.Errorf("text does not say the log was cut: %q", r.Text[len(r.Text)-300:])
	}
}

func TestShellCutOnCharacter(t *testing.T) {
	f := newShellFixture(t)
	// 16383 bytes, then a two-byte é straddling the 16 KiB limit.
	r := f.call(t, "bash", "head -c 16383 /dev/zero | tr '\\0' a; printf 'é and more'")
	_, rest, _ := strings.Cut(r.Text, "Stdout:\n")
	out, _, _ := strings.Cut(rest, "\n")
	if len(out) != 16383 || strings.ContainsRune(out, 0xFFFD) {
		t.Fatalf("kept %d bytes ending %q", len(out), out[len(out)-4:])
	}
	if !strings.Contains(r.Text, "[cut at 16383 of 16394 bytes]") {
		t.Errorf("note missing: %q", rest[len(out):])
	}
}

func TestShellDeadline(t *testing.T) {
	f := newShellFixture(t)
	f.env.Deadline, f.env.KillGrace = 200*time.Millisecond, 200*time.Millisecond
	r := f.call(t, "bash", "echo before; sleep 30")
	if !strings.Contains(r.Text, "Exit code: 143\nThe command ran past its deadline of 200ms: its process group got SIGTERM.\n") || !strings.Contains(r.Text, "before") {
		t.Errorf("sleep past the deadline: %q", r.Text)
	}
	// One that ignores SIGTERM (and so do its children) gets SIGKILL.
	r = f.call(t, "bash", "trap '' TERM; sleep 30; echo survived")
	if !strings.Contains(r.Text, "Exit code: 137\n") || !strings.Contains(r.Text, "then SIGKILL 200ms later") || strings.Contains(r.Text, "Stdout:\nsurvived") {
		t.Errorf("a command that traps SIGTERM: %q", r.Text)
	}
}

func TestShellBackgroundChildEnded(t *testing.T) {
	f := newShellFixture(t)
	r := f.call(t, "bash", "sleep 30 >/dev/null 2>&1 & echo $!")
	_, rest, _ := strings.Cut(r.Text, "Stdout:\n")
	pid, err := strconv.Atoi(strings.SplitN(rest, "\n", 2)[0])
	if err != nil || !strings.Contains(r.Text, "Exit code: 0") {
		t.Fatalf("%q", r.Text)
	}
	for i := 0; i < 500 && processAlive(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if processAlive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the background child %d outlived its command", pid)
	}
}

func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func TestShellFiftyCommands(t *testing.T) {
	f := newShellFixture(t)
	for i := range 50 {
		id := fmt.Sprintf("call_%d", i)
		r, err := f.try("bash", fmt.Sprintf("echo %d > f%d.txt; cat f%d.txt", i, i, i), id)
		if err != nil || !strings.Contains(r.Text, fmt.Sprintf("Stdout:\n%d\n", i)) || r.Line.ToolCallID != id {
			t.Fatalf("command %d: %v %q", i, err, r.Text)
		}
	}
	logs, _ := os.ReadDir(filepath.Join(f.env.Session.RecordsDir, "logs", "shell"))
	if len(logs) != 50 {
		t.Errorf("%d logs, want 50", len(logs))
	}
}

func TestShellUnsafeCallID(t *testing.T) {
	f := newShellFixture(t)
	r, err := f.try("bash", "true", "../../escape")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(r.Line.LogPath) != filepath.Join(f.env.Session.RecordsDir, "logs", "shell") {
		t.Fatalf("log at %s", r.Line.LogPath)
	}
}

// BenchmarkShellTrue is a shell tool call of true (the allowed binary, run
// directly) against a plain fork+exec of the same binary from Go, in the
// same run: the figure of docs/benchmarks.md.
func BenchmarkShellTrue(b *testing.B) {
	p, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true")
	}
	root := b.TempDir()
	sess := &session.Session{ID: "ses_b", Name: "local/b", Version: "1", Workdir: root, RecordsDir: filepath.Join(root, "records"), RuntimeDir: root}
	sh := NewShell(&ShellEnv{Session: sess, Deadline: time.Minute}, "true")
	in := json.RawMessage(`{"command":""}`)
	b.Run("shell tool", func(b *testing.B) {
		// Each call has its own id, as in a session, so its log is a new file.
		i := 0
		for b.Loop() {
			i++
			if _, err := sh.Run(context.Background(), ShellCall{ToolCallID: "call_" + strconv.Itoa(i), Input: in}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("exec.Command", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command(p).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
