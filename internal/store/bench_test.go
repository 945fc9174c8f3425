package store

import (
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// componentLike returns n bytes that start with the component header and
// compress about as well as a real component (~2.5x with deflate): tokens drawn
// from a small skewed vocabulary, not zeros (too easy) nor noise (too hard).
func componentLike(n int) []byte {
	r := rand.New(rand.NewSource(42))
	vocab := make([][]byte, 512)
	for i := range vocab {
		vocab[i] = make([]byte, 2+r.Intn(10))
		r.Read(vocab[i])
	}
	out := append(make([]byte, 0, n+16), wasmComponentHeader...)
	for len(out) < n {
		k := int(r.ExpFloat64() * 40)
		if k >= len(vocab) {
			k = r.Intn(len(vocab))
		}
		out = append(out, vocab[k]...)
		if r.Intn(4) == 0 {
			out = append(out, byte(r.Intn(256)))
		}
	}
	return out[:n]
}

// BenchmarkPack5MB: mur build's work for a capsule with a 5 MB component
// (read, header check, deterministic deflate, hash).
func BenchmarkPack5MB(b *testing.B) {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "murmur.yaml"), []byte("name: big\nversion: 1.0.0\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "capsule.wasm"), componentLike(5<<20), 0o644)
	b.SetBytes(5 << 20)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Pack(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolve5MB: a verified resolve of that artifact (read once, hash,
// both sidecars, hardened unzip with CRC checks, manifest parse). Throughput is
// in bytes of the .mur.zip.
func BenchmarkResolve5MB(b *testing.B) {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "murmur.yaml"), []byte("name: big\nversion: 1.0.0\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "capsule.wasm"), componentLike(5<<20), 0o644)
	built, err := Pack(dir)
	if err != nil {
		b.Fatal(err)
	}
	s := At(b.TempDir())
	if _, err := s.Publish(built.Zip, false); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(built.Zip)))
	b.ReportMetric(float64(len(built.Zip)), "zip-bytes")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Resolve("local/big", "1.0.0", noSecrets); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHashOnly is the floor Resolve cannot beat: SHA-256 of 5 MB.
func BenchmarkHashOnly5MB(b *testing.B) {
	data := componentLike(5 << 20)
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		HashHex(data)
	}
}
