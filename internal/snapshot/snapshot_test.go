package snapshot_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/murmur-go/murmur/internal/snapshot"
	"github.com/murmur-go/murmur/internal/trace"
)

// asOtherUser, when set, makes the test binary a helper: it copies
// $SNAPSHOT_SRC into $SNAPSHOT_DST and prints the summary, as whatever user
// it was started as (the unreadable row, when the tests run as root).
const asOtherUser = "SNAPSHOT_TEST_COPY_AS_OTHER_USER"

func TestMain(m *testing.M) {
	if os.Getenv(asOtherUser) == "1" {
		sum, err := snapshot.Copy(context.Background(), os.Getenv("SNAPSHOT_SRC"), os.Getenv("SNAPSHOT_DST"), snapshot.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		json.NewEncoder(os.Stdout).Encode(sum)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var (
	past    = time.Date(2020, 3, 4, 5, 6, 7, 890000000, time.UTC)
	pastDir = time.Date(2019, 1, 2, 3, 4, 5, 600000000, time.UTC)
)

func write(t *testing.T, p string, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, past, past); err != nil {
		t.Fatal(err)
	}
}

func lstat(t *testing.T, p string) *unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatalf("lstat %s: %v", p, err)
	}
	return &st
}

func mtime(st *unix.Stat_t) time.Time { return time.Unix(st.Mtim.Sec, st.Mtim.Nsec).UTC() }

const oddName = "we\xffird\nname \t*"

// kitchenSink makes every kind of entry the spec's table names in src.
func kitchenSink(t *testing.T, src string) {
	t.Helper()
	root := os.Geteuid() == 0
	write(t, filepath.Join(src, "plain.txt"), "plain", 0o644)
	write(t, filepath.Join(src, "run.sh"), "#!/bin/sh\n", 0o750)
	write(t, filepath.Join(src, "setuid"), "su", 0o755|os.ModeSetuid)
	write(t, filepath.Join(src, "setgid"), "sg", 0o710|os.ModeSetgid)
	write(t, filepath.Join(src, "readonly"), "ro", 0o400)
	write(t, filepath.Join(src, "a", "b", "c", "deep.txt"), strings.Repeat("d", 5000), 0o640)
	write(t, filepath.Join(src, "a", "out", "kept.txt"), "nested out is the capsule's", 0o644)
	write(t, filepath.Join(src, "out", "result.txt"), "runtime", 0o644)
	write(t, filepath.Join(src, "peer-in", "msg"), "runtime", 0o644)
	write(t, filepath.Join(src, ".records", "trace.jsonl"), "runtime", 0o644)
	write(t, filepath.Join(src, oddName), "odd", 0o644)
	write(t, filepath.Join(src, "h1"), "linked", 0o644)
	if err := os.Link(filepath.Join(src, "h1"), filepath.Join(src, "a", "h2")); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(src, "empty"), 0o755)
	os.Mkdir(filepath.Join(src, "sticky"), 0o755)
	os.Chmod(filepath.Join(src, "sticky"), 0o777|os.ModeSticky)
	os.Mkdir(filepath.Join(src, "rodir"), 0o755)
	write(t, filepath.Join(src, "rodir", "in.txt"), "in a read-only dir", 0o644)
	os.Chmod(filepath.Join(src, "rodir"), 0o555)
	for name, target := range map[string]string{
		"link-inside":   filepath.Join(src, "a", "b", "c", "deep.txt"),
		"link-top":      src,
		"link-dirty":    src + "/a/../plain.txt",
		"link-relative": "a/b",
		"link-escapes":  "../../etc/passwd",
		"link-outside":  "/etc/passwd",
		"link-dangling": "/nonexistent/x",
		"link-prefix":   src + "-sibling/x", // shares the prefix, not the folder
	} {
		if err := os.Symlink(target, filepath.Join(src, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(src, "a", "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(src, "sock"), unix.S_IFSOCK|0o644, 0); err != nil {
		t.Fatal(err)
	}
	if root {
		if err := unix.Mknod(filepath.Join(src, "a", "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Fatal(err)
		}
	}
	if !root {
		write(t, filepath.Join(src, "secret"), "no", 0o000)
		os.Mkdir(filepath.Join(src, "closed"), 0o000)
	}
	// Directory times last: making their entries moved them.
	for _, d := range []string{"a/b/c", "a/b", "a/out", "a", "empty", "sticky", "rodir"} {
		os.Chtimes(filepath.Join(src, d), pastDir, pastDir)
	}
}

func TestCopyEveryKindOfEntry(t *testing.T) {
	base := t.TempDir()
	src, dst := filepath.Join(base, "parent"), filepath.Join(base, "child")
	os.Mkdir(src, 0o755)
	os.Mkdir(dst, 0o700)
	kitchenSink(t, src)
	sum, err := snapshot.Copy(context.Background(), src, dst, snapshot.Options{RuntimeOwned: []string{filepath.Join(src, ".records")}})
	if err != nil {
		t.Fatal(err)
	}
	root := os.Geteuid() == 0

	type row struct {
		path string
		// kind: "file", "dir", "link", or "" for absent from the copy
		kind   string
		mode   uint32 // permission bits expected
		data   string
		target string
		mtime  time.Time
	}
	rows := []row{
		{path: "plain.txt", kind: "file", mode: 0o644, data: "plain", mtime: past},
		{path: "run.sh", kind: "file", mode: 0o750, data: "#!/bin/sh\n", mtime: past},
		{path: "setuid", kind: "file", mode: 0o755, data: "su", mtime: past},
		{path: "setgid", kind: "file", mode: 0o710, data: "sg", mtime: past},
		{path: "readonly", kind: "file", mode: 0o400, data: "ro", mtime: past},
		{path: "a/b/c/deep.txt", kind: "file", mode: 0o640, data: strings.Repeat("d", 5000), mtime: past},
		{path: "a/out/kept.txt", kind: "file", mode: 0o644, data: "nested out is the capsule's", mtime: past},
		{path: oddName, kind: "file", mode: 0o644, data: "odd", mtime: past},
		{path: "h1", kind: "file", mode: 0o644, data: "linked", mtime: past},
		{path: "a/h2", kind: "file", mode: 0o644, data: "linked", mtime: past},
		{path: "a", kind: "dir", mode: 0o755, mtime: pastDir},
		{path: "a/b/c", kind: "dir", mode: 0o755, mtime: pastDir},
		{path: "empty", kind: "dir", mode: 0o755, mtime: pastDir},
		{path: "sticky", kind: "dir", mode: 0o777, mtime: pastDir},
		{path: "rodir", kind: "dir", mode: 0o555, mtime: pastDir},
		{path: "rodir/in.txt", kind: "file", mode: 0o644, data: "in a read-only dir", mtime: past},
		{path: "link-inside", kind: "link", target: filepath.Join(dst, "a", "b", "c", "deep.txt")},
		{path: "link-top", kind: "link", target: dst},
		{path: "link-dirty", kind: "link", target: filepath.Join(dst, "plain.txt")},
		{path: "link-relative", kind: "link", target: "a/b"},
		{path: "link-escapes", kind: "link", target: "../../etc/passwd"},
		{path: "link-outside", kind: "link", target: "/etc/passwd"},
		{path: "link-dangling", kind: "link", target: "/nonexistent/x"},
		{path: "link-prefix", kind: "link", target: src + "-sibling/x"},
		{path: "a/fifo"},
		{path: "sock"},
		{path: "a/null"},
		{path: "out"},
		{path: "peer-in"},
		{path: ".records"},
		{path: "secret"},
		{path: "closed"},
	}
	for _, r := range rows {
		t.Run(strings.ReplaceAll(r.path, "/", "_"), func(t *testing.T) {
			p := filepath.Join(dst, r.path)
			var st unix.Stat_t
			err := unix.Lstat(p, &st)
			if r.kind == "" {
				if err == nil {
					t.Fatalf("%s is in the copy (mode %o); it should have been skipped", r.path, st.Mode)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s is not in the copy: %v", r.path, err)
			}
			switch r.kind {
			case "file":
				if st.Mode&unix.S_IFMT != unix.S_IFREG {
					t.Fatalf("not a regular file: %o", st.Mode)
				}
				b, err := os.ReadFile(p)
				if err != nil || string(b) != r.data {
					t.Errorf("content %q, %v; want %q", b, err, r.data)
				}
			case "dir":
				if st.Mode&unix.S_IFMT != unix.S_IFDIR {
					t.Fatalf("not a directory: %o", st.Mode)
				}
			case "link":
				if st.Mode&unix.S_IFMT != unix.S_IFLNK {
					t.Fatalf("not a symlink: %o", st.Mode)
				}
				got, _ := os.Readlink(p)
				if got != r.target {
					t.Errorf("target %q, want %q", got, r.target)
				}
				return
			}
			if got := st.Mode & 0o7777; got != r.mode {
				t.Errorf("mode %04o, want %04o (setuid, setgid and sticky dropped)", got, r.mode)
			}
			if got := mtime(&st); !got.Equal(r.mtime) {
				t.Errorf("mtime %v, want %v", got, r.mtime)
			}
		})
	}

	// Hard links stay linked, and their bytes count once.
	if a, b := lstat(t, filepath.Join(dst, "h1")), lstat(t, filepath.Join(dst, "a", "h2")); a.Ino != b.Ino {
		t.Errorf("h1 and a/h2 are one file in the parent and two in the copy")
	}
	// The copy is the runtime's: none of it is setuid whoever ran it.
	filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky) != 0 {
			t.Errorf("%s keeps a special bit: %v", p, fi.Mode())
		}
		return nil
	})

	wantSkipped := []trace.SnapshotSkip{
		{Path: ".records", Reason: "runtime-owned"},
		{Path: "a/fifo", Reason: "fifo"},
		{Path: "out", Reason: "runtime-owned"},
		{Path: "peer-in", Reason: "runtime-owned"},
		{Path: "sock", Reason: "socket"},
	}
	files := 10
	if root {
		wantSkipped = append(wantSkipped, trace.SnapshotSkip{Path: "a/null", Reason: "device"})
	} else {
		wantSkipped = append(wantSkipped, trace.SnapshotSkip{Path: "closed", Reason: "unreadable"},
			trace.SnapshotSkip{Path: "secret", Reason: "unreadable"})
	}
	files++ // rodir/in.txt
	sortSkips(wantSkipped)
	sortSkips(sum.Skipped)
	if !reflect.DeepEqual(sum.Skipped, wantSkipped) {
		t.Errorf("skipped:\n got  %+v\n want %+v", sum.Skipped, wantSkipped)
	}
	bytes := int64(len("plain") + len("#!/bin/sh\n") + 2 + 2 + 2 + 5000 + len("nested out is the capsule's") + 3 + len("linked") + len("in a read-only dir"))
	want := trace.Snapshot{Source: src, Files: files, Directories: 7, Symlinks: 8, Bytes: bytes}
	got := *sum
	got.Skipped = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("summary:\n got  %+v\n want %+v", got, want)
	}
	if err := snapshot.Remove(dst); err != nil {
		t.Errorf("Remove: %v", err)
	}
	if _, err := os.Lstat(dst); !os.IsNotExist(err) {
		t.Errorf("the copy is still there after Remove: %v", err)
	}
}

func sortSkips(s []trace.SnapshotSkip) {
	sort.Slice(s, func(i, j int) bool { return s[i].Path < s[j].Path })
}

// TestCopyUnreadableAsAnotherUser: an entry the runtime cannot open is
// skipped as unreadable. Root opens everything, so as root the copy runs in
// a helper process as nobody.
func TestCopyUnreadableAsAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("covered by TestCopyEveryKindOfEntry when not root")
	}
	base, err := os.MkdirTemp("/tmp", "snapshot-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	src, dst := filepath.Join(base, "parent"), filepath.Join(base, "child")
	os.Mkdir(src, 0o755)
	os.Mkdir(dst, 0o700)
	write(t, filepath.Join(src, "open.txt"), "yes", 0o644)
	write(t, filepath.Join(src, "secret"), "no", 0o600)
	os.Mkdir(filepath.Join(src, "closed"), 0o700)
	write(t, filepath.Join(src, "closed", "inside"), "no", 0o644)
	const nobody = 65534
	os.Chown(dst, nobody, nobody)
	// The test binary lives in a directory only root may enter: run a copy.
	helper := filepath.Join(base, "helper")
	bin, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(helper, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helper, "-test.run=^$")
	cmd.Env = append(os.Environ(), asOtherUser+"=1", "SNAPSHOT_SRC="+src, "SNAPSHOT_DST="+dst)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("helper as nobody: %v: %s", err, ee.Stderr)
		}
		t.Skipf("cannot run a helper as nobody here: %v", err)
	}
	var sum trace.Snapshot
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("helper printed %q: %v", out, err)
	}
	want := []trace.SnapshotSkip{{Path: "closed", Reason: "unreadable"}, {Path: "secret", Reason: "unreadable"}}
	if !reflect.DeepEqual(sum.Skipped, want) || sum.Files != 1 || sum.Directories != 0 {
		t.Errorf("summary %+v; want one file and skipped %+v", sum, want)
	}
}

func TestCopyCeiling(t *testing.T) {
	for _, tc := range []struct {
		name    string
		max     int64
		wantErr bool
	}{
		{"exactly the ceiling", 3000, false},
		{"one byte under", 2999, true},
		{"no ceiling", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			src, dst := filepath.Join(base, "p"), filepath.Join(base, "c")
			os.Mkdir(dst, 0o700)
			for i := 0; i < 3; i++ {
				write(t, filepath.Join(src, "d", strconv.Itoa(i)), strings.Repeat("x", 1000), 0o644)
			}
			sum, err := snapshot.Copy(context.Background(), src, dst, snapshot.Options{MaxBytes: tc.max})
			var tl *snapshot.TooLarge
			if !tc.wantErr {
				if err != nil || sum.Bytes != 3000 {
					t.Fatalf("Copy = %+v, %v; want 3000 bytes", sum, err)
				}
				return
			}
			if !errors.As(err, &tl) || tl.MaxBytes != tc.max {
				t.Fatalf("Copy error = %v; want *TooLarge at %d", err, tc.max)
			}
			for _, w := range []string{"capabilities.resources.workdir_max_bytes", strconv.FormatInt(tc.max, 10), src} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not name %q", err, w)
				}
			}
		})
	}
}

// TestCopySymlinkSwapRace: while the copy runs, a directory of the source
// is swapped again and again for a link to a folder outside it. Nothing
// from outside may appear in the copy.
func TestCopySymlinkSwapRace(t *testing.T) {
	base := t.TempDir()
	src, outside := filepath.Join(base, "p"), filepath.Join(base, "outside")
	write(t, filepath.Join(outside, "secret.txt"), "SECRET", 0o644)
	for i := 0; i < 5; i++ {
		write(t, filepath.Join(src, "dir", "f"+strconv.Itoa(i)), "ok", 0o644)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		d, l, tmp := filepath.Join(src, "dir"), filepath.Join(src, "link"), filepath.Join(src, "dir.real")
		os.Symlink(outside, l)
		for {
			select {
			case <-stop:
				return
			default:
			}
			os.Rename(d, tmp)
			os.Rename(l, d) // dir is now a link out
			os.Rename(d, l)
			os.Rename(tmp, d)
		}
	}()
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	for i := 0; i < rounds; i++ {
		dst := filepath.Join(base, "c"+strconv.Itoa(i))
		os.Mkdir(dst, 0o700)
		if _, err := snapshot.Copy(context.Background(), src, dst, snapshot.Options{}); err != nil {
			close(stop)
			<-done
			t.Fatalf("round %d: %v", i, err)
		}
		filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Name() == "secret.txt" {
				t.Errorf("round %d: %s was copied from outside the folder", i, p)
			}
			return nil
		})
		snapshot.Remove(dst)
	}
	close(stop)
	<-done
}

// TestCopyRandomTrees: random trees of files, directories and links copy
// to a tree with the same shape, contents and modes.
func TestCopyRandomTrees(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 20; round++ {
		base := t.TempDir()
		src, dst := filepath.Join(base, "p"), filepath.Join(base, "c")
		os.Mkdir(src, 0o755)
		os.Mkdir(dst, 0o700)
		dirs := []string{src}
		wantFiles, wantDirs, wantLinks := 0, 0, 0
		var wantBytes int64
		for i := 0; i < 60; i++ {
			parent := dirs[rng.Intn(len(dirs))]
			name := randName(rng)
			p := filepath.Join(parent, name)
			if _, err := os.Lstat(p); err == nil || (parent == src && (name == "out" || name == "peer-in")) {
				continue
			}
			switch rng.Intn(4) {
			case 0:
				os.Mkdir(p, 0o755)
				os.Chmod(p, os.FileMode(0o700|rng.Intn(0o100)))
				dirs = append(dirs, p)
				wantDirs++
			case 1:
				os.Symlink(filepath.Join(src, randName(rng)), p)
				wantLinks++
			default:
				n := rng.Intn(5000)
				os.WriteFile(p, make([]byte, n), 0o600)
				os.Chmod(p, os.FileMode(0o400|rng.Intn(0o400)))
				wantFiles++
				wantBytes += int64(n)
			}
		}
		sum, err := snapshot.Copy(context.Background(), src, dst, snapshot.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Files != wantFiles || sum.Directories != wantDirs || sum.Symlinks != wantLinks || sum.Bytes != wantBytes || len(sum.Skipped) != 0 {
			t.Fatalf("round %d: %+v; want %d files, %d dirs, %d links, %d bytes", round, sum, wantFiles, wantDirs, wantLinks, wantBytes)
		}
		if a, b := shape(t, src, src), shape(t, dst, src); !reflect.DeepEqual(a, b) {
			t.Fatalf("round %d: the copy differs:\n src %v\n dst %v", round, a, b)
		}
	}
}

func randName(rng *rand.Rand) string {
	const chars = "abcxyz.-_ \x01\xfe"
	b := make([]byte, 1+rng.Intn(6))
	for i := range b {
		b[i] = chars[rng.Intn(len(chars))]
	}
	s := string(b)
	if s == "." || s == ".." {
		return "dot"
	}
	return s
}

// shape lists a tree as path → kind, mode, size and link target, with link
// targets inside the source written relative to it.
func shape(t *testing.T, dir, src string) map[string]string {
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		v := fmt.Sprintf("%v %d", fi.Mode(), fi.Size())
		if fi.IsDir() {
			v = fmt.Sprintf("%v", fi.Mode())
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			tg, _ := os.Readlink(p)
			v = "link " + strings.TrimPrefix(strings.TrimPrefix(tg, src), dir)
		}
		out[rel] = v
		return nil
	})
	return out
}

// TestCopySwapBetweenLstatAndOpen: the same swap, made exactly in the
// window between an entry's lstat and its open, for a directory and for a
// file. The copy must not follow it.
func TestCopySwapBetweenLstatAndOpen(t *testing.T) {
	for _, kind := range []string{"dir", "file"} {
		t.Run(kind, func(t *testing.T) {
			base := t.TempDir()
			src, dst, outside := filepath.Join(base, "p"), filepath.Join(base, "c"), filepath.Join(base, "outside")
			write(t, filepath.Join(outside, "secret.txt"), "SECRET", 0o644)
			os.Mkdir(dst, 0o700)
			victim := filepath.Join(src, "victim")
			target := outside
			if kind == "dir" {
				write(t, filepath.Join(victim, "f"), "ok", 0o644)
			} else {
				write(t, victim, "ok", 0o644)
				target = filepath.Join(outside, "secret.txt")
			}
			swapped := 0
			snapshot.SetAfterLstat(func(rel string) {
				if rel == "victim" && swapped == 0 {
					swapped++
					os.RemoveAll(victim)
					os.Symlink(target, victim)
				}
			})
			defer snapshot.SetAfterLstat(nil)
			sum, err := snapshot.Copy(context.Background(), src, dst, snapshot.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if swapped != 1 {
				t.Fatal("the hook did not swap the entry")
			}
			filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
				if err == nil && !fi.IsDir() && fi.Mode()&os.ModeSymlink == 0 {
					if b, _ := os.ReadFile(p); string(b) == "SECRET" {
						t.Errorf("%s holds the outside file's content", p)
					}
				}
				return nil
			})
			// Looked at again, the entry is now a link: recreated, not followed.
			if got, _ := os.Readlink(filepath.Join(dst, "victim")); got != target || sum.Symlinks != 1 {
				t.Errorf("victim in the copy links to %q (symlinks %d); want the link kept as %q", got, sum.Symlinks, target)
			}
		})
	}
}

// TestCopyLiveFolder: entries removed or replaced in the window between
// lstat and open — the folder is live — are simply what they became: gone
// from the copy (and not counted), or copied as their new kind.
func TestCopyLiveFolder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(p string)
		check  func(t *testing.T, dst string, sum *trace.Snapshot)
	}{
		{"file removed", func(p string) { os.Remove(p) }, func(t *testing.T, dst string, sum *trace.Snapshot) {
			if _, err := os.Lstat(filepath.Join(dst, "victim")); err == nil || sum.Files != 1 || len(sum.Skipped) != 0 {
				t.Errorf("a removed file: %+v, %v", sum, err)
			}
		}},
		{"file became a fifo", func(p string) { os.Remove(p); unix.Mkfifo(p, 0o644) }, func(t *testing.T, dst string, sum *trace.Snapshot) {
			if len(sum.Skipped) != 1 || sum.Skipped[0] != (trace.SnapshotSkip{Path: "victim", Reason: "fifo"}) || sum.Files != 1 {
				t.Errorf("a file turned fifo: %+v", sum)
			}
		}},
		{"file became a directory", func(p string) { os.Remove(p); os.Mkdir(p, 0o750) }, func(t *testing.T, dst string, sum *trace.Snapshot) {
			if st, err := os.Lstat(filepath.Join(dst, "victim")); err != nil || !st.IsDir() || sum.Directories != 1 || sum.Files != 1 {
				t.Errorf("a file turned directory: %+v, %v", sum, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			src, dst := filepath.Join(base, "p"), filepath.Join(base, "c")
			os.Mkdir(dst, 0o700)
			write(t, filepath.Join(src, "keep"), "k", 0o644)
			write(t, filepath.Join(src, "victim"), "v", 0o644)
			once := false
			snapshot.SetAfterLstat(func(rel string) {
				if rel == "victim" && !once {
					once = true
					tc.change(filepath.Join(src, "victim"))
				}
			})
			defer snapshot.SetAfterLstat(nil)
			sum, err := snapshot.Copy(context.Background(), src, dst, snapshot.Options{})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, dst, sum)
		})
	}
}

func TestCopyCancelled(t *testing.T) {
	base := t.TempDir()
	src, dst := filepath.Join(base, "p"), filepath.Join(base, "c")
	os.Mkdir(dst, 0o700)
	write(t, filepath.Join(src, "f"), "x", 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := snapshot.Copy(ctx, src, dst, snapshot.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled copy returned %v", err)
	}
}
