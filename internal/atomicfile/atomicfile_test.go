package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// Write replaces the file whole, with the mode asked for, and leaves no
// temporary file beside it; a failed write leaves the old file as it was.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rec.json")
	for _, body := range []string{"one\n", "two, longer\n"} {
		if err := Write(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		st, _ := os.Stat(p)
		if err != nil || string(b) != body || st.Mode().Perm() != 0o600 {
			t.Fatalf("read %q (%v), mode %v", b, err, st.Mode())
		}
	}
	if err := Write(filepath.Join(dir, "missing", "x"), []byte("x"), 0o600); err == nil {
		t.Error("a write into a missing directory succeeded")
	}
	if err := os.Mkdir(filepath.Join(dir, "taken"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "taken", "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(filepath.Join(dir, "taken"), []byte("x"), 0o600); err == nil {
		t.Error("a rename over a non-empty directory succeeded")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("left behind: %v", ents)
	}
}
