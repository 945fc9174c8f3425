package store

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
)

// rememberingStore is a global store under a fresh home whose compile-cache
// key exists, holding acme/lint@1.0.0, its zip aged past the ctime tick.
func rememberingStore(t *testing.T) (s *Store, zipPath string, z []byte) {
	t.Helper()
	h := t.TempDir()
	kp := home.CacheKey(h)
	if err := os.MkdirAll(filepath.Dir(kp), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kp, bytes.Repeat([]byte{7}, 32), 0o600); err != nil {
		t.Fatal(err)
	}
	s = Global(h)
	z = storedZip(t, "acme/lint", "1.0.0", strings.Repeat("v1", 4096))
	if _, err := s.Publish(z, false); err != nil {
		t.Fatal(err)
	}
	zipPath, _, _ = s.Paths("acme/lint", "1.0.0")
	age(t, zipPath)
	return s, zipPath, z
}

// storedZip is a tool's .mur.zip as mur build packs one: murmur.yaml
// deflated, the component stored.
func storedZip(t *testing.T, name, version, extra string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	y := fmt.Sprintf("name: %s\nversion: %q\nruntime: tool\ndescription: test tool\n", name, version)
	for _, e := range []struct {
		name   string
		method uint16
		data   []byte
	}{
		{"murmur.yaml", zip.Deflate, []byte(y)},
		{"tool.wasm", zip.Store, append(append([]byte{}, wasmComponentHeader...), extra...)},
	} {
		h := &zip.FileHeader{Name: e.name, Method: e.method}
		h.SetMode(0o644)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(e.data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// age sets the file's mtime an hour back (ctime moves to now) and waits
// until that ctime is settled, as an installed artifact's usually is.
func age(t *testing.T, p string) {
	t.Helper()
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
}

func resolve(t *testing.T, s *Store) (*Resolved, error) {
	t.Helper()
	return s.Resolve("acme/lint", "1.0.0", noSecrets)
}

// A verified resolve is remembered; the next one opens the archive lazily
// with the same digest and the same bytes, and reads the component only
// when asked.
func TestRememberedDigest(t *testing.T) {
	s, zipPath, z := rememberingStore(t)
	first, err := resolve(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if IsLazy(first.Archive) {
		t.Fatal("the first resolve used a remembered digest")
	}
	if _, err := os.Stat(RememberedFile(s, zipPath)); err != nil {
		t.Skipf("nothing remembered (no file identity here?): %v", err)
	}
	warm, err := resolve(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if !IsLazy(warm.Archive) {
		t.Fatal("the warm resolve read and hashed the zip again")
	}
	if warm.SHA256 != first.SHA256 || warm.SHA256 != HashHex(z) {
		t.Fatalf("digest %s, first %s", warm.SHA256, first.SHA256)
	}
	want, _ := first.Archive.ReadFile("tool.wasm")
	got, err := warm.Archive.ReadFile("tool.wasm")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("lazy component: %d bytes, %v; want %d", len(got), err, len(want))
	}
	if !bytes.Equal(warm.Archive.Bytes(), z) || !warm.Equal(first) {
		t.Fatal("the lazy archive's bytes are not the zip's")
	}
	if name, ok := warm.Archive.PayloadName(); !ok || name != "tool.wasm" {
		t.Fatalf("PayloadName = %q, %v", name, ok)
	}
	if r, err := s.Rehashing().Resolve("acme/lint", "1.0.0", noSecrets); err != nil || IsLazy(r.Archive) {
		t.Fatalf("a rehashing resolve trusted the remembered digest: %v", err)
	}
}

// rewrite puts other bytes of the same size in place, keeping the mtime;
// ctime still moves.
func rewrite(t *testing.T, zipPath string) {
	t.Helper()
	fi, err := os.Stat(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("v1v1"))
	copy(b[i:], "x2")
	f, err := os.OpenFile(zipPath, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(zipPath, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
}

// The same coordinates resolving to different bytes is refused, whether the
// rewrite comes before a resolve, between the resolve and the component's
// read, or with a forged remembered entry vouching for the new identity.
func TestRememberedDigestRefusesOtherBytes(t *testing.T) {
	t.Run("rewritten in place", func(t *testing.T) {
		s, zipPath, _ := rememberingStore(t)
		if _, err := resolve(t, s); err != nil {
			t.Fatal(err)
		}
		rewrite(t, zipPath)
		if _, err := resolve(t, s); !diag.Is(err, "E-REG-002") {
			t.Fatalf("a rewritten zip resolved: %v", err)
		}
	})
	t.Run("rewritten after the resolve", func(t *testing.T) {
		s, zipPath, _ := rememberingStore(t)
		if _, err := resolve(t, s); err != nil {
			t.Fatal(err)
		}
		warm, err := resolve(t, s)
		if err != nil || !IsLazy(warm.Archive) {
			t.Skipf("no remembered digest: %v", err)
		}
		rewrite(t, zipPath)
		if b, err := warm.Archive.ReadFile("tool.wasm"); !diag.Is(err, "E-REG-002") {
			t.Fatalf("read %d bytes of a rewritten zip: %v", len(b), err)
		}
		if b := warm.Archive.Bytes(); b != nil {
			t.Fatal("Bytes returned a rewritten zip's bytes")
		}
	})
	for _, forge := range []struct {
		name string
		edit func(lines []string) []string
	}{
		{"flipped digest", func(l []string) []string {
			l[2] = strings.Repeat("0", len(l[2]))
			return l
		}},
		{"wrong MAC", func(l []string) []string {
			l[3] = strings.Repeat("f", len(l[3]))
			return l
		}},
	} {
		t.Run("forged entry: "+forge.name, func(t *testing.T) {
			s, zipPath, _ := rememberingStore(t)
			if _, err := resolve(t, s); err != nil {
				t.Fatal(err)
			}
			ef := RememberedFile(s, zipPath)
			e, err := os.ReadFile(ef)
			if err != nil {
				t.Skipf("nothing remembered: %v", err)
			}
			lines := strings.Split(strings.TrimSuffix(string(e), "\n"), "\n")
			if err := os.WriteFile(ef, []byte(strings.Join(forge.edit(lines), "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := resolve(t, s)
			if err != nil || IsLazy(r.Archive) {
				t.Fatalf("a forged entry was trusted (lazy) or broke the resolve: %v", err)
			}
			// The full resolve that refused it wrote a good entry back.
			if r, err := resolve(t, s); err != nil || !IsLazy(r.Archive) {
				t.Fatalf("the entry was not refreshed: %v", err)
			}
		})
	}
	t.Run("forged entry for rewritten bytes", func(t *testing.T) {
		// Someone without the key rewrites the zip and writes an entry that
		// names the new identity with the old (sidecar-matching) digest: the
		// MAC does not verify, the bytes are hashed and refused.
		s, zipPath, _ := rememberingStore(t)
		if _, err := resolve(t, s); err != nil {
			t.Fatal(err)
		}
		ef := RememberedFile(s, zipPath)
		e, err := os.ReadFile(ef)
		if err != nil {
			t.Skipf("nothing remembered: %v", err)
		}
		lines := strings.Split(strings.TrimSuffix(string(e), "\n"), "\n")
		rewrite(t, zipPath)
		f, _ := os.Open(zipPath)
		newID := IdentityOf(f)
		f.Close()
		lines[1] = newID
		if err := os.WriteFile(ef, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := resolve(t, s); !diag.Is(err, "E-REG-002") {
			t.Fatalf("a forged entry let other bytes resolve: %v", err)
		}
	})
}
