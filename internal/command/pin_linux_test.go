package command_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/murmur-go/murmur/internal/command"
)

// A pinned executable runs the file that was opened: one renamed over it
// later is not run, and one written in place is refused (issue 22 item 2).
func TestPinned(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "helper")
	// A copy of a real binary (a script's interpreter would reopen it by
	// a path the close-on-exec descriptor no longer names), told apart
	// from the script swapped in by what it prints.
	echo, err := exec.LookPath("echo")
	if err != nil {
		t.Skip("no echo binary")
	}
	b, _ := os.ReadFile(echo)
	os.WriteFile(p, b, 0o755)
	pin, err := command.Pin(p)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "new")
	os.WriteFile(tmp, []byte("#!/bin/sh\necho swapped\n"), 0o755)
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	path, err := pin.Path()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "pinned").Output()
	if err != nil || string(out) != "pinned\n" {
		t.Fatalf("the pinned file printed %q, %v; want the original echo's \"pinned\"", out, err)
	}

	// In place: the same inode rewritten.
	q := filepath.Join(dir, "inplace")
	os.WriteFile(q, b, 0o755)
	pin2, err := command.Pin(q)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(q, os.O_WRONLY, 0)
	f.WriteAt([]byte{0}, 100)
	f.Close()
	if path, err := pin2.Path(); err == nil {
		t.Errorf("a file changed in place is still handed out: %s", path)
	}
	if _, err := command.Pin(filepath.Join(dir)); err == nil {
		t.Error("a directory was pinned")
	}
}
