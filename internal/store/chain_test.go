package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
)

func TestChainResolve(t *testing.T) {
	dir := t.TempDir()
	proj, home := filepath.Join(dir, "proj"), filepath.Join(dir, "home")
	os.MkdirAll(proj, 0o755)
	g, p := Global(home), Project(proj)
	gz := artifactZip(t, "acme/lint", "1.0.0", "global")
	pz := artifactZip(t, "acme/lint", "1.0.0", "project")
	if _, err := g.Publish(gz, false); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Publish(artifactZip(t, "acme/only-global", "2.0.0", ""), false); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(pz, false); err != nil {
		t.Fatal(err)
	}
	c := Chain{Project: p, Global: g}
	r, err := c.Resolve("acme/lint", "1.0.0", noSecrets)
	if err != nil || r.Store != p || r.SHA256 != HashHex(pz) {
		t.Fatalf("project store first: %v %v", r, err)
	}
	r, err = c.Resolve("acme/only-global", "2.0.0", noSecrets)
	if err != nil || r.Store != g {
		t.Fatalf("falls through to global: %v %v", r, err)
	}
	if _, err := c.Resolve("acme/none", "1.0.0", noSecrets); diag.Code(err) != "E-REG-001" {
		t.Fatalf("missing: %v", err)
	}
	// A corrupt project copy is refused, never replaced by the global one.
	_, sp, _ := p.Paths("acme/lint", "1.0.0")
	os.WriteFile(sp, []byte(strings.Repeat("f", 64)+"\n"), 0o644)
	if _, err := c.Resolve("acme/lint", "1.0.0", noSecrets); diag.Code(err) != "E-REG-002" {
		t.Fatalf("corrupt project copy: %v", err)
	}
	os.WriteFile(sp, []byte(HashHex(pz)+"\n"), 0o644)

	lock := &Lock{Version: 1, Artifacts: []LockEntry{{Name: "acme/lint", Version: "1.0.0", SHA256: HashHex(pz)}}}
	c.Lock = lock
	if _, err := c.Resolve("acme/lint", "1.0.0", noSecrets); err != nil {
		t.Fatalf("locked and matching: %v", err)
	}
	tests := []struct {
		name, ref, version string
		entry              LockEntry
	}{
		{"not pinned", "acme/only-global", "2.0.0", LockEntry{Name: "acme/lint", Version: "1.0.0", SHA256: HashHex(pz)}},
		{"other version", "acme/lint", "1.0.0", LockEntry{Name: "acme/lint", Version: "0.9.0", SHA256: HashHex(pz)}},
		{"other hash", "acme/lint", "1.0.0", LockEntry{Name: "acme/lint", Version: "1.0.0", SHA256: HashHex(gz)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c.Lock = &Lock{Version: 1, Artifacts: []LockEntry{tc.entry}}
			if _, err := c.Resolve(tc.ref, tc.version, noSecrets); diag.Code(err) != "E-REG-005" {
				t.Fatalf("err = %v, want E-REG-005", err)
			}
		})
	}
	// A --capsule run: global store only, no lock.
	c2, err := ChainFor("", home)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c2.Resolve("acme/lint", "1.0.0", noSecrets); err != nil || r.SHA256 != HashHex(gz) {
		t.Fatalf("global-only chain: %v %v", r, err)
	}
}

func TestLockReadWrite(t *testing.T) {
	dir := t.TempDir()
	if l, err := ReadLock(dir); l != nil || err != nil {
		t.Fatalf("absent lock: %v %v", l, err)
	}
	h := strings.Repeat("ab", 32)
	l := &Lock{Version: 1, Artifacts: []LockEntry{{"z/b", "1.0.0", h}, {"a/c", "2.0.0", h}}}
	if err := WriteLock(dir, l); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, LockFile))
	want := "lock_version: 1\nartifacts:\n  - name: a/c\n    version: 2.0.0\n    sha256: " + h + "\n  - name: z/b\n    version: 1.0.0\n    sha256: " + h + "\n"
	if string(b) != want {
		t.Fatalf("murmur.lock =\n%s\nwant\n%s", b, want)
	}
	got, err := ReadLock(dir)
	if err != nil || len(got.Artifacts) != 2 || got.Artifacts[0].Name != "a/c" {
		t.Fatalf("ReadLock = %+v %v", got, err)
	}
	if e, ok := got.Find("z/b"); !ok || e.Version != "1.0.0" {
		t.Fatal("Find")
	}

	bad := []string{
		"lock_version: 2\nartifacts: []\n",
		"lock_version: 1\nartifacts:\n  - name: Bad\n    version: 1\n    sha256: " + h + "\n",
		"lock_version: 1\nartifacts:\n  - name: a/b\n    version: ../x\n    sha256: " + h + "\n",
		"lock_version: 1\nartifacts:\n  - name: a/b\n    version: 1\n    sha256: abc\n",
		"lock_version: 1\nartifacts:\n  - name: a/b\n    version: 1\n    sha256: " + h + "\n  - name: a/b\n    version: 2\n    sha256: " + h + "\n",
		"lock_version: 1\nartifacts:\n  - name: a/b\n    version: 1\n    sha256: " + h + "\n    extra: 1\n",
		"lock_version: [\n",
		"",
	}
	for i, text := range bad {
		os.WriteFile(filepath.Join(dir, LockFile), []byte(text), 0o644)
		if _, err := ReadLock(dir); diag.Code(err) != "E-REG-013" {
			t.Errorf("bad lock %d: err = %v, want E-REG-013", i, err)
		}
	}
	// A lock that cannot be written leaves the old one.
	os.WriteFile(filepath.Join(dir, LockFile), []byte(want), 0o644)
	if err := WriteLock(filepath.Join(dir, LockFile), l); diag.Code(err) != "E-IO-002" {
		t.Fatalf("WriteLock into a file: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, LockFile)); string(b) != want {
		t.Fatal("old lock changed")
	}
}

// FuzzParseLock: any input gives a valid lock or an error, never a panic, and
// a lock that parses survives Marshal -> ParseLock unchanged.
func FuzzParseLock(f *testing.F) {
	h := strings.Repeat("0a", 32)
	f.Add([]byte("lock_version: 1\nartifacts:\n  - name: a/b\n    version: 1.0.0\n    sha256: " + h + "\n"))
	f.Add([]byte("lock_version: 1\nartifacts: []\n"))
	f.Add([]byte("lock_version: 2\n"))
	f.Add([]byte("{lock_version: 1, artifacts: [{name: x/y, version: '1', sha256: " + h + "}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseLock(data)
		if err != nil {
			return
		}
		out, err := l.Marshal()
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		l2, err := ParseLock(out)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
		if len(l2.Artifacts) != len(l.Artifacts) {
			t.Fatalf("round trip lost entries")
		}
	})
}
