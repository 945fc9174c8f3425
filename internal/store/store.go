// Package store holds Murmur's artifact stores (docs/stores.md): the project store
// (<project>/.murmur/artifacts), the global store ($HOME/.murmur/artifacts, also
// mur-roost's default --registry-path), the hardened .mur.zip reader, the
// content hash and its sidecars, and murmur.lock.
//
// Trust rests on one rule: an artifact is what its bytes hash to. A resolve
// reads the .mur.zip once, hashes that buffer and parses the same buffer, and
// refuses when a sidecar (.sha256, .meta.json), the directory path, or the lock
// disagrees — never a silent pass. A resolve of a file whose identity is
// unchanged since a verified one uses that one's remembered, MACed digest
// instead and reads a stored entry only when asked (RATIONALE.md). Writes go through a staging directory beside
// the version directory that is renamed into place whole, so no reader ever sees
// half an artifact and a failed publish leaves the store as it was.
package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/murmur-go/murmur/internal/atomicfile"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/manifest"
)

// Store kinds.
const (
	KindProject  = "project"
	KindGlobal   = "global"
	KindRegistry = "registry"
)

// Store is one artifact store rooted at Root.
type Store struct {
	Root string
	Kind string // "project" | "global" | "registry"
	// remember is where verified digests are remembered by file identity
	// (nil: every resolve reads and hashes).
	remember *remembered
}

// Global is the global store under home: $HOME/.murmur/artifacts.
func Global(homeDir string) *Store {
	return &Store{Root: home.Artifacts(homeDir), Kind: KindGlobal, remember: rememberedFor(homeDir)}
}

// Project is the project store of projectDir: <project>/.murmur/artifacts.
func Project(projectDir string) *Store {
	return &Store{Root: home.ProjectArtifacts(projectDir), Kind: KindProject}
}

// At is a store at an explicit root (mur-roost's --registry-path).
func At(root string) *Store { return &Store{Root: root, Kind: KindRegistry} }

// FindProject returns the nearest directory at or above wd that holds a
// murmur.yaml (docs/stores.md).
func FindProject(wd string) (dir string, ok bool) {
	d, err := filepath.Abs(wd)
	if err != nil {
		return "", false
	}
	for {
		if fi, err := os.Stat(filepath.Join(d, ManifestEntry)); err == nil && fi.Mode().IsRegular() {
			return d, true
		}
		p := filepath.Dir(d)
		if p == d {
			return "", false
		}
		d = p
	}
}

// Meta is the .meta.json sidecar.
type Meta struct {
	Name        string   `json:"name"`
	Version     string   `json:"version"`
	Runtime     string   `json:"runtime"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	SHA256      string   `json:"sha256"`
}

// Resolved is one artifact read and verified from a store.
type Resolved struct {
	Name, Version, Runtime string
	// SHA256 is the hex SHA-256 of the zip bytes, recomputed on this resolve
	// or remembered for the file's unchanged identity from one that did.
	SHA256  string
	ZipPath string
	Store   *Store
	// Manifest is parsed from the zip's murmur.yaml with the Options given.
	Manifest *manifest.Manifest
	// Archive is the verified zip, in memory: the very bytes that were hashed.
	Archive *Archive
	// Unchanged is set by Publish when the store already held these exact
	// bytes (an idempotent publish or install wrote nothing).
	Unchanged bool
}

// Digest identifies the bytes of the entry named entry in r's archive, for a
// cache keyed by content (the compile cache): the zip's SHA-256, which this
// resolve computed over the very bytes the archive holds, and the entry's
// name. Those bytes decide the entry's bytes, so the same digest always
// names the same contents and no one needs to hash them again.
func Digest(r *Resolved, entry string) string { return "zip-sha256:" + r.SHA256 + "/" + entry }

// Ref renders name@version.
func (r *Resolved) Ref() string { return r.Name + "@" + r.Version }

// Dir is the directory that holds name@version in this store.
func (s *Store) Dir(name, version string) string {
	scope, bare, _ := strings.Cut(name, "/")
	return filepath.Join(s.Root, scope, bare, version)
}

// Paths returns the zip, .sha256 and .meta.json paths of name@version.
func (s *Store) Paths(name, version string) (zipPath, shaPath, metaPath string) {
	d := s.Dir(name, version)
	base := manifest.Bare(name) + "-" + version
	return filepath.Join(d, base+".mur.zip"), filepath.Join(d, base+".sha256"), filepath.Join(d, base+".meta.json")
}

func (s *Store) label() string { return s.Kind + " store (" + s.Root + ")" }

// NormalizeRef turns a bare name into local/<name> and checks name and version:
// both become path components, so anything else is refused before a path is
// built from it.
func NormalizeRef(name, version string) (string, error) {
	full, err := manifest.NormalizeName(name)
	if err != nil {
		return "", diag.Wrap(err, "E-REG-014", "bad artifact reference").
			WithHint("name artifacts as <scope>/<name>@<version>")
	}
	if manifest.ReservedVersion(version) {
		return "", diag.New("E-REG-004", "%q is a reserved version: it resolves to no artifact", version).
			WithHint("name an exact version")
	}
	if err := checkVersion(version); err != nil {
		return "", diag.Wrap(err, "E-REG-014", "bad artifact reference %s@%s", full, version).
			WithHint("name artifacts as <scope>/<name>@<version>")
	}
	return full, nil
}

func checkName(n string) error {
	if !manifest.IsFullName(n) {
		return fmt.Errorf("%q is not a full name <scope>/<name>", n)
	}
	return nil
}

// checkVersion accepts versions safe as one path component.
func checkVersion(v string) error {
	if v == "" || len(v) > 128 || v == "." || v == ".." || v[0] == '.' {
		return fmt.Errorf("version %q is not usable", v)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' || c == '+') {
			return fmt.Errorf("version %q holds %q (letters, digits, '.', '-', '_', '+' only)", v, c)
		}
	}
	return nil
}

// HashHex is the content hash: hex SHA-256 of the zip bytes.
func HashHex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// IsNotFound reports whether err is a store's "not installed" refusal.
func IsNotFound(err error) bool { return diag.Is(err, "E-REG-001") }

// Resolve reads name@version from the store and verifies it: the zip is read
// once (or, while its file's identity matches a remembered verified digest,
// only its directory and small entries: see RATIONALE.md); that buffer is hashed, checked against both sidecars, opened as a
// hardened archive and its murmur.yaml parsed with opts; the manifest must name
// the same artifact the directory path does. Any disagreement is a coded refusal.
func (s *Store) Resolve(name, version string, opts manifest.Options) (*Resolved, error) {
	full, err := NormalizeRef(name, version)
	if err != nil {
		return nil, err
	}
	// A forced republish swaps the version directory while a reader may be
	// between reading the zip and its sidecars. Such a read is refused like any
	// mismatch, but when the directory changed identity during the attempt the
	// refusal is about a moment, not the store: read again (up to five times).
	dir := s.Dir(full, version)
	for attempt := 1; ; attempt++ {
		before, _ := os.Stat(dir)
		r, err := s.resolveOnce(full, version, opts)
		if err == nil || attempt == 5 {
			return r, err
		}
		after, _ := os.Stat(dir)
		if before == nil && after == nil || before != nil && after != nil && os.SameFile(before, after) {
			return nil, err
		}
	}
}

// Rehashing returns a copy of s whose resolves always read and hash the
// whole zip and check every entry's CRC, trusting no remembered digest: a
// check of the store's bytes themselves, as mur doctor makes.
func (s *Store) Rehashing() *Store {
	c := *s
	c.remember = nil
	return &c
}

func (s *Store) resolveOnce(full, version string, opts manifest.Options) (*Resolved, error) {
	zipPath, shaPath, metaPath := s.Paths(full, version)
	f, err := os.Open(zipPath)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, notInstalled(s, full, version)
	}
	if err != nil {
		return nil, diag.Wrap(err, "E-IO-001", "cannot read %s", zipPath)
	}
	defer f.Close()
	// A remembered digest for this very identity stands for the bytes: the
	// zip's directory and small entries are read, its stored components are
	// left in the file until asked for (RATIONALE.md, "Remembered digests").
	ident := ""
	if settled(f) {
		ident = identity(f)
	}
	if sum, ok := s.remember.lookup(zipPath, ident); ok {
		if r, err := s.resolveRemembered(f, ident, sum, full, version, zipPath, shaPath, metaPath, opts); err == nil {
			return r, nil
		}
		// Anything that does not hold (a sidecar, the file moving under the
		// read) is decided by the full read below, with its own diagnostics.
	}
	data, err := readAll(f)
	if err != nil {
		return nil, diag.Wrap(err, "E-IO-001", "cannot read %s", zipPath)
	}
	r, err := s.verify(full, version, zipPath, shaPath, metaPath, data, opts)
	if err == nil && ident != "" && identity(f) == ident {
		s.remember.record(zipPath, ident, r.SHA256)
	}
	return r, err
}

func (s *Store) resolveRemembered(f *os.File, ident, sum, full, version, zipPath, shaPath, metaPath string, opts manifest.Options) (*Resolved, error) {
	ref := full + "@" + version
	meta, err := s.checkSidecars(ref, shaPath, metaPath, sum, version, full)
	if err != nil {
		return nil, err
	}
	max, err := MaxDecompressedBytes()
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	arch, err := openArchive(f, st.Size(), nil, &lazySource{path: zipPath, ident: ident, size: st.Size()}, max)
	if err != nil {
		return nil, err
	}
	if identity(f) != ident {
		return nil, errChanged
	}
	m, err := parseManifest(arch, zipPath, opts)
	if err != nil {
		return nil, err
	}
	return s.finish(ref, full, version, zipPath, sum, meta, m, arch)
}

// readAll reads f whole, in one allocation sized from its length.
func readAll(f *os.File) ([]byte, error) {
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+512))
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func notInstalled(s *Store, full, version string) error {
	return diag.New("E-REG-001", "%s@%s is not installed in the %s", full, version, s.label()).
		WithHint("publish its .mur.zip into the global store with 'mur publish <zip>' (in a project, 'mur install' then copies it into the project store)")
}

func (s *Store) verify(full, version, zipPath, shaPath, metaPath string, data []byte, opts manifest.Options) (*Resolved, error) {
	ref := full + "@" + version
	sum := HashHex(data)
	meta, err := s.checkSidecars(ref, shaPath, metaPath, sum, version, full)
	if err != nil {
		return nil, err
	}
	arch, err := OpenArchive(data)
	if err != nil {
		return nil, withContext(err, ref+" in the "+s.label())
	}
	m, err := parseManifest(arch, zipPath, opts)
	if err != nil {
		return nil, err
	}
	return s.finish(ref, full, version, zipPath, sum, meta, m, arch)
}

// checkSidecars compares both sidecars with sum, the hash of the bytes read.
func (s *Store) checkSidecars(ref, shaPath, metaPath, sum, version, full string) (Meta, error) {
	side, err := os.ReadFile(shaPath)
	if err != nil {
		return Meta{}, diag.Wrap(err, "E-REG-002", "%s in the %s has no readable .sha256 sidecar", ref, s.label()).
			WithHint("install or publish it again")
	}
	if got := strings.TrimSpace(string(side)); got != sum {
		return Meta{}, diag.New("E-REG-002", "%s in the %s: the .sha256 sidecar says %s but the zip bytes hash to %s", ref, s.label(), short(got), short(sum)).
			WithHint("the artifact changed after it was stored: install or publish it again")
	}
	mb, err := os.ReadFile(metaPath)
	if err != nil {
		return Meta{}, diag.Wrap(err, "E-REG-008", "%s in the %s has no readable .meta.json sidecar", ref, s.label()).
			WithHint("install or publish it again")
	}
	var meta Meta
	if err := json.Unmarshal(mb, &meta); err != nil {
		return Meta{}, diag.Wrap(err, "E-REG-008", "%s in the %s: .meta.json does not parse", ref, s.label()).
			WithHint("install or publish it again")
	}
	if meta.SHA256 != sum || meta.Name != full || meta.Version != version {
		return Meta{}, diag.New("E-REG-008", "%s in the %s: .meta.json names %s@%s sha256 %s, the store holds %s sha256 %s",
			ref, s.label(), meta.Name, meta.Version, short(meta.SHA256), ref, short(sum)).
			WithHint("install or publish it again")
	}
	return meta, nil
}

// finish checks the parsed manifest against the directory path and the
// .meta.json sidecar.
func (s *Store) finish(ref, full, version, zipPath, sum string, meta Meta, m *manifest.Manifest, arch *Archive) (*Resolved, error) {
	if m.Name != full || m.Version != version {
		return nil, diag.New("E-REG-009", "%s in the %s: its murmur.yaml declares %s@%s", ref, s.label(), m.Name, m.Version).
			WithHint("the directory path decides the name: install or publish the artifact again")
	}
	rt := m.Runtime.Or(manifest.RuntimeCapsule)
	if meta.Runtime != rt {
		return nil, diag.New("E-REG-008", "%s in the %s: .meta.json says runtime %q, its murmur.yaml %q", ref, s.label(), meta.Runtime, rt).
			WithHint("install or publish it again")
	}
	return &Resolved{Name: full, Version: version, Runtime: rt, SHA256: sum, ZipPath: zipPath,
		Store: s, Manifest: m, Archive: arch}, nil
}

// withContext prefixes a diagnostic's message with where it happened, keeping
// its code and hint.
func withContext(err error, where string) error {
	var d *diag.Diagnostic
	if errors.As(err, &d) {
		c := *d
		c.Message = where + ": " + d.Message
		c.Err = d
		return &c
	}
	return err
}

// parseManifest parses the archive's root murmur.yaml; where names the zip in
// messages (a manifest diagnostic's file is "<where>!/murmur.yaml").
func parseManifest(a *Archive, where string, opts manifest.Options) (*manifest.Manifest, error) {
	y, err := a.ReadFile(ManifestEntry)
	if err != nil {
		return nil, diag.New("E-REG-012", "%s has no murmur.yaml at its root", where).
			WithHint("build artifacts with 'mur build', which packs murmur.yaml")
	}
	return manifest.Parse(y, where+"!/"+ManifestEntry, opts)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "(none)"
	}
	return h
}

// Publish stores a .mur.zip: the archive is verified, its manifest parsed
// (secrets unresolved) and the artifact written under the name and version it
// declares. The same version with the same bytes is an idempotent success; with
// other bytes it is refused (E-REG-003) unless force. The version directory is
// staged whole beside its final place and renamed in, so a concurrent reader or
// publisher sees the old artifact or the new one, and a failure (disk full, a
// read-only store) leaves the store exactly as it was.
func (s *Store) Publish(zipBytes []byte, force bool) (*Resolved, error) {
	arch, err := OpenArchive(zipBytes)
	if err != nil {
		return nil, err
	}
	m, err := parseManifest(arch, "the .mur.zip", manifest.Options{SkipSecrets: true})
	if err != nil {
		return nil, err
	}
	full, err := NormalizeRef(m.Name, m.Version)
	if err != nil {
		return nil, err
	}
	opts := manifest.Options{SkipSecrets: true}
	sum := HashHex(zipBytes)
	if cur, err := s.Resolve(full, m.Version, opts); err == nil {
		if cur.SHA256 == sum {
			cur.Unchanged = true
			return cur, nil
		}
		if !force {
			return nil, alreadyPublished(s, full, m.Version, cur.SHA256, sum)
		}
	}
	meta := Meta{Name: full, Version: m.Version, Runtime: m.Runtime.Or(manifest.RuntimeCapsule),
		Description: m.Description, Tags: m.Tags, SHA256: sum}
	if meta.Tags == nil {
		meta.Tags = []string{}
	}
	lost, err := s.write(full, m.Version, zipBytes, meta, force)
	if err != nil {
		return nil, err
	}
	r, err := s.Resolve(full, m.Version, opts)
	if r != nil {
		r.Unchanged = lost
	}
	return r, err
}

func alreadyPublished(s *Store, full, version, have, want string) error {
	return diag.New("E-REG-003", "%s@%s is already in the %s with other bytes (sha256 %s, this zip %s)",
		full, version, s.label(), short(have), short(want)).
		WithHint("bump the version in murmur.yaml, or pass --force to replace it")
}

// write stages and renames the version directory in. identical reports that
// a concurrent publisher had already stored the same bytes.
func (s *Store) write(full, version string, zipBytes []byte, meta Meta, force bool) (identical bool, err error) {
	final := s.Dir(full, version)
	parent := filepath.Dir(final)
	ioErr := func(err error, what string) error {
		return diag.Wrap(err, "E-IO-002", "cannot write %s@%s into the %s: %s", full, version, s.label(), what).
			WithHint("check the store is a writable directory with free space; nothing was changed")
	}
	created, err := mkdirsTracked(parent)
	if err != nil {
		return false, ioErr(err, "creating "+parent)
	}
	removeStaleStaging(parent)
	stage, err := os.MkdirTemp(parent, ".staging-"+version+"-")
	if err != nil {
		removeDirs(created)
		return false, ioErr(err, "creating a staging directory")
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(stage)
			removeDirs(created)
		}
	}()
	if err := os.Chmod(stage, 0o755); err != nil {
		return false, ioErr(err, "staging")
	}
	mj, _ := json.MarshalIndent(meta, "", "  ")
	mj = append(mj, '\n')
	base := manifest.Bare(full) + "-" + version
	for _, f := range []struct {
		name string
		data []byte
	}{
		{base + ".mur.zip", zipBytes},
		{base + ".sha256", []byte(meta.SHA256 + "\n")},
		{base + ".meta.json", mj},
	} {
		if err := writeNewFile(filepath.Join(stage, f.name), f.data, 0o644); err != nil {
			return false, ioErr(err, "writing "+f.name)
		}
	}
	if err := atomicfile.SyncDir(stage); err != nil {
		return false, ioErr(err, "syncing")
	}
	if err := os.Rename(stage, final); err == nil {
		done = true
		if err := atomicfile.SyncDir(parent); err != nil {
			return false, ioErr(err, "syncing")
		}
		return false, nil
	} else if !exists(final) {
		return false, ioErr(err, "renaming into place")
	}
	// Someone holds this version: a concurrent publisher won the race, or it
	// was there before. Identical bytes are a success; other bytes need force,
	// and then the two directories are exchanged in one step. Either way the
	// deferred cleanup removes what is left in stage.
	cur, rerr := s.Resolve(full, version, manifest.Options{SkipSecrets: true})
	if rerr == nil && cur.SHA256 == meta.SHA256 {
		return true, nil
	}
	if !force {
		if rerr != nil {
			return false, diag.Wrap(rerr, "E-REG-003", "%s@%s is already in the %s but does not verify", full, version, s.label()).
				WithHint("pass --force to replace it with this zip")
		}
		return false, alreadyPublished(s, full, version, cur.SHA256, meta.SHA256)
	}
	if err := exchange(stage, final); err != nil {
		return false, ioErr(err, "replacing the old version")
	}
	if err := atomicfile.SyncDir(parent); err != nil {
		return false, ioErr(err, "syncing")
	}
	return false, nil
}

// staleStaging is how old a staging directory must be before a later publish
// treats it as left by a crashed one and removes it.
const staleStaging = time.Hour

// removeStaleStaging removes staging directories a crashed publish left in dir.
// They are invisible to readers (hidden names), so this is housekeeping only.
func removeStaleStaging(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".staging-") {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleStaging {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// Entry is one artifact a store lists.
type Entry struct {
	Name, Version, Runtime, SHA256 string
	Description                    string
	Tags                           []string
	Store                          *Store
	// Problem is set when the sidecars cannot be read; the hash is not
	// recomputed by List (Resolve and `mur doctor` do that).
	Problem string
}

// List returns every artifact in the store, sorted by name then version, from
// the .meta.json sidecars. A store that does not exist yet is empty.
func (s *Store) List() ([]Entry, error) {
	var out []Entry
	scopes, err := readDirs(s.Root)
	if err != nil {
		return nil, diag.Wrap(err, "E-IO-001", "cannot read the %s", s.label())
	}
	for _, scope := range scopes {
		names, err := readDirs(filepath.Join(s.Root, scope))
		if err != nil {
			return nil, diag.Wrap(err, "E-IO-001", "cannot read the %s", s.label())
		}
		for _, n := range names {
			full := scope + "/" + n
			if !manifest.IsFullName(full) {
				continue
			}
			versions, err := readDirs(filepath.Join(s.Root, scope, n))
			if err != nil {
				return nil, diag.Wrap(err, "E-IO-001", "cannot read the %s", s.label())
			}
			for _, v := range versions {
				if checkVersion(v) != nil {
					continue
				}
				e := Entry{Name: full, Version: v, Store: s}
				_, _, metaPath := s.Paths(full, v)
				mb, err := os.ReadFile(metaPath)
				var meta Meta
				if err == nil {
					err = json.Unmarshal(mb, &meta)
				}
				if err != nil {
					e.Problem = "unreadable .meta.json: " + err.Error()
				} else {
					e.Runtime, e.SHA256, e.Description, e.Tags = meta.Runtime, meta.SHA256, meta.Description, meta.Tags
				}
				out = append(out, e)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Version < out[j].Version
	})
	return out, nil
}

// readDirs lists the subdirectories of dir, skipping hidden ones (staging).
func readDirs(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Equal reports whether two resolutions are the same bytes.
func (r *Resolved) Equal(o *Resolved) bool {
	if r.SHA256 != "" && r.SHA256 == o.SHA256 {
		return true
	}
	return bytes.Equal(r.Archive.Bytes(), o.Archive.Bytes())
}
