package snapshot_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/snapshot"
)

// BenchmarkSnapshot copies a 10,000-file, 200 MiB work folder (100
// directories of 100 files of 20,971 bytes) with Copy and, in the same
// run, with `cp -a`, reporting files/s and MB/s for each (docs/benchmarks.md).
func BenchmarkSnapshot(b *testing.B) {
	const dirs, perDir, size = 100, 100, 209715200 / 10000
	base := b.TempDir()
	src := filepath.Join(base, "src")
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for d := 0; d < dirs; d++ {
		dir := filepath.Join(src, "d"+strconv.Itoa(d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < perDir; f++ {
			if err := os.WriteFile(filepath.Join(dir, "f"+strconv.Itoa(f)), buf, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	const files, bytes = dirs * perDir, dirs * perDir * size
	report := func(b *testing.B, took time.Duration) {
		s := took.Seconds() / float64(b.N)
		b.ReportMetric(files/s, "files/s")
		b.ReportMetric(bytes/1e6/s, "MB/s")
	}
	n := 0
	fresh := func(b *testing.B) string {
		n++
		dst := filepath.Join(base, "dst"+strconv.Itoa(n))
		if err := os.Mkdir(dst, 0o700); err != nil {
			b.Fatal(err)
		}
		return dst
	}
	b.Run("Copy", func(b *testing.B) {
		var took time.Duration
		for i := 0; i < b.N; i++ {
			dst := fresh(b)
			start := time.Now()
			sum, err := snapshot.Copy(context.Background(), src, dst, snapshot.Options{})
			took += time.Since(start)
			if err != nil || sum.Files != files || sum.Bytes != bytes {
				b.Fatalf("%+v %v", sum, err)
			}
			snapshot.Remove(dst)
		}
		report(b, took)
	})
	b.Run("cp-a", func(b *testing.B) {
		var took time.Duration
		for i := 0; i < b.N; i++ {
			dst := fresh(b)
			start := time.Now()
			out, err := exec.Command("cp", "-a", src+"/.", dst).CombinedOutput()
			took += time.Since(start)
			if err != nil {
				b.Fatalf("cp -a: %v: %s", err, out)
			}
			os.RemoveAll(dst)
		}
		report(b, took)
	})
}
