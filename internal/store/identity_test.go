package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A file's identity digest stays while the file is untouched and changes
// with any write, even one that puts back the very same bytes, and with a
// replacement by rename.
func TestReadIdentified(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "capsule.wasm")
	if err := os.WriteFile(p, []byte("\x00asm\x0d\x00\x01\x00component"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, d0, err := ReadIdentified(p)
	if err != nil || string(data[4:]) != "\x0d\x00\x01\x00component" {
		t.Fatalf("read %q, %v", data, err)
	}
	if d0 != "" {
		t.Fatalf("a file changed just now was named by its identity %s", d0)
	}
	age := func() { // as a project's component usually is: not written this instant
		old := time.Now().Add(-time.Hour)
		os.Chtimes(p, old, old) // sets mtime; ctime is now: wait it out
		time.Sleep(150 * time.Millisecond)
	}
	age()
	_, d1, _ := ReadIdentified(p)
	if d1 == "" {
		t.Skip("no file identity on this system")
	}
	if _, again, _ := ReadIdentified(p); again != d1 {
		t.Fatalf("an untouched file changed identity: %s then %s", d1, again)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil { // same bytes, in place
		t.Fatal(err)
	}
	age()
	_, d2, _ := ReadIdentified(p)
	if d2 == d1 {
		t.Fatal("a rewrite kept the identity")
	}
	other := filepath.Join(dir, "new")
	os.WriteFile(other, data, 0o600)
	if err := os.Rename(other, p); err != nil {
		t.Fatal(err)
	}
	age()
	if _, d3, _ := ReadIdentified(p); d3 == d2 || d3 == d1 {
		t.Fatal("a replacement kept the identity")
	}
}
