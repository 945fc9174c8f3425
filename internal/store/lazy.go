package store

import (
	"archive/zip"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
)

// lazySource is the .mur.zip file of an archive opened over a remembered
// digest: the digest vouches for its bytes while the file keeps ident.
type lazySource struct {
	path, ident string
	size        int64
}

// lazyEntry is a stored entry left in the file: its range, CRC-32 and, once
// read, its bytes.
type lazyEntry struct {
	off, n int64
	crc    uint32
	data   []byte
}

func lazyStored(f *zip.File, size int64) (*lazyEntry, error) {
	if f.CompressedSize64 != f.UncompressedSize64 {
		return nil, errors.New("stored entry with differing sizes")
	}
	off, err := f.DataOffset()
	if err != nil {
		return nil, err
	}
	n := int64(f.CompressedSize64)
	if off < 0 || n < 0 || off+n < off || off+n > size {
		return nil, errors.New("stored entry lies outside the file")
	}
	return &lazyEntry{off: off, n: n, crc: f.CRC32}, nil
}

// read reads n bytes at off from the file, refusing when the file's
// identity is not the one the digest was remembered for, before or after
// the read, and checking crc when given.
func (s *lazySource) read(off, n int64, crc *uint32) ([]byte, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if identity(f) != s.ident {
		return nil, errChanged
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("reading %d bytes at %d: %w", n, off, err)
	}
	if identity(f) != s.ident {
		return nil, errChanged
	}
	if crc != nil && crc32.ChecksumIEEE(b) != *crc {
		return nil, zip.ErrChecksum
	}
	return b, nil
}

var errChanged = errors.New("the file changed since its digest was verified")
