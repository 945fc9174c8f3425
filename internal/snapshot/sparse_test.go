package snapshot_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/murmur-go/murmur/internal/snapshot"
)

// sparseFile makes a file of size bytes that holds data only at the given
// offsets (4 KiB of it each); the rest is a hole.
func sparseFile(t *testing.T, p string, size int64, at ...int64) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, off := range at {
		if _, err := f.WriteAt(bytes.Repeat([]byte{byte('a' + i)}, 4096), off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

func digest(t *testing.T, p string) [32]byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

// A sparse file is copied as sparse: the copy's blocks are its data
// extents' (a hole-only 3 GiB file costs no block at all), its size and
// contents are the source's, and the summary counts its apparent size
// (the bytes of regular files). Issue 22 item 13: before, every
// snapshot wrote the holes out as zeros (3 GiB of disk per delegation).
func TestCopyKeepsHoles(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	const holeOnly = 3 << 30
	sparseFile(t, filepath.Join(src, "hole-only.img"), holeOnly)
	const mixed = 64 << 20
	sparseFile(t, filepath.Join(src, "mixed.img"), mixed, 0, 10<<20, mixed-4096)
	sum, err := snapshot.Copy(context.Background(), src, dst, snapshot.Options{MaxBytes: 10 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Bytes != holeOnly+mixed || sum.Files != 2 {
		t.Errorf("summary %+v", sum)
	}
	for _, tc := range []struct {
		name      string
		size      int64
		maxBlocks int64 // 512-byte blocks
	}{
		{"hole-only.img", holeOnly, 8},
		{"mixed.img", mixed, 3 * 4096 / 512 * 4}, // three 4 KiB extents, with room for the filesystem's rounding
	} {
		st := lstat(t, filepath.Join(dst, tc.name))
		srcSt := lstat(t, filepath.Join(src, tc.name))
		t.Logf("%s: %d bytes; source %d blocks, copy %d blocks (512 B)", tc.name, st.Size, srcSt.Blocks, st.Blocks)
		if st.Size != tc.size || st.Blocks > tc.maxBlocks {
			t.Errorf("%s: size %d, %d blocks; want %d, at most %d blocks", tc.name, st.Size, st.Blocks, tc.size, tc.maxBlocks)
		}
	}
	if digest(t, filepath.Join(src, "mixed.img")) != digest(t, filepath.Join(dst, "mixed.img")) {
		t.Error("mixed.img: the copy's contents differ")
	}
	// The hole-only copy holds no data anywhere (reading 3 GiB of zeros
	// would say the same, slower).
	f, err := os.Open(filepath.Join(dst, "hole-only.img"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if off, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_DATA); !errors.Is(err, unix.ENXIO) {
		t.Errorf("hole-only.img copy has data at %d (%v)", off, err)
	}
}

// The copies of one session share a budget of file data: the copy that
// would pass it fails with *BudgetSpent and gives back what it took, so the
// next copy that fits still runs. Holes cost the budget nothing.
func TestCopyBudget(t *testing.T) {
	src := t.TempDir()
	write(t, filepath.Join(src, "a.txt"), string(bytes.Repeat([]byte("x"), 600<<10)), 0o644)
	sparseFile(t, filepath.Join(src, "hole.img"), 1<<30)
	b := snapshot.NewBudget(1 << 20)
	copyTo := func() error {
		dst := t.TempDir()
		_, err := snapshot.Copy(context.Background(), src, dst, snapshot.Options{Budget: b})
		return err
	}
	if err := copyTo(); err != nil {
		t.Fatalf("first copy: %v", err)
	}
	if b.Used() != 600<<10 {
		t.Errorf("used %d after one copy, want %d", b.Used(), 600<<10)
	}
	err := copyTo()
	var spent *snapshot.BudgetSpent
	if !errors.As(err, &spent) || spent.Max != 1<<20 {
		t.Fatalf("second copy: %v, want *BudgetSpent", err)
	}
	if b.Used() != 600<<10 {
		t.Errorf("used %d after the refused copy, want %d (given back)", b.Used(), 600<<10)
	}
	os.Remove(filepath.Join(src, "a.txt"))
	write(t, filepath.Join(src, "small.txt"), "small", 0o644)
	if err := copyTo(); err != nil {
		t.Errorf("a copy that fits what is left: %v", err)
	}
}
