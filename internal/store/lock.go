package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/murmur-go/murmur/internal/diag"
)

// LockFile is murmur.lock, beside murmur.yaml (docs/stores.md).
const LockFile = "murmur.lock"

// LockVersion is the only lock_version this reader understands.
const LockVersion = 1

// Lock is murmur.lock: the exact artifacts `mur install` pinned. Where it
// exists, every resolve of a declared artifact must match it (Chain.Resolve).
type Lock struct {
	Version   int         `yaml:"lock_version"`
	Artifacts []LockEntry `yaml:"artifacts"`
	// File is the path it was read from ("" for a lock built in memory).
	File string `yaml:"-"`
}

// LockEntry pins one artifact.
type LockEntry struct {
	Name    string `yaml:"name"` // full name
	Version string `yaml:"version"`
	SHA256  string `yaml:"sha256"`
}

// Find returns the entry for the full name, if any.
func (l *Lock) Find(name string) (LockEntry, bool) {
	for _, e := range l.Artifacts {
		if e.Name == name {
			return e, true
		}
	}
	return LockEntry{}, false
}

// ReadLock reads <projectDir>/murmur.lock. It returns (nil, nil) when there is
// none: resolution is then presence-only.
func ReadLock(projectDir string) (*Lock, error) {
	p := filepath.Join(projectDir, LockFile)
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, diag.Wrap(err, "E-IO-001", "cannot read %s", p)
	}
	l, err := ParseLock(data)
	if err != nil {
		return nil, diag.Wrap(err, "E-REG-013", "%s is not a valid lock file", p).
			WithHint("run 'mur install' in the project to write it again")
	}
	l.File = p
	return l, nil
}

// ParseLock parses and validates murmur.lock bytes.
func ParseLock(data []byte) (*Lock, error) {
	var l Lock
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&l); err != nil {
		return nil, err
	}
	if l.Version != LockVersion {
		return nil, fmt.Errorf("lock_version is %d, want %d", l.Version, LockVersion)
	}
	seen := map[string]bool{}
	for i, e := range l.Artifacts {
		if err := checkName(e.Name); err != nil {
			return nil, fmt.Errorf("artifacts[%d]: %w", i, err)
		}
		if err := checkVersion(e.Version); err != nil {
			return nil, fmt.Errorf("artifacts[%d]: %w", i, err)
		}
		if !isHex64(e.SHA256) {
			return nil, fmt.Errorf("artifacts[%d]: sha256 %q is not 64 lowercase hex digits", i, e.SHA256)
		}
		if seen[e.Name] {
			return nil, fmt.Errorf("artifacts[%d]: %s is pinned twice", i, e.Name)
		}
		seen[e.Name] = true
	}
	return &l, nil
}

// Marshal renders the lock as YAML with its entries sorted by name, so the same
// pins always give the same file.
func (l *Lock) Marshal() ([]byte, error) {
	c := Lock{Version: LockVersion, Artifacts: append([]LockEntry(nil), l.Artifacts...)}
	sort.Slice(c.Artifacts, func(i, j int) bool { return c.Artifacts[i].Name < c.Artifacts[j].Name })
	if c.Artifacts == nil {
		c.Artifacts = []LockEntry{}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&c); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteLock writes <projectDir>/murmur.lock atomically.
func WriteLock(projectDir string, l *Lock) error {
	data, err := l.Marshal()
	if err != nil {
		return diag.Wrap(err, "E-REG-013", "cannot render murmur.lock")
	}
	p := filepath.Join(projectDir, LockFile)
	if err := WriteFileAtomic(p, data, 0o644); err != nil {
		return diag.Wrap(err, "E-IO-002", "cannot write %s", p).
			WithHint("check the project directory is writable and the disk has room")
	}
	return nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
