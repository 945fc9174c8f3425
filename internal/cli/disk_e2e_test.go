package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/murmur-go/murmur/internal/e2e"
	"github.com/murmur-go/murmur/internal/logfile"
	"github.com/murmur-go/murmur/internal/testbin"
)

// Issue 22 items 2, 12 and 13 through the built binaries: what a command
// can write, and where, counts against the disk bounds; the runtime's own
// binaries are out of a command's reach.

// shellProject writes an agent capsule (driven by murmur/driver-replay,
// with bash and no other tool) whose model runs command once; extra is more
// YAML under capabilities.
func shellProject(t testing.TB, dir, command, extra string) string {
	t.Helper()
	proj := filepath.Join(dir, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	transcript := fmt.Sprintf("version: 1\nresponses:\n  - content: [{type: tool_call, id: call_disk, name: bash, input: {command: %q}}]\n  - content: [{type: text, text: done}]\n", command)
	manifest := `name: filler
version: 0.1.0
artifacts:
  - name: murmur/driver-replay
    version: 1.0.0
    runtime: driver
    config:
      transcript: transcript.yaml
inference:
  model: replay
  driver:
    artifact: murmur/driver-replay
  system_prompt: Fill the disk.
capabilities:
  shell:
    allow: [bash]
` + extra
	os.WriteFile(filepath.Join(proj, "transcript.yaml"), []byte(transcript), 0o644)
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte(manifest), 0o644)
	return proj
}

// wantResourceLimit checks a run that workdir_max_bytes wound down, with
// stderr saying why (and naming want).
func wantResourceLimit(t *testing.T, r murResult, want string) {
	t.Helper()
	if r.Code != 1 || !strings.Contains(r.Stderr, "the session ended resource_limit") || !strings.Contains(r.Stderr, "E-RUN-017") ||
		!strings.Contains(r.Stderr, want) {
		t.Fatalf("want a resource_limit ending naming %q; got %+v", want, r)
	}
	rd := parseReady(t, r.Stdout)
	if end := lastEnd(t, traceLines(t, rd.RecordsDir)); end.Str("exit_status") != "resource_limit" {
		t.Errorf("session_end %v", end.Fields)
	}
}

// The three ways a root runtime's limit was evaded (issue 22 item 12):
// the session's HOME, which was not measured; a file below a path longer
// than PATH_MAX, which the path-based walk skipped (its lstat fails with
// ENAMETOOLONG); each now winds the session down, resource_limit. Before,
// each run slept its 20 s out and ended ok.
func TestWorkdirLimitCannotBeEvaded(t *testing.T) {
	const limit = "  resources:\n    workdir_max_bytes: 65536\n"
	deep := `n=$(printf 'd%.0s' $(seq 250)); for i in $(seq 20); do mkdir $n && cd $n || exit 9; done; head -c 200000 /dev/zero > f; sleep 20`
	for _, tc := range []struct{ name, command, want string }{
		{"HOME", "head -c 200000 /dev/zero > $HOME/big; sleep 20", "HOME %s hold 200000 bytes"},
		{"past PATH_MAX", deep, "hold 200000 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			homeDir, base := t.TempDir(), t.TempDir()
			proj := shellProject(t, base, tc.command, limit)
			r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "fill")
			wantResourceLimit(t, r, strings.ReplaceAll(tc.want, "%s", filepath.Join(parseReady(t, r.Stdout).RecordsDir, "home")))
			exec.Command("rm", "-rf", base).Run() // the deep tree is past what os.RemoveAll reaches in one path
		})
	}
}

// A shell command's log is capped as a script's logs are, head and tail
// (issue 22 item 12: it was kept whole, outside every bound). Figures: 64
// MiB of output left a 64 MiB log before; now 9 MiB and a line.
func TestShellLogIsCapped(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	const total = 64 << 20
	proj := shellProject(t, base, fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a; echo the-end", total), "")
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "print")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	sh := lastOf(traceLines(t, rd.RecordsDir), "shell")
	if sh == nil || sh.Int("stdout_bytes") != total+8 {
		t.Fatalf("shell line %v", sh)
	}
	fi, err := os.Stat(sh.Str("log_path"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes of output; the log holds %d bytes on disk", total+8, fi.Size())
	if max := int64(logfile.LogHeadBytes + logfile.LogTailBytes + 4096); fi.Size() > max {
		t.Errorf("the log is %d bytes; at most %d", fi.Size(), max)
	}
	b, _ := os.ReadFile(sh.Str("log_path"))
	if !bytes.Contains(b, []byte("bytes dropped here")) || !bytes.Contains(b, []byte("the-end\n")) || !bytes.HasPrefix(b, []byte("$ head -c")) {
		t.Errorf("the log lacks its head, its tail or the line between: %q … %q", b[:64], b[len(b)-128:])
	}
}

// diskUser is the throwaway account the unprivileged runs use.
const diskUser = "murmur-disk-test"

// unprivileged creates diskUser when missing and a directory it owns
// holding copies of mur and its companions (the user must reach them);
// it returns the directory, the copy of mur and the user's credential.
func unprivileged(t *testing.T) (string, string, *syscall.Credential) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create the throwaway user")
	}
	if exec.Command("id", diskUser).Run() != nil {
		if b, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", diskUser).CombinedOutput(); err != nil {
			t.Skipf("cannot create %s: %v %s", diskUser, err, b)
		}
	}
	u, err := user.Lookup(diskUser)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	base, err := os.MkdirTemp("", "disk-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	mur := murBin(t)
	bin := filepath.Join(base, "bin")
	os.Mkdir(bin, 0o755)
	for _, name := range []string{"mur", "mur-driver", "mur-contain"} {
		src := filepath.Join(filepath.Dir(mur), name)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		if err := copyExecutable(src, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	return base, filepath.Join(bin, "mur"), &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// runAs runs mur (the binary at bin) as cred, with HOME home, in dir.
func runAs(t *testing.T, bin string, cred *syscall.Credential, home, dir string, args ...string) murResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), murTimeout)
	defer cancel()
	cmd := e2e.CommandContext(ctx, t, bin, home, dir, nil, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running mur %v: %v", args, err)
	}
	return murResult{Stdout: so.String(), Stderr: se.String(), Code: code}
}

// chownAll gives the tree at dir to cred.
func chownAll(t *testing.T, dir string, cred *syscall.Credential) {
	t.Helper()
	if b, err := exec.Command("chown", "-R", fmt.Sprintf("%d:%d", cred.Uid, cred.Gid), dir).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, b)
	}
}

// An unprivileged runtime cannot read a directory its command made chmod
// 000, so it could not measure what the command wrote there (issue 22
// item 12); what the runtime cannot measure now counts as past the limit,
// and the stop names it. Before, the run slept its 20 s out and ended ok.
func TestWorkdirLimitUnreadableDir(t *testing.T) {
	base, mur, cred := unprivileged(t)
	homeDir := filepath.Join(base, "home")
	os.Mkdir(homeDir, 0o700)
	proj := shellProject(t, base, "mkdir hidden && head -c 200000 /dev/zero > hidden/big && chmod 000 hidden; sleep 20",
		"  resources:\n    workdir_max_bytes: 1048576\n")
	chownAll(t, base, cred)
	r := runAs(t, mur, cred, homeDir, proj, "run", "--json", "--task", "hide")
	wantResourceLimit(t, r, "hidden, which the runtime cannot measure")
	exec.Command("chmod", "-R", "u+rwx", base).Run()
}

// A sparse file in the parent's work folder stays sparse in a delegated
// child's snapshot (issue 22 item 13): the parent's 3 GiB hole-only file
// and a file with two 4 KiB extents in a 64 MiB hole reach the child with
// their sizes and contents and no more blocks than the source's. Figures:
// the hole-only file's copy took 6,291,456 blocks (3 GiB) before; 0 now.
func TestSnapshotKeepsHoles(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: exit\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n    workdir_snapshot: [local/worker]\n", orchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	pwd := filepath.Join(base, "pwd")
	os.MkdirAll(pwd, 0o755)
	mkSparse := func(name string, size int64, at ...int64) {
		f, err := os.Create(filepath.Join(pwd, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, off := range at {
			f.WriteAt(bytes.Repeat([]byte("x"), 4096), off)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
	}
	mkSparse("hole.img", 3<<30)
	mkSparse("two-extents.img", 64<<20, 1<<20, 40<<20)

	r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--workdir", pwd, "--task", "delegate it")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	ds := byType(traceLines(t, parseReady(t, r.Stdout).RecordsDir), "delegation_start")
	if len(ds) != 1 {
		t.Fatalf("delegation_start lines %v", ds)
	}
	wd := ds[0].Str("child_workdir")
	for _, name := range []string{"hole.img", "two-extents.img"} {
		var src, cp syscall.Stat_t
		if err := syscall.Stat(filepath.Join(pwd, name), &src); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Stat(filepath.Join(wd, name), &cp); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes; %d blocks in the parent's folder, %d in the child's copy", name, cp.Size, src.Blocks, cp.Blocks)
		if cp.Size != src.Size || cp.Blocks > src.Blocks {
			t.Errorf("%s: the copy is %d bytes in %d blocks; the source %d bytes in %d", name, cp.Size, cp.Blocks, src.Size, src.Blocks)
		}
	}
	a, _ := os.ReadFile(filepath.Join(pwd, "two-extents.img"))
	b, _ := os.ReadFile(filepath.Join(wd, "two-extents.img"))
	if !bytes.Equal(a, b) {
		t.Error("two-extents.img: the copy's contents differ")
	}
}

// runtimeBinDir is a directory holding copies of mur, mur-driver and
// mur-contain (this build's, so its stamp answers), as an installation
// would.
func runtimeBinDir(t *testing.T, bin string) string {
	t.Helper()
	os.MkdirAll(bin, 0o755)
	mur := murBin(t)
	srcs := map[string]string{
		"mur":         mur,
		"mur-driver":  filepath.Join(filepath.Dir(mur), "mur-driver"),
		"mur-contain": testbin.Path(t, "./cmd/mur-contain"),
	}
	for name, src := range srcs {
		if err := copyExecutable(src, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(bin, "mur")
}

// A work folder that holds the directory of the runtime's own binaries is
// refused before anything is made (issue 22 item 2: a command replaced
// mur-contain there, and the next command's helper ran with full
// capabilities), and so is one that is that directory.
func TestWorkdirHoldingTheRuntimeIsRefused(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	repo := filepath.Join(base, "repo")
	mur := runtimeBinDir(t, filepath.Join(repo, "bin"))
	proj := shellProject(t, base, "echo hi", "")
	for _, wd := range []string{repo, filepath.Join(repo, "bin")} {
		r := runAs(t, mur, nil, homeDir, proj, "run", "--workdir", wd, "--task", "hi")
		if r.Code == 0 || !strings.Contains(r.Stderr, "E-RUN-056") || !strings.Contains(r.Stderr, "the directory of the runtime's own binary") {
			t.Errorf("--workdir %s: %+v", wd, r)
		}
		if _, err := os.Stat(filepath.Join(wd, "out")); err == nil {
			t.Errorf("--workdir %s: the refused run made its out/", wd)
		}
	}
}

// A helper replaced on disk after the runtime started is not the one run
// (issue 22 item 2): mur opens mur-contain once at start and runs that
// descriptor. The test swaps mur-contain (rename over it, as an installer
// or an attacker would) while the first command waits, then lets the
// session's second command run: before, the swapped-in file ran as the
// second command's helper (it wrote its marker and ran nothing); now the
// command runs under the helper mur started with.
func TestSwappedHelperIsNotRun(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	bin := filepath.Join(base, "bin")
	mur := runtimeBinDir(t, bin)
	proj := filepath.Join(base, "proj")
	os.MkdirAll(proj, 0o755)
	transcript := `version: 1
responses:
  - content: [{type: tool_call, id: call_wait, name: bash, input: {command: "while [ ! -e go ]; do sleep 0.05; done; echo one"}}]
  - content: [{type: tool_call, id: call_two, name: bash, input: {command: "echo two"}}]
  - content: [{type: text, text: done}]
`
	os.WriteFile(filepath.Join(proj, "transcript.yaml"), []byte(transcript), 0o644)
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte(`name: swapper
version: 0.1.0
artifacts:
  - name: murmur/driver-replay
    version: 1.0.0
    runtime: driver
    config:
      transcript: transcript.yaml
inference:
  model: replay
  driver:
    artifact: murmur/driver-replay
  system_prompt: Run two commands.
capabilities:
  shell:
    allow: [bash]
`), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), murTimeout)
	defer cancel()
	cmd := e2e.CommandContext(ctx, t, mur, homeDir, proj, nil, "run", "--json", "--task", "two commands")
	var se bytes.Buffer
	cmd.Stderr = &se
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := readLine(out)
	if err != nil {
		t.Fatalf("ready line: %v (stderr %s)", err, se.String())
	}
	rd := parseReady(t, line)

	marker := filepath.Join(base, "swapped-helper-ran")
	fake := filepath.Join(bin, ".mur-contain.new")
	os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\" > "+marker+"\nexit 0\n"), 0o755)
	if err := os.Rename(fake, filepath.Join(bin, "mur-contain")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(rd.Workdir, "go"), nil, 0o644)
	rest, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v; stdout %s; stderr %s", err, rest, se.String())
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("the swapped-in mur-contain ran (with %q)", b)
	}
	var logs []string
	for _, l := range traceLines(t, rd.RecordsDir) {
		if l.EventType == "shell" {
			b, _ := os.ReadFile(l.Str("log_path"))
			logs = append(logs, string(b))
		}
	}
	if len(logs) != 2 || !strings.Contains(logs[0], "\none\n") || !strings.Contains(logs[1], "\ntwo\n") {
		t.Errorf("shell logs %q", logs)
	}
}

// readLine reads one line from r, byte by byte (the rest stays in r).
func readLine(r io.Reader) (string, error) {
	var b []byte
	one := make([]byte, 1)
	for {
		if _, err := r.Read(one); err != nil {
			return string(b), err
		}
		if one[0] == '\n' {
			return string(b), nil
		}
		b = append(b, one[0])
	}
}
