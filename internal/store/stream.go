package store

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
)

// fileID is what a resolve may reuse an earlier hash on: the
// file's device, inode, size, mtime and ctime, in nanoseconds. A store write
// is a rename of a new file, so any write changes at least the inode; an
// in-place edit changes the ctime.
type fileID struct {
	dev, ino           uint64
	size, mtime, ctime int64
}

func idOf(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino, size: st.Size,
		mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}, true
}

// scanned is what one pass over a .mur.zip's bytes established: their hash,
// and the manifest parsed from them (or why the archive was refused).
type scanned struct {
	sum string
	m   *manifest.Manifest
	err error
	// transient is set when the pass says nothing about the bytes (a read
	// error, the file changing under it): such a result is never reused.
	transient bool
}

type scanKey struct {
	path string
	id   fileID
}

type scanCall struct {
	done chan struct{}
	res  scanned
}

// ManifestCache lets ResolveManifest share passes over a .mur.zip: a pass's
// result is reused while the file's device, inode, size, mtime and ctime are
// unchanged (its fileID), concurrent resolves of one file wait for one
// pass, and at most a fixed number of passes run at once. It is safe for
// concurrent use; the zero value is not usable (NewManifestCache).
type ManifestCache struct {
	sem chan struct{}

	mu       sync.Mutex
	done     map[string]scanCall // by path: the latest pass's identity and result
	doneID   map[string]fileID
	inflight map[scanKey]*scanCall
}

// maxCached bounds the paths a ManifestCache remembers.
const maxCached = 4096

// NewManifestCache returns a cache that runs at most passes passes over
// archives at once (at least one).
func NewManifestCache(passes int) *ManifestCache {
	return &ManifestCache{
		sem:      make(chan struct{}, max(passes, 1)),
		done:     map[string]scanCall{},
		doneID:   map[string]fileID{},
		inflight: map[scanKey]*scanCall{},
	}
}

// scan returns the pass over the file at path with identity id, running
// pass only when no result for that identity exists or is in flight.
func (c *ManifestCache) scan(path string, id fileID, pass func() scanned) scanned {
	k := scanKey{path, id}
	c.mu.Lock()
	if r, ok := c.done[path]; ok && c.doneID[path] == id {
		c.mu.Unlock()
		return r.res
	}
	if call, ok := c.inflight[k]; ok {
		c.mu.Unlock()
		<-call.done
		return call.res
	}
	call := &scanCall{done: make(chan struct{})}
	c.inflight[k] = call
	c.mu.Unlock()

	c.sem <- struct{}{}
	call.res = pass()
	<-c.sem

	c.mu.Lock()
	delete(c.inflight, k)
	if !call.res.transient {
		if _, ok := c.done[path]; !ok && len(c.done) >= maxCached {
			for p := range c.done { // evict one, any one
				delete(c.done, p)
				delete(c.doneID, p)
				break
			}
		}
		c.done[path] = scanCall{res: call.res}
		c.doneID[path] = id
	}
	c.mu.Unlock()
	close(call.done)
	return call.res
}

// ResolveManifest is Resolve for a reader that needs the artifact's hash and
// policy, not its payload (mur-roost): the same checks in the same order,
// with the manifest parsed with gateway keys left unresolved, but the zip is
// streamed through the hash and its entries verified (names, sizes, CRCs,
// the decompression ceiling) without keeping them, so no copy of the
// artifact is ever held in memory. The result's Archive is nil. Passes over
// the zip go through c, which reuses them by file identity and bounds how
// many run at once; the sidecars are read on every call.
func (s *Store) ResolveManifest(name, version string, c *ManifestCache) (*Resolved, error) {
	full, err := NormalizeRef(name, version)
	if err != nil {
		return nil, err
	}
	dir := s.Dir(full, version)
	for attempt := 1; ; attempt++ {
		before, _ := os.Stat(dir)
		r, err := s.resolveManifestOnce(full, version, c)
		if err == nil || attempt == 5 {
			return r, err
		}
		after, _ := os.Stat(dir)
		if before == nil && after == nil || before != nil && after != nil && os.SameFile(before, after) {
			return nil, err
		}
	}
}

func (s *Store) resolveManifestOnce(full, version string, c *ManifestCache) (*Resolved, error) {
	zipPath, shaPath, metaPath := s.Paths(full, version)
	ref := full + "@" + version
	f, err := os.Open(zipPath)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, notInstalled(s, full, version)
	}
	if err != nil {
		return nil, diag.Wrap(err, "E-IO-001", "cannot read %s", zipPath)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, diag.Wrap(err, "E-IO-001", "cannot read %s", zipPath)
	}
	if !fi.Mode().IsRegular() {
		return nil, diag.New("E-IO-001", "cannot read %s: not a regular file", zipPath)
	}
	id, ok := idOf(fi)
	pass := func() scanned { return scanZip(f, id, zipPath, ref+" in the "+s.label()) }
	var sc scanned
	if ok {
		sc = c.scan(zipPath, id, pass)
	} else {
		sc = pass()
	}
	if sc.sum == "" {
		return nil, sc.err
	}
	meta, err := s.checkSidecars(ref, shaPath, metaPath, sc.sum, version, full)
	if err != nil {
		return nil, err
	}
	if sc.err != nil {
		return nil, sc.err
	}
	return s.finish(ref, full, version, zipPath, sc.sum, meta, sc.m, nil)
}

// scanZip is one pass over the open zip f: it hashes the bytes, checks the
// file did not change while they were read, then verifies every entry by
// streaming it and parses murmur.yaml. A result with an empty sum means the
// bytes could not be hashed.
func scanZip(f *os.File, id fileID, zipPath, where string) scanned {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, id.size)); err != nil {
		return scanned{err: diag.Wrap(err, "E-IO-001", "cannot read %s", zipPath), transient: true}
	}
	if fi, err := f.Stat(); err != nil {
		return scanned{err: diag.Wrap(err, "E-IO-001", "cannot read %s", zipPath), transient: true}
	} else if now, _ := idOf(fi); now != id {
		return scanned{err: diag.New("E-REG-002", "%s: the .mur.zip changed while it was hashed", where).
			WithHint("the artifact changed after it was stored: install or publish it again"), transient: true}
	}
	sum := hex.EncodeToString(h.Sum(nil))
	limit, err := MaxDecompressedBytes()
	if err != nil {
		return scanned{sum: sum, err: err}
	}
	y, err := streamArchive(io.NewSectionReader(f, 0, id.size), id.size, limit)
	if err != nil {
		return scanned{sum: sum, err: withContext(err, where)}
	}
	if y == nil {
		return scanned{sum: sum, err: diag.New("E-REG-012", "%s has no murmur.yaml at its root", zipPath).
			WithHint("build artifacts with 'mur build', which packs murmur.yaml")}
	}
	m, err := manifest.Parse(y, zipPath+"!/"+ManifestEntry, manifest.Options{SkipSecrets: true})
	return scanned{sum: sum, m: m, err: err}
}

// streamArchive applies OpenArchiveLimit's checks to a zip read through ra,
// decompressing each accepted entry to nowhere (its CRC and size are checked
// at its end) and keeping only the root murmur.yaml (nil when there is none).
func streamArchive(ra io.ReaderAt, size, limit int64) ([]byte, error) {
	zr, err := zip.NewReader(ra, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, diag.Wrap(err, "E-REG-010", "the artifact is not a readable .mur.zip (truncated or not a zip)").
			WithHint("rebuild it with 'mur build' and copy it again")
	}
	seen := map[string]bool{}
	var picks []*zip.File
	var declared uint64
	for _, f := range zr.File {
		name, ok := safeName(f.Name)
		if !ok || f.Mode()&fs.ModeSymlink != 0 {
			continue
		}
		if f.Mode().IsDir() || strings.HasSuffix(f.Name, "/") {
			continue
		}
		if seen[name] {
			return nil, diag.New("E-REG-012", "the artifact holds two entries named %q", name).
				WithHint("rebuild it with 'mur build', which writes each entry once")
		}
		seen[name] = true
		picks = append(picks, f)
		declared += f.UncompressedSize64
	}
	if declared > uint64(limit) {
		return nil, bomb(limit)
	}
	var total int64
	var yaml []byte
	for _, f := range picks {
		name, _ := safeName(f.Name)
		if f.Method != zip.Store && f.Method != zip.Deflate {
			return nil, diag.New("E-REG-010", "entry %q uses unsupported compression method %d", name, f.Method).
				WithHint("rebuild it with 'mur build' (stored or deflate entries only)")
		}
		if f.Method == zip.Store && f.CompressedSize64 != f.UncompressedSize64 {
			return nil, diag.New("E-REG-010", "entry %q is corrupt: stored entry with differing sizes", name).
				WithHint("the zip is corrupt or truncated: rebuild it with 'mur build'")
		}
		rc, err := f.Open()
		if err != nil {
			return nil, diag.Wrap(err, "E-REG-010", "entry %q cannot be read", name).
				WithHint("the zip is corrupt or truncated: rebuild it with 'mur build'")
		}
		var w io.Writer = io.Discard
		var keep *strings.Builder
		if name == ManifestEntry {
			keep = &strings.Builder{}
			w = &capped{w: keep, n: manifest.MaxManifestBytes + 1}
		}
		n, err := io.Copy(w, io.LimitReader(rc, limit-total+1))
		rc.Close()
		total += n
		if total > limit {
			return nil, bomb(limit)
		}
		if err != nil {
			return nil, diag.Wrap(err, "E-REG-010", "entry %q is corrupt", name).
				WithHint("the zip is corrupt or truncated: rebuild it with 'mur build'")
		}
		if keep != nil {
			yaml = []byte(keep.String())
		}
	}
	return yaml, nil
}

// capped writes at most n bytes to w and discards the rest (a manifest past
// manifest.MaxManifestBytes is refused by Parse, so one byte more is enough
// to tell).
type capped struct {
	w io.Writer
	n int
}

func (c *capped) Write(p []byte) (int, error) {
	if k := min(len(p), c.n); k > 0 {
		c.w.Write(p[:k])
		c.n -= k
	}
	return len(p), nil
}
