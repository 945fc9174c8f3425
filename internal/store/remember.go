package store

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"

	"github.com/murmur-go/murmur/internal/atomicfile"
	"github.com/murmur-go/murmur/internal/home"
)

// remembered holds, per artifact file, the digest a full resolve verified
// for it, keyed by the file's identity (device, inode, size, mtime, ctime in
// nanoseconds) and MACed with a key derived from the compile cache's key,
// so that a warm resolve need not read and hash bytes it already verified.
// See RATIONALE.md ("Remembered digests").
type remembered struct {
	dir     string // one file per artifact path: <dir>/<sha256(path)>
	keyPath string
}

// rememberedFor is the remembered digests of home: beside the compile cache,
// MACed with its key. homeDir "" remembers nothing.
func rememberedFor(homeDir string) *remembered {
	if homeDir == "" {
		return nil
	}
	return &remembered{dir: filepath.Join(home.Murmur(homeDir), "digests"), keyPath: home.CacheKey(homeDir)}
}

// key is the MAC key: HMAC-SHA-256 of a label under the compile cache's
// 32-byte key, so the two uses never share a tag. nil (no key yet, or a
// damaged one) means nothing is remembered or trusted.
func (m *remembered) key() []byte {
	k, err := os.ReadFile(m.keyPath)
	if err != nil || len(k) != 32 {
		return nil
	}
	h := hmac.New(sha256.New, k)
	h.Write([]byte("murmur remembered artifact digest v1"))
	return h.Sum(nil)
}

func (m *remembered) file(path string) string {
	sum := sha256.Sum256([]byte(path))
	return filepath.Join(m.dir, hex.EncodeToString(sum[:]))
}

func rememberedMAC(key []byte, path, ident, digest string) string {
	h := hmac.New(sha256.New, key)
	for _, s := range []string{path, ident, digest} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// lookup returns the digest remembered for path at identity ident, or ok
// false when there is no entry, it names another identity, or its MAC does
// not verify.
func (m *remembered) lookup(path, ident string) (digest string, ok bool) {
	if m == nil || ident == "" {
		return "", false
	}
	key := m.key()
	if key == nil {
		return "", false
	}
	b, err := os.ReadFile(m.file(path))
	if err != nil || len(b) > 4096 {
		return "", false
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 4 || lines[0] != path || lines[1] != ident {
		return "", false
	}
	want := rememberedMAC(key, path, ident, lines[2])
	if !hmac.Equal([]byte(lines[3]), []byte(want)) {
		return "", false
	}
	return lines[2], true
}

// record remembers digest for path at identity ident. It is best effort: a
// failure only means the next resolve reads and hashes again.
func (m *remembered) record(path, ident, digest string) {
	if m == nil || ident == "" {
		return
	}
	key := m.key()
	if key == nil {
		return
	}
	if err := os.MkdirAll(m.dir, 0o700); err != nil {
		return
	}
	body := path + "\n" + ident + "\n" + digest + "\n" + rememberedMAC(key, path, ident, digest) + "\n"
	_ = atomicfile.Write(m.file(path), []byte(body), 0o600)
}
