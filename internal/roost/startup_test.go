package roost

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/version"
	"golang.org/x/sys/unix"
)

func baseEnv(homeDir string) []string {
	return []string{"HOME=" + homeDir, "PATH=" + os.Getenv("PATH")}
}

var censusRE = regexp.MustCompile(`^mur-roost: (\d+) live capsules already running on this host, counted from (.+) \((\d+) records read in (\d+\.\d) ms; (\d+) stale and (\d+) unreadable not counted\)$`)

func TestStartupLinesEmptyHome(t *testing.T) {
	t.Parallel()
	homeDir := t.TempDir()
	d := startDaemon(t, homeDir)
	m := censusRE.FindStringSubmatch(d.lines[0])
	if m == nil {
		t.Fatalf("first line: %q", d.lines[0])
	}
	if m[1] != "0" || m[2] != filepath.Join(homeDir, ".murmur", "running") || m[3] != "0" || m[5] != "0" || m[6] != "0" {
		t.Fatalf("census line figures: %q", d.lines[0])
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	want := min(max(set.Count()*8, 16), 256)
	if d.lines[2] != fmt.Sprintf("mur-roost: machine ceiling %d live capsules (--max-live-capsules)", want) {
		t.Fatalf("third line: %q (want ceiling %d)", d.lines[2], want)
	}
	r := d.do("GET", "/health", nil, nil)
	if r.code != 200 || r.raw != "{}" {
		t.Fatalf("GET /health: %d %q", r.code, r.raw)
	}
	// A missing running directory is a host running nothing, and the
	// daemon did not create it.
	if _, err := os.Lstat(filepath.Join(homeDir, ".murmur")); !os.IsNotExist(err) {
		t.Fatalf("the daemon created ~/.murmur: %v", err)
	}
	d.stop()
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	if d.extra.String() != "" {
		t.Fatalf("stdout after the start-up lines: %q", d.extra.String())
	}
}

func TestStartupCeilingGiven(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, t.TempDir(), "--max-live-capsules=3", "--port=0")
	if d.lines[2] != "mur-roost: machine ceiling 3 live capsules (--max-live-capsules)" {
		t.Fatalf("third line: %q", d.lines[2])
	}
}

func TestClampCeiling(t *testing.T) {
	for in, want := range map[int]int{0: 16, 8: 16, 16: 16, 17: 17, 64: 64, 256: 256, 257: 256, 8000: 256} {
		if got := clampCeiling(in); got != want {
			t.Errorf("clampCeiling(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestVersionAndArguments(t *testing.T) {
	t.Parallel()
	env := baseEnv(t.TempDir())
	code, out, errOut := runOnce(t, env, "--version")
	if code != 0 || out != "mur-roost "+version.Version+"\n" || errOut != "" {
		t.Fatalf("--version: %d %q %q", code, out, errOut)
	}
	// --version binds no port even when given one that is taken.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	if code, out, _ := runOnce(t, env, "--port", port, "--version"); code != 0 || !strings.HasPrefix(out, "mur-roost ") {
		t.Fatalf("--port %s --version: %d %q", port, code, out)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--max-total", "5"}, "unknown argument: --max-total"},
		{[]string{"--max-total=5"}, "unknown argument: --max-total"},
		{[]string{"--spawn-allow", "local/a", "--verbose"}, "unknown argument: --verbose"},
		{[]string{"-p", "7700"}, "unknown argument: -p"},
		{[]string{"serve"}, "unknown argument: serve"},
	} {
		code, out, errOut := runOnce(t, env, tc.args...)
		if code != 2 || out != "" || errOut != tc.msg+"\n" {
			t.Errorf("%q: exit %d stdout %q stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.msg)
		}
	}
	// Whole numbers only; nothing means unlimited.
	for _, args := range [][]string{
		{"--max-depth", "-1"}, {"--max-concurrent", "unlimited"}, {"--max-live-capsules", "2.5"},
		{"--max-depth="}, {"--port", "70000"}, {"--max-depth"},
	} {
		code, out, errOut := runOnce(t, env, args...)
		if code != 2 || out != "" || !strings.HasPrefix(errOut, "mur-roost: ") {
			t.Errorf("%q: exit %d stdout %q stderr %q; want a refusal with exit 2", args, code, out, errOut)
		}
	}
}

func TestParseArgs(t *testing.T) {
	c, err := ParseArgs([]string{"--spawn-allow", "local/a", "--spawn-allow=local/b", "--max-depth=0", "--max-concurrent", "7",
		"--registry-path=/r", "--port", "1234", "--max-live-capsules", "0"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.SpawnAllow, ",") != "local/a,local/b" || c.MaxDepth != 0 || c.MaxConcurrent != 7 ||
		c.RegistryPath != "/r" || c.Port != 1234 || c.MaxLiveCapsules != 0 || c.Version {
		t.Fatalf("%+v", c)
	}
	c, err = ParseArgs(nil)
	if err != nil || c.Port != 7700 || c.MaxDepth != 3 || c.MaxConcurrent != 4 || c.MaxLiveCapsules != -1 || c.RegistryPath != "" || len(c.SpawnAllow) != 0 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	// One name per occurrence: a comma list is one (unmatchable) name.
	c, _ = ParseArgs([]string{"--spawn-allow", "local/a,local/b"})
	if len(c.SpawnAllow) != 1 {
		t.Fatalf("comma list split: %q", c.SpawnAllow)
	}
}

// TestStartupRefusals: the daemon refuses to start, exits 1 and binds no port
// when it cannot take the count.
func TestStartupRefusals(t *testing.T) {
	t.Parallel()
	// A file where the running directory belongs.
	fileHome := t.TempDir()
	os.MkdirAll(filepath.Join(fileHome, ".murmur"), 0o700)
	os.WriteFile(filepath.Join(fileHome, ".murmur", "running"), []byte("x"), 0o600)
	rel := "relative/home"

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()

	for _, tc := range []struct {
		name string
		env  []string
		msg  string
	}{
		{"running dir is a file", baseEnv(fileHome),
			"mur-roost: cannot count the capsules already running on this host: " + filepath.Join(fileHome, ".murmur", "running") + ": not a directory"},
		{"HOME unset", []string{"PATH=" + os.Getenv("PATH")},
			"mur-roost: cannot count the capsules already running on this host: the home directory could not be resolved: HOME is not set"},
		{"HOME empty", []string{"HOME=", "PATH=" + os.Getenv("PATH")},
			"mur-roost: cannot count the capsules already running on this host: the home directory could not be resolved: HOME is not set"},
		{"HOME relative", []string{"HOME=" + rel, "PATH=" + os.Getenv("PATH")},
			"mur-roost: cannot count the capsules already running on this host: the home directory could not be resolved: HOME is not an absolute path: " + rel},
	} {
		code, out, errOut := runOnce(t, tc.env, "--port", port)
		if code != 1 || out != "" || errOut != tc.msg+"\n" {
			t.Errorf("%s: exit %d stdout %q stderr %q\nwant exit 1, stderr %q", tc.name, code, out, errOut, tc.msg)
		}
		// No port was bound: it is still free.
		l, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			t.Errorf("%s: port %s not free afterwards: %v", tc.name, port, err)
		} else {
			l.Close()
		}
	}
}

// fileState is what the test compares to prove the daemon wrote nothing.
type fileState struct {
	Name  string
	Mode  fs.FileMode
	Size  int64
	MTime time.Time
	Data  string
}

func snapshotDir(t testing.TB, dir string) []fileState {
	t.Helper()
	var out []fileState
	filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Lstat(p)
		st := fileState{Name: p, Mode: fi.Mode(), Size: fi.Size(), MTime: fi.ModTime()}
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			st.Data = string(b)
		}
		out = append(out, st)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func writeRecord(t testing.TB, dir string, r running.Record) {
	t.Helper()
	data, _ := json.Marshal(r)
	if err := os.WriteFile(filepath.Join(dir, r.SessionID+".json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func record(sid string, pid int, start string) running.Record {
	return running.Record{SessionID: sid, PID: pid, ProcessStart: start, CapsuleName: "local/x",
		CapsuleVersion: "0.1.0", Workdir: "/w", RecordsDir: "/r", StartedAt: "2026-11-29T20:00:00Z"}
}

// startSleeper starts a real process that stands for a running capsule.
func startSleeper(t testing.TB) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ps, err := running.ProcessStart(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, ps
}

// TestStartupCensus fills ~/.murmur/running with live, stale and unreadable
// records and checks the count, the line, the census after start-up (exit
// re-checked on each read, counted once when it registers) and that the
// daemon never touched the directory.
func TestStartupCensus(t *testing.T) {
	t.Parallel()
	homeDir := t.TempDir()
	dir := home.Running(homeDir)
	os.MkdirAll(dir, 0o700)

	selfPID, selfStart, err := running.Self()
	if err != nil {
		t.Fatal(err)
	}
	sleeper, sleeperStart := startSleeper(t)
	sleeper2, sleeper2Start := startSleeper(t)
	// A pid nothing holds: a process that has exited and been reaped.
	gone := exec.Command("true")
	gone.Run()
	boot := running.BootID()

	writeRecord(t, dir, record("ses_live_self", selfPID, selfStart))
	writeRecord(t, dir, record("ses_live_sleeper", sleeper.Process.Pid, sleeperStart))
	writeRecord(t, dir, record("ses_live_sleeper2", sleeper2.Process.Pid, sleeper2Start))
	writeRecord(t, dir, record("ses_live_nostart", selfPID, "no-start-time")) // start time unreadable: counted
	writeRecord(t, dir, record("ses_stale_gone", gone.Process.Pid, boot+":1"))
	writeRecord(t, dir, record("ses_stale_other", selfPID, boot+":1")) // pid held by another process
	writeRecord(t, dir, record("ses_stale_boot", selfPID, "another-boot:1"))
	old := record("ses_unreadable_old", selfPID, selfStart)
	old.RecordsDir = "" // an older mur wrote it
	writeRecord(t, dir, old)
	os.WriteFile(filepath.Join(dir, "ses_garbage.json"), []byte("{not json"), 0o600)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a record"), 0o600)
	os.Chmod(dir, 0o700)
	before := snapshotDir(t, dir)

	reg := t.TempDir()
	publish(t, reg, "local/orchestrator", "0.1.0", "spawn:\n  allow: [local/worker-a]\n")
	publish(t, reg, "local/worker-a", "0.1.0", "")
	d := startDaemon(t, homeDir, "--registry-path", reg, "--spawn-allow", "local/orchestrator", "--max-live-capsules", "6")
	m := censusRE.FindStringSubmatch(d.lines[0])
	if m == nil {
		t.Fatalf("census line: %q", d.lines[0])
	}
	if got := fmt.Sprintf("%s live, dir %s, %s read, %s stale, %s unreadable", m[1], m[2], m[3], m[5], m[6]); got !=
		fmt.Sprintf("4 live, dir %s, 9 read, 3 stale, 2 unreadable", dir) {
		t.Fatalf("census: %s\nline: %s", got, d.lines[0])
	}

	cred := d.mustRegister("ses_top", "local/orchestrator", "0.1.0", "")
	expectFigures(t, d.client, "ses_top", "running", 3, 0, 5)

	// A start-up capsule's exit is seen at the next census read.
	sleeper.Process.Kill()
	sleeper.Wait()
	expectFigures(t, d.client, "ses_top", "running", 3, 0, 4)

	// A start-up capsule that registers is counted once.
	d.mustRegister("ses_live_sleeper2", "local/orchestrator", "0.1.0", "")
	expectFigures(t, d.client, "ses_top", "running", 3, 0, 4)
	// ...and once it has registered, its slot is the session's: the
	// sleeper's exit (the evidence that it is gone) ends the session, and
	// counts it off once, not twice.
	sleeper2.Process.Kill()
	sleeper2.Wait()
	expectFigures(t, d.client, "ses_top", "running", 3, 0, 3)
	expectFigures(t, d.client, "ses_live_sleeper2", "failed", 3, 0, 3)

	// The ceiling counts start-up capsules: 3 counted, ceiling 6.
	d.mustSpawn(cred, "local/worker-a", "0.1.0")
	d.mustSpawn(cred, "local/worker-a", "0.1.0")
	d.mustSpawn(cred, "local/worker-a", "0.1.0")
	expect(t, "spawn at the ceiling", d.spawn(cred, "local/worker-a", "0.1.0"), 403, msgCeiling(6, 6))

	// The one record written since is ses_top's, by this process standing
	// for its runtime (the client writes it before registering).
	// The directory's own mtime moved with that; its mode must not have.
	os.Remove(filepath.Join(dir, "ses_top.json"))
	if after := snapshotDir(t, dir); fmt.Sprint(after[1:]) != fmt.Sprint(before[1:]) || after[0].Mode != before[0].Mode {
		t.Fatalf("the daemon changed %s:\nbefore %v\nafter  %v", dir, before, after)
	}
}

// TestStartupCensusUnlistable: a directory this user may not read. Root
// reads every directory, so this runs only unprivileged.
func TestStartupCensusUnlistable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can list a mode-000 directory; the not-a-directory case covers the refusal")
	}
	homeDir := t.TempDir()
	dir := home.Running(homeDir)
	os.MkdirAll(dir, 0o700)
	os.Chmod(dir, 0)
	defer os.Chmod(dir, 0o700)
	code, _, errOut := runOnce(t, baseEnv(homeDir), "--port", "0")
	want := "mur-roost: cannot count the capsules already running on this host: " + dir + ": permission denied\n"
	if code != 1 || errOut != want {
		t.Fatalf("exit %d stderr %q, want 1 %q", code, errOut, want)
	}
}

// TestHelp: --help and -h print the flag table and exit 0 without binding a
// port; a look-alike is still an unknown argument.
func TestHelp(t *testing.T) {
	t.Parallel()
	env := baseEnv(t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--port", port, "-h"}, {"--max-depth=1", "--help", "--version"}} {
		code, out, errOut := runOnce(t, env, args...)
		if code != 0 || out != Usage || errOut != "" {
			t.Errorf("%q: exit %d stdout %q stderr %q; want exit 0 and the flag table", args, code, out, errOut)
		}
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--help=yes"}, "unknown argument: --help=yes"},
		{[]string{"-help"}, "unknown argument: -help"},
		{[]string{"--h"}, "unknown argument: --h"},
		{[]string{"-h", "--max-total", "1"}, "unknown argument: --max-total"},
	} {
		code, out, errOut := runOnce(t, env, tc.args...)
		if code != 2 || out != "" || errOut != tc.msg+"\n" {
			t.Errorf("%q: exit %d stdout %q stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.msg)
		}
	}
}

// TestUsageNamesEveryFlag: each flag the table shows is one ParseArgs takes,
// and each flag ParseArgs takes is in the table.
func TestUsageNamesEveryFlag(t *testing.T) {
	values := map[string]string{"--port": "1", "--registry-path": "/r", "--spawn-allow": "local/a", "--max-depth": "1",
		"--max-concurrent": "1", "--max-live-capsules": "1"}
	for _, f := range []string{"--version", "--help", "-h"} {
		values[f] = ""
	}
	shown := regexp.MustCompile(`(?m)^  (?:-h, )?(--[a-z-]+)`).FindAllStringSubmatch(Usage, -1)
	if len(shown) != len(values)-1 { // -h shares --help's line
		t.Fatalf("the table shows %d flags, ParseArgs takes %d: %q", len(shown), len(values)-1, shown)
	}
	for _, m := range shown {
		v, ok := values[m[1]]
		if !ok {
			t.Errorf("the table shows %s, which this test does not know", m[1])
			continue
		}
		args := []string{m[1]}
		if v != "" {
			args = append(args, v)
		}
		if _, err := ParseArgs(args); err != nil {
			t.Errorf("the table shows %s, which ParseArgs refuses: %v", m[1], err)
		}
	}
}
