package store

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"hash/crc32"
	"io/fs"
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
)

// zent is one entry of a zip a test builds by hand.
type zent struct {
	name string
	data []byte
	mode fs.FileMode // 0 = 0644 regular
}

func buildZip(t testing.TB, ents ...zent) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range ents {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		if e.mode != 0 {
			h.SetMode(e.mode)
		} else {
			h.SetMode(0o644)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// lyingZip has one entry whose header declares declared bytes but whose
// deflate stream expands to actual bytes of zeros.
func lyingZip(t testing.TB, declared uint64, actual int) []byte {
	t.Helper()
	var comp bytes.Buffer
	fw, _ := flate.NewWriter(&comp, flate.BestCompression)
	fw.Write(make([]byte, actual))
	fw.Close()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "capsule.wasm", Method: zip.Deflate,
		CRC32: crc32.ChecksumIEEE(make([]byte, actual)), CompressedSize64: uint64(comp.Len()), UncompressedSize64: declared}
	w, err := zw.CreateRaw(h)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(comp.Bytes())
	zw.Close()
	return buf.Bytes()
}

const yamlOK = "name: demo\nversion: 0.1.0\n"

func TestOpenArchiveHostile(t *testing.T) {
	comp := append(append([]byte{}, wasmComponentHeader...), "body"...)
	tests := []struct {
		name      string
		zip       []byte
		limit     int64
		wantCode  string   // "" = accepted
		wantNames []string // accepted entries
		ignored   []string
	}{
		{name: "plain", zip: buildZip(t, zent{"murmur.yaml", []byte(yamlOK), 0}, zent{"capsule.wasm", comp, 0}),
			wantNames: []string{"capsule.wasm", "murmur.yaml"}},
		{name: "absolute path ignored", zip: buildZip(t, zent{"murmur.yaml", []byte(yamlOK), 0}, zent{"/etc/passwd", []byte("root"), 0}),
			wantNames: []string{"murmur.yaml"}, ignored: []string{"/etc/passwd"}},
		{name: "dotdot ignored", zip: buildZip(t, zent{"murmur.yaml", []byte(yamlOK), 0}, zent{"../evil", []byte("x"), 0}, zent{"a/../../evil2", []byte("x"), 0}, zent{"a/..", []byte("x"), 0}),
			wantNames: []string{"murmur.yaml"}, ignored: []string{"../evil", "a/../../evil2", "a/.."}},
		{name: "backslash and drive ignored", zip: buildZip(t, zent{"murmur.yaml", []byte(yamlOK), 0}, zent{"..\\evil", []byte("x"), 0}, zent{"C:/evil", []byte("x"), 0}),
			wantNames: []string{"murmur.yaml"}, ignored: []string{"..\\evil", "C:/evil"}},
		{name: "symlink ignored", zip: buildZip(t, zent{"murmur.yaml", []byte(yamlOK), 0}, zent{"link", []byte("/etc/passwd"), fs.ModeSymlink | 0o777}),
			wantNames: []string{"murmur.yaml"}, ignored: []string{"link"}},
		{name: "directories skipped", zip: buildZip(t, zent{"docs/", nil, 0}, zent{"docs/a.txt", []byte("a"), 0}),
			wantNames: []string{"docs/a.txt"}},
		{name: "dot prefix cleaned", zip: buildZip(t, zent{"./murmur.yaml", []byte(yamlOK), 0}),
			wantNames: []string{"murmur.yaml"}},
		{name: "duplicate refused", zip: buildZip(t, zent{"murmur.yaml", []byte(yamlOK), 0}, zent{"./murmur.yaml", []byte("name: other\n"), 0}),
			wantCode: "E-REG-012"},
		{name: "bomb past ceiling", zip: buildZip(t, zent{"capsule.wasm", make([]byte, 4<<20), 0}), limit: 1 << 20, wantCode: "E-REG-011"},
		{name: "many entries past ceiling", zip: buildZip(t, zent{"a", make([]byte, 600<<10), 0}, zent{"b", make([]byte, 600<<10), 0}), limit: 1 << 20, wantCode: "E-REG-011"},
		{name: "header understates size", zip: lyingZip(t, 100, 4<<20), limit: 1 << 20, wantCode: "E-REG-010"},
		{name: "exactly at ceiling", zip: buildZip(t, zent{"a", make([]byte, 1<<20), 0}), limit: 1 << 20, wantNames: []string{"a"}},
		{name: "empty input", zip: nil, wantCode: "E-REG-010"},
		{name: "not a zip", zip: []byte("name: demo\nversion: 0.1.0\n"), wantCode: "E-REG-010"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			limit := tc.limit
			if limit == 0 {
				limit = DefaultMaxDecompressedBytes
			}
			a, err := OpenArchiveLimit(tc.zip, limit)
			if tc.wantCode != "" {
				if diag.Code(err) != tc.wantCode {
					t.Fatalf("err = %v, want code %s", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenArchiveLimit: %v", err)
			}
			if got := strings.Join(a.Names(), ","); got != strings.Join(tc.wantNames, ",") {
				t.Errorf("names = %s, want %s", got, strings.Join(tc.wantNames, ","))
			}
			if got := strings.Join(a.Ignored(), ","); got != strings.Join(tc.ignored, ",") {
				t.Errorf("ignored = %q, want %q", got, strings.Join(tc.ignored, ","))
			}
			for _, n := range tc.ignored {
				if _, err := a.ReadFile(n); err == nil {
					t.Errorf("ReadFile(%q) served an ignored entry", n)
				}
			}
			if !bytes.Equal(a.Bytes(), tc.zip) {
				t.Error("Bytes() is not the input")
			}
		})
	}
}

func TestOpenArchiveTruncated(t *testing.T) {
	z := buildZip(t, zent{"murmur.yaml", []byte(yamlOK), 0}, zent{"capsule.wasm", bytes.Repeat([]byte("component "), 5000), 0})
	for cut := 0; cut < len(z); cut += 1 + len(z)/97 {
		if _, err := OpenArchiveLimit(z[:cut], DefaultMaxDecompressedBytes); diag.Code(err) != "E-REG-010" {
			t.Fatalf("truncated at %d of %d: err = %v, want E-REG-010", cut, len(z), err)
		}
	}
	// The last byte too (inside the end-of-central-directory record).
	if _, err := OpenArchiveLimit(z[:len(z)-1], DefaultMaxDecompressedBytes); diag.Code(err) != "E-REG-010" {
		t.Fatalf("truncated by one byte: err = %v", err)
	}
}

func TestOpenArchiveCorruptData(t *testing.T) {
	data := bytes.Repeat([]byte("abcdefgh"), 4096)
	z := buildZip(t, zent{"murmur.yaml", []byte(yamlOK), 0}, zent{"payload.bin", data, 0})
	// Flip bytes inside the compressed stream of the second entry: the CRC (or
	// the deflate decoder) must catch it.
	i := bytes.Index(z, []byte("payload.bin")) + len("payload.bin") + 5
	bad := append([]byte(nil), z...)
	bad[i] ^= 0xff
	bad[i+1] ^= 0xff
	if _, err := OpenArchiveLimit(bad, DefaultMaxDecompressedBytes); diag.Code(err) != "E-REG-010" {
		t.Fatalf("corrupt entry: err = %v, want E-REG-010", err)
	}
}

func TestOpenArchiveRandom(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 300; i++ {
		b := make([]byte, r.Intn(4096))
		r.Read(b)
		if _, err := OpenArchiveLimit(b, 1<<20); diag.Code(err) != "E-REG-010" {
			t.Fatalf("random input %d: err = %v, want E-REG-010", i, err)
		}
	}
}

func TestCeilingFromEnv(t *testing.T) {
	z := buildZip(t, zent{"a", make([]byte, 2<<20), 0})
	t.Setenv(MaxDecompressedEnv, "1048576")
	if _, err := OpenArchive(z); diag.Code(err) != "E-REG-011" {
		t.Fatalf("with a 1 MiB ceiling: err = %v, want E-REG-011", err)
	}
	t.Setenv(MaxDecompressedEnv, "4194304")
	if _, err := OpenArchive(z); err != nil {
		t.Fatalf("with a 4 MiB ceiling: %v", err)
	}
	for _, bad := range []string{"lots", "-5", "0", "1e9"} {
		t.Setenv(MaxDecompressedEnv, bad)
		if _, err := OpenArchive(z); diag.Code(err) != "E-REG-016" {
			t.Fatalf("%s=%q: err = %v, want E-REG-016", MaxDecompressedEnv, bad, err)
		}
	}
	os.Unsetenv(MaxDecompressedEnv)
	if n, err := MaxDecompressedBytes(); err != nil || n != DefaultMaxDecompressedBytes {
		t.Fatalf("default ceiling = %d, %v", n, err)
	}
}

func TestPayload(t *testing.T) {
	comp := wasmComponentHeader
	tests := []struct {
		name string
		ents []zent
		want string
	}{
		{"capsule.wasm preferred", []zent{{"a.wasm", comp, 0}, {"capsule.wasm", comp, 0}, {"murmur.yaml", nil, 0}}, "capsule.wasm"},
		{"single wasm", []zent{{"tool.wasm", comp, 0}, {"murmur.yaml", nil, 0}}, "tool.wasm"},
		{"nested wasm is not a payload", []zent{{"lib/x.wasm", comp, 0}, {"skill.md", []byte("# s"), 0}}, "skill.md"},
		{"skill", []zent{{"skill.md", []byte("# s"), 0}, {"murmur.yaml", nil, 0}}, "skill.md"},
		{"manifest only", []zent{{"murmur.yaml", nil, 0}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := OpenArchiveLimit(buildZip(t, tc.ents...), 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			n, data, ok := a.Payload()
			if n != tc.want || ok != (tc.want != "") {
				t.Fatalf("Payload() = %q, %v; want %q", n, ok, tc.want)
			}
			if ok {
				want, _ := a.ReadFile(n)
				if !bytes.Equal(data, want) {
					t.Error("payload bytes differ from ReadFile")
				}
			}
		})
	}
}

// FuzzOpenArchive: whatever the input, OpenArchive returns a coded refusal or
// an archive whose every name is safe and whose contents fit the ceiling.
func FuzzOpenArchive(f *testing.F) {
	f.Add(buildZip(f, zent{"murmur.yaml", []byte(yamlOK), 0}, zent{"capsule.wasm", wasmComponentHeader, 0}))
	f.Add(buildZip(f, zent{"../x", []byte("x"), 0}, zent{"l", []byte("/"), fs.ModeSymlink | 0o777}))
	f.Add([]byte("PK\x05\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
	const limit = 1 << 20
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := OpenArchiveLimit(data, limit)
		if err != nil {
			if diag.Code(err) == "" {
				t.Fatalf("uncoded error: %v", err)
			}
			return
		}
		var total int
		for _, n := range a.Names() {
			if c, ok := safeName(n); !ok || c != n {
				t.Fatalf("unsafe name accepted: %q", n)
			}
			b, err := a.ReadFile(n)
			if err != nil {
				t.Fatalf("ReadFile(%q): %v", n, err)
			}
			total += len(b)
		}
		if total > limit {
			t.Fatalf("decompressed %d bytes past the %d ceiling", total, limit)
		}
		a.Payload()
	})
}

func TestOpenArchiveStoredEntries(t *testing.T) {
	body := append(append([]byte{}, wasmComponentHeader...), bytes.Repeat([]byte("stored!"), 1000)...)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "capsule.wasm", Method: zip.Store})
	w.Write(body)
	zw.Close()
	z := buf.Bytes()
	a, err := OpenArchiveLimit(z, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := a.ReadFile("capsule.wasm"); !bytes.Equal(got, body) {
		t.Fatal("stored entry read back other bytes")
	}
	if _, err := OpenArchiveLimit(z, 1000); diag.Code(err) != "E-REG-011" {
		t.Fatalf("stored entry past the ceiling: %v", err)
	}
	i := bytes.Index(z, []byte("stored!"))
	bad := append([]byte(nil), z...)
	bad[i] ^= 1
	if _, err := OpenArchiveLimit(bad, 1<<20); diag.Code(err) != "E-REG-010" {
		t.Fatalf("flipped bit in a stored entry: %v", err)
	}
}
