package running

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWriteScanRemove(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "running")
	pid, ps, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	live := Record{SessionID: "ses_live", PID: pid, ProcessStart: ps, RecordsDir: "/r", CapsuleName: "local/a", CapsuleVersion: "1"}
	if err := Write(dir, live); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(dir)
	if st.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v", st.Mode().Perm())
	}
	fst, _ := os.Stat(filepath.Join(dir, "ses_live.json"))
	if fst.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v", fst.Mode().Perm())
	}

	// A process that has exited: its pid is free (or reused with another start time).
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := Record{SessionID: "ses_dead", PID: cmd.Process.Pid, ProcessStart: ps, RecordsDir: "/r"}
	// Our own pid with a start time from another moment: pid reuse.
	reused := Record{SessionID: "ses_reused", PID: pid, ProcessStart: BootID() + ":1", RecordsDir: "/r"}
	otherBoot := Record{SessionID: "ses_boot", PID: pid, ProcessStart: "another-boot:" + strings.Split(ps, ":")[1], RecordsDir: "/r"}
	noStart := Record{SessionID: "ses_nostart", PID: pid, ProcessStart: "garbled", RecordsDir: "/r"}
	for _, r := range []Record{dead, reused, otherBoot, noStart} {
		if err := Write(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{not json"), 0o600)
	os.WriteFile(filepath.Join(dir, "old.json"), []byte(`{"session_id":"ses_old","pid":1}`), 0o600)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("ignored"), 0o600)
	// A FIFO must not block the scan; a huge file and a symlink are not records.
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "huge.json"), bytes.Repeat([]byte(" "), maxRecordBytes+1), 0o600)
	os.Symlink(filepath.Join(dir, "ses_live.json"), filepath.Join(dir, "link.json"))

	entries, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]State{}
	for _, e := range entries {
		got[filepath.Base(e.File)] = e.State
	}
	want := map[string]State{
		"ses_live.json": Live, "ses_dead.json": Stale, "ses_reused.json": Stale,
		"ses_boot.json": Stale, "ses_nostart.json": Live,
		"broken.json": Unreadable, "old.json": Unreadable,
		"fifo.json": Unreadable, "huge.json": Unreadable, "link.json": Unreadable,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v, want %v", k, got[k], v)
		}
	}
	if err := Remove(dir, "ses_live"); err != nil {
		t.Fatal(err)
	}
	if err := Remove(dir, "ses_live"); err != nil {
		t.Fatal("second remove:", err)
	}
}

func TestScanMissingAndNotADir(t *testing.T) {
	base := t.TempDir()
	if es, err := Scan(filepath.Join(base, "nope")); err != nil || len(es) != 0 {
		t.Fatalf("missing dir: %v %v", es, err)
	}
	f := filepath.Join(base, "file")
	os.WriteFile(f, nil, 0o600)
	_, err := Scan(f)
	if err == nil || err.Error() != f+": not a directory" {
		t.Fatalf("got %v", err)
	}
}
