package store

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/murmur-go/murmur/internal/diag"
)

// DefaultMaxDecompressedBytes is the ceiling on the total bytes one .mur.zip may
// decompress to (docs/stores.md). An artifact is a manifest plus one component or
// skill file: anything past this is a zip bomb, not a capsule.
const DefaultMaxDecompressedBytes int64 = 500 << 20

// MaxDecompressedEnv overrides DefaultMaxDecompressedBytes (a positive byte count).
const MaxDecompressedEnv = "MURMUR_MAX_ARTIFACT_DECOMPRESSED_BYTES"

// ManifestEntry is the root entry every .mur.zip carries.
const ManifestEntry = "murmur.yaml"

// MaxDecompressedBytes returns the decompression ceiling in force: the
// environment's override when set, else the default. A set but unusable value is
// an error rather than a silent fallback, because a typo there would otherwise
// quietly re-open the door the ceiling exists to close.
func MaxDecompressedBytes() (int64, error) {
	v, ok := os.LookupEnv(MaxDecompressedEnv)
	if !ok || strings.TrimSpace(v) == "" {
		return DefaultMaxDecompressedBytes, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return 0, diag.New("E-REG-016", "%s=%q is not a positive number of bytes", MaxDecompressedEnv, v).
			WithHint("set it to a byte count such as 524288000, or unset it for the 500 MB default")
	}
	return n, nil
}

// Archive is a verified .mur.zip held in memory. OpenArchive decompresses every
// entry it accepts up front, checking each CRC and the decompression ceiling, so
// a caller never reads a byte that was not verified and a bomb or a corrupt
// entry is refused before anything is written or run. The one exception is an
// archive a resolve opened over a remembered digest: its stored (uncompressed)
// entries are bounds-checked up front and read, identity- and CRC-checked, on
// first use.
type Archive struct {
	raw   []byte
	files map[string][]byte
	// src is set for an archive opened from a file whose digest was
	// remembered (openArchiveFile): raw and the stored entries in lazy are
	// read from the file only when asked for, each read checked against the
	// identity the digest was remembered for.
	src     *lazySource
	mu      sync.Mutex
	lazy    map[string]*lazyEntry
	names   []string // sorted
	ignored []string // entry names skipped as unsafe (absolute, "..", symlink)
}

// OpenArchive parses and verifies a .mur.zip under the ceiling in force
// (MaxDecompressedBytes).
func OpenArchive(data []byte) (*Archive, error) {
	max, err := MaxDecompressedBytes()
	if err != nil {
		return nil, err
	}
	return OpenArchiveLimit(data, max)
}

// OpenArchiveLimit is OpenArchive with an explicit ceiling on the total
// decompressed bytes.
//
// Entries with an absolute path, a ".." component, a backslash or NUL, or a
// symlink mode are ignored (recorded in Ignored): a reader that extracts them
// could be steered outside its directory. Directories are skipped. Two accepted
// entries with the same cleaned name are a refusal, since different zip readers
// would disagree on which one the hash vouches for.
func OpenArchiveLimit(data []byte, max int64) (*Archive, error) {
	return openArchive(bytes.NewReader(data), int64(len(data)), data, nil, max)
}

// openArchive is OpenArchiveLimit over ra; raw is ra's bytes, or nil with src
// set, when stored entries are left in the file until read.
func openArchive(ra io.ReaderAt, size int64, raw []byte, src *lazySource, max int64) (*Archive, error) {
	zr, err := zip.NewReader(ra, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, diag.Wrap(err, "E-REG-010", "the artifact is not a readable .mur.zip (truncated or not a zip)").
			WithHint("rebuild it with 'mur build' and copy it again")
	}
	a := &Archive{raw: raw, src: src, files: make(map[string][]byte)}
	type pick struct {
		f    *zip.File
		name string
	}
	var picks []pick
	var declared uint64
	for _, f := range zr.File {
		name, ok := safeName(f.Name)
		if !ok || f.Mode()&fs.ModeSymlink != 0 {
			a.ignored = append(a.ignored, f.Name)
			continue
		}
		if f.Mode().IsDir() || strings.HasSuffix(f.Name, "/") {
			continue
		}
		if _, dup := a.files[name]; dup {
			return nil, diag.New("E-REG-012", "the artifact holds two entries named %q", name).
				WithHint("rebuild it with 'mur build', which writes each entry once")
		}
		a.files[name] = nil
		picks = append(picks, pick{f, name})
		declared += f.UncompressedSize64
	}
	if declared > uint64(max) {
		return nil, bomb(max)
	}
	var total int64
	for _, p := range picks {
		if p.f.Method != zip.Store && p.f.Method != zip.Deflate {
			return nil, diag.New("E-REG-010", "entry %q uses unsupported compression method %d", p.name, p.f.Method).
				WithHint("rebuild it with 'mur build' (stored or deflate entries only)")
		}
		if p.f.Method == zip.Store && raw == nil {
			// The file's digest was verified before: its bounds are checked
			// now, its bytes and CRC when it is read.
			e, err := lazyStored(p.f, size)
			if err != nil {
				return nil, diag.Wrap(err, "E-REG-010", "entry %q is corrupt", p.name).
					WithHint("the zip is corrupt or truncated: rebuild it with 'mur build'")
			}
			total += e.n
			if total > max {
				return nil, bomb(max)
			}
			if a.lazy == nil {
				a.lazy = make(map[string]*lazyEntry)
			}
			a.lazy[p.name] = e
			delete(a.files, p.name) // held in lazy, not files
			a.names = append(a.names, p.name)
			continue
		}
		if p.f.Method == zip.Store {
			// A stored entry is verified in place: no copy, just its bounds,
			// sizes and CRC against the bytes that were hashed.
			data, err := storedData(p.f, raw)
			if err != nil {
				return nil, diag.Wrap(err, "E-REG-010", "entry %q is corrupt", p.name).
					WithHint("the zip is corrupt or truncated: rebuild it with 'mur build'")
			}
			total += int64(len(data))
			if total > max {
				return nil, bomb(max)
			}
			a.files[p.name] = data
			a.names = append(a.names, p.name)
			continue
		}
		rc, err := p.f.Open()
		if err != nil {
			return nil, diag.Wrap(err, "E-REG-010", "entry %q cannot be read", p.name).
				WithHint("the zip is corrupt or truncated: rebuild it with 'mur build'")
		}
		// Read at most what is left under the ceiling plus one byte, so an entry
		// whose header understates its size is still stopped at the ceiling.
		// Pre-size from the header, but never trust it for more than a modest
		// allocation: a tiny hostile zip may declare hundreds of megabytes.
		var buf bytes.Buffer
		if hint := p.f.UncompressedSize64; hint < uint64(max-total) {
			buf.Grow(int(min(hint, preallocCap)))
		}
		n, err := io.Copy(&buf, io.LimitReader(rc, max-total+1))
		rc.Close()
		total += n
		if total > max {
			return nil, bomb(max)
		}
		if err != nil {
			return nil, diag.Wrap(err, "E-REG-010", "entry %q is corrupt", p.name).
				WithHint("the zip is corrupt or truncated: rebuild it with 'mur build'")
		}
		a.files[p.name] = buf.Bytes()
		a.names = append(a.names, p.name)
	}
	sort.Strings(a.names)
	return a, nil
}

// storedData returns the bytes of a stored (uncompressed) entry as a slice of
// raw, after checking they lie inside raw and match the entry's CRC-32.
func storedData(f *zip.File, raw []byte) ([]byte, error) {
	if f.CompressedSize64 != f.UncompressedSize64 {
		return nil, errors.New("stored entry with differing sizes")
	}
	off, err := f.DataOffset()
	if err != nil {
		return nil, err
	}
	end := uint64(off) + f.CompressedSize64
	if off < 0 || end < uint64(off) || end > uint64(len(raw)) {
		return nil, errors.New("stored entry lies outside the file")
	}
	b := raw[off:end:end]
	if crc32.ChecksumIEEE(b) != f.CRC32 {
		return nil, zip.ErrChecksum
	}
	return b, nil
}

// preallocCap bounds the buffer pre-sized from an entry's declared size.
const preallocCap = 16 << 20

func bomb(max int64) *diag.Diagnostic {
	return diag.New("E-REG-011", "the artifact decompresses to more than %d bytes (a zip bomb?)", max).
		WithHint("if it is genuine, raise %s", MaxDecompressedEnv)
}

// safeName returns the cleaned entry name, or ok=false for a name a reader must
// never use as a path.
func safeName(n string) (string, bool) {
	if n == "" || strings.ContainsAny(n, "\\\x00") || strings.HasPrefix(n, "/") {
		return "", false
	}
	if len(n) >= 2 && n[1] == ':' { // a Windows drive letter
		return "", false
	}
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return "", false
		}
	}
	c := path.Clean(n)
	if c == "." {
		return "", false
	}
	return c, true
}

// Bytes returns the zip bytes the archive was opened from (the hashed bytes).
// For an archive whose stored entries are still in the file, the file is
// read now; nil means it changed since it was resolved (ReadBytes says why).
func (a *Archive) Bytes() []byte {
	b, _ := a.ReadBytes()
	return b
}

// ReadBytes is Bytes with the reason a read of the file was refused: the
// file changed since it was resolved (E-REG-002), so these coordinates would
// give other bytes than the ones verified.
func (a *Archive) ReadBytes() ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.raw == nil && a.src != nil {
		b, err := a.src.read(0, a.src.size, nil)
		if err != nil {
			return nil, diag.Wrap(err, "E-REG-002", "cannot read %s", a.src.path).
				WithHint("the artifact changed after it was resolved: run again, or install or publish it again")
		}
		a.raw = b
	}
	return a.raw, nil
}

// Names returns the accepted file entries, sorted.
func (a *Archive) Names() []string { return append([]string(nil), a.names...) }

// Ignored returns the entry names skipped as unsafe.
func (a *Archive) Ignored() []string { return append([]string(nil), a.ignored...) }

// ReadFile returns an accepted entry's verified contents. The slice is shared:
// callers must not modify it.
//
// A stored entry of an archive opened over a remembered digest is read from
// the file on first use and its CRC checked; if the file changed since the
// resolve, the read is refused (E-REG-002): the same coordinates never give
// other bytes within one resolve.
func (a *Archive) ReadFile(name string) ([]byte, error) {
	if c, ok := safeName(name); ok {
		return a.entry(c)
	}
	return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
}

func (a *Archive) entry(c string) ([]byte, error) {
	if b, ok := a.files[c]; ok {
		return b, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.lazy[c]
	if !ok {
		return nil, fmt.Errorf("%s: %w", c, fs.ErrNotExist)
	}
	if e.data == nil {
		b, err := a.src.read(e.off, e.n, &e.crc)
		if err != nil {
			return nil, diag.Wrap(err, "E-REG-002", "cannot read %s from %s", c, a.src.path).
				WithHint("the artifact changed after it was resolved: run again, or install or publish it again")
		}
		e.data = b
	}
	return e.data, nil
}

// Has reports whether the archive holds an accepted entry named name, without
// reading it.
func (a *Archive) Has(name string) bool {
	c, ok := safeName(name)
	if !ok {
		return false
	}
	if _, ok := a.files[c]; ok {
		return true
	}
	_, ok = a.lazy[c]
	return ok
}

// PayloadName is the name Payload would return, without reading the entry.
func (a *Archive) PayloadName() (name string, ok bool) {
	if a.Has("capsule.wasm") {
		return "capsule.wasm", true
	}
	for _, n := range a.names {
		if !strings.Contains(n, "/") && strings.HasSuffix(n, ".wasm") {
			return n, true
		}
	}
	if a.Has("skill.md") {
		return "skill.md", true
	}
	return "", false
}

// Payload returns the artifact's payload: a root *.wasm component
// (capsule.wasm preferred, else the first by name), or else a root skill.md.
// ok is false for a manifest-only artifact (an agent capsule).
// For an archive opened over a remembered digest the entry is read now; data
// is nil if that read is refused (ReadFile says why).
func (a *Archive) Payload() (name string, data []byte, ok bool) {
	name, ok = a.PayloadName()
	if !ok {
		return "", nil, false
	}
	data, _ = a.entry(name)
	return name, data, true
}
