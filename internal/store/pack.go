package store

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
)

// zipEpoch is the timestamp of every entry mur build writes: a fixed time makes
// the same inputs give the same bytes, hence the same content hash.
var zipEpoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// WASM headers: magic "\0asm" then a version/layer word. A component is what
// the runtime instantiates; a core module is a common mistake (built without
// the component adapter) and gets its own hint.
var (
	wasmComponentHeader = []byte{0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00}
	wasmCoreHeader      = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
)

// Built is what Pack produced.
type Built struct {
	Zip      []byte
	SHA256   string
	Manifest *manifest.Manifest
	// Files are the zip's entries, sorted.
	Files []string
	// Payload is the payload entry ("" for a manifest-only agent capsule).
	Payload string
	// FileName is <bare-name>-<version>.mur.zip.
	FileName string
}

// ZipFileName is the file name mur build gives an artifact.
func ZipFileName(m *manifest.Manifest) string {
	return manifest.Bare(m.Name) + "-" + m.Version + ".mur.zip"
}

// Pack builds the .mur.zip of the artifact in dir: murmur.yaml, the payload its
// runtime calls for, and every requires_files path. It never compiles: a .wasm
// payload is checked by its 8-byte header only. The zip is deterministic
// (sorted entries, fixed timestamps), so the same inputs hash the same.
func Pack(dir string) (*Built, error) {
	mpath := filepath.Join(dir, ManifestEntry)
	if fi, err := os.Stat(mpath); err != nil || !fi.Mode().IsRegular() {
		return nil, diag.New("E-BLD-001", "%s has no murmur.yaml", dir).
			WithHint("run 'mur build' in, or name, the directory that holds the artifact's murmur.yaml")
	}
	m, err := manifest.Load(mpath, manifest.Options{SkipSecrets: true})
	if err != nil {
		return nil, err
	}
	for _, a := range m.Artifacts {
		// With SkipSecrets a ${NAME} reference is kept in APIKeyRef and leaves
		// APIKey empty; a literal key lands in APIKey.
		if a.Gateway != nil && a.Gateway.APIKeyRef == "" && a.Gateway.APIKey != "" {
			return nil, diag.New("E-BLD-002", "%s: artifact %s has a literal secret in gateway.api_key", mpath, a.Name).
				WithHint("reference an environment variable instead, e.g. api_key: ${PROVIDER_API_KEY}, and export it where the capsule runs")
		}
		if a.MCP == nil {
			continue
		}
		for _, h := range a.MCP.Headers {
			if h.Literal && manifest.SecretHeader(h.Name) {
				return nil, diag.New("E-BLD-002", "%s: artifact %s has a literal secret in mcp.headers.%s", mpath, a.Name, h.Name).
					WithHint("reference an environment variable instead, e.g. %s: \"Bearer ${TOKEN}\", and export it where the capsule runs", h.Name)
			}
		}
	}
	files := map[string]string{ManifestEntry: mpath} // entry -> source path
	payload, err := pickPayload(dir, m)
	if err != nil {
		return nil, err
	}
	if payload != "" {
		files[payload] = filepath.Join(dir, payload)
	}
	for _, rf := range m.RequiresFiles {
		entry, src, err := requiredFile(dir, rf)
		if err != nil {
			return nil, err
		}
		files[entry] = src
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)

	max, err := MaxDecompressedBytes()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestSpeed)
	})
	var total int64
	for _, n := range names {
		data, err := os.ReadFile(files[n])
		if err != nil {
			return nil, diag.Wrap(err, "E-IO-001", "cannot read %s", files[n])
		}
		total += int64(len(data))
		if total > max {
			return nil, diag.New("E-BLD-009", "the artifact would decompress to more than %d bytes, which no reader accepts", max).
				WithHint("drop large files from requires_files, or raise %s everywhere it is read", MaxDecompressedEnv)
		}
		// Components are stored, not deflated: they are most of the bytes,
		// compress poorly for the time it costs, and a stored entry is
		// verified in place on every resolve (no inflate), which is what keeps
		// resolve at hash speed. Text files are deflated.
		method := zip.Deflate
		if strings.HasSuffix(n, ".wasm") {
			method = zip.Store
		}
		h := &zip.FileHeader{Name: n, Method: method, Modified: zipEpoch}
		h.SetMode(0o644)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, diag.Wrap(err, "E-BLD-010", "cannot pack %s", n)
		}
		if _, err := w.Write(data); err != nil {
			return nil, diag.Wrap(err, "E-BLD-010", "cannot pack %s", n)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, diag.Wrap(err, "E-BLD-010", "cannot finish the zip")
	}
	z := buf.Bytes()
	return &Built{Zip: z, SHA256: HashHex(z), Manifest: m, Files: names, Payload: payload, FileName: ZipFileName(m)}, nil
}

// pickPayload returns the root payload file the manifest's runtime calls for.
func pickPayload(dir string, m *manifest.Manifest) (string, error) {
	rt := m.Runtime.Or(manifest.RuntimeCapsule)
	switch {
	case rt == manifest.RuntimeCapsule && m.IsAgent():
		return "", nil // an agent capsule is manifest-only
	case rt == manifest.RuntimeSkill:
		if fi, err := os.Stat(filepath.Join(dir, "skill.md")); err != nil || !fi.Mode().IsRegular() {
			return "", diag.New("E-BLD-006", "%s: a skill needs a skill.md beside its murmur.yaml", dir).
				WithHint("write the skill's instructions to %s", filepath.Join(dir, "skill.md"))
		}
		return "skill.md", nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", diag.Wrap(err, "E-IO-001", "cannot read %s", dir)
	}
	var wasm []string
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".wasm") {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, e.Name())); err == nil && fi.Mode().IsRegular() {
			wasm = append(wasm, e.Name())
		}
	}
	what := "a script capsule"
	if rt != manifest.RuntimeCapsule {
		what = "a " + rt
	}
	var pick string
	switch {
	case len(wasm) == 0:
		return "", diag.New("E-BLD-005", "%s: %s needs one .wasm component at the root of its directory, and there is none", dir, what).
			WithHint("build the component first (mur build never compiles) and place it beside murmur.yaml, e.g. capsule.wasm")
	case len(wasm) == 1:
		pick = wasm[0]
	default:
		for _, w := range wasm {
			if w == "capsule.wasm" {
				pick = w
			}
		}
		if pick == "" {
			return "", diag.New("E-BLD-008", "%s: several root .wasm files (%s) and none is capsule.wasm", dir, strings.Join(wasm, ", ")).
				WithHint("name the payload capsule.wasm, or keep only one .wasm beside murmur.yaml")
		}
	}
	// A symlinked payload is packed as the file it names, which must lie
	// inside dir like any requires_files path.
	if _, _, err := requiredFile(dir, pick); err != nil {
		return "", err
	}
	if err := CheckComponentHeader(filepath.Join(dir, pick)); err != nil {
		return "", err
	}
	return pick, nil
}

// CheckComponentHeader reads the first 8 bytes of path and refuses anything
// that is not a WebAssembly component.
func CheckComponentHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return diag.Wrap(err, "E-IO-001", "cannot read %s", path)
	}
	defer f.Close()
	var h [8]byte
	n, err := io.ReadFull(f, h[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return diag.Wrap(err, "E-IO-001", "cannot read %s", path)
	}
	switch {
	case n == 8 && bytes.Equal(h[:], wasmComponentHeader):
		return nil
	case n == 8 && bytes.Equal(h[:], wasmCoreHeader):
		return diag.New("E-BLD-003", "%s is a core WebAssembly module, not a component", path).
			WithHint("turn it into a component (e.g. 'wasm-tools component new' with the WASI adapter, or build for wasm32-wasip2)")
	default:
		return diag.New("E-BLD-004", "%s is not a WebAssembly component (its header is % x)", path, h[:n]).
			WithHint("place the compiled component (.wasm) beside murmur.yaml")
	}
}

// requiredFile resolves one requires_files path inside dir. The path, and
// where its symlinks lead, must stay inside dir and be a regular file.
func requiredFile(dir, rel string) (entry, src string, err error) {
	bad := func(why string) (string, string, error) {
		return "", "", diag.New("E-BLD-007", "requires_files: %q %s", rel, why).
			WithHint("list regular files inside the artifact's directory, by relative path")
	}
	entry, ok := safeName(filepath.ToSlash(rel))
	if !ok || filepath.IsAbs(rel) {
		return bad("is not a relative path inside the directory")
	}
	src = filepath.Join(dir, filepath.FromSlash(entry))
	root, err1 := filepath.EvalSymlinks(dir)
	real, err2 := filepath.EvalSymlinks(src)
	if err2 != nil {
		return bad("does not exist")
	}
	if err1 != nil {
		return bad("cannot be checked")
	}
	if r, err := filepath.Rel(root, real); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return bad("leads outside the directory")
	}
	if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
		return bad("is not a regular file")
	}
	return entry, real, nil
}
