// Package atomicfile replaces a file whole: a reader sees the old file or
// the new one, never a part, and a crash leaves one of the two. Every
// record murmur rewrites in place (the running records, completion.json,
// murmur.lock, MURMUR.md, the store's remembered digests) is written here.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// Write writes data to path with perm: a temporary file in the same
// directory (a hidden name, ".<base>.tmp-*"), fsync, rename over path,
// fsync the directory. On failure the temporary file is removed and path is
// untouched.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if err := WriteSync(tmp, data, perm); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, path); err != nil {
		return err
	}
	ok = true
	return SyncDir(dir)
}

// WriteSync writes data to f, sets its mode to perm and fsyncs it.
func WriteSync(f *os.File, data []byte, perm os.FileMode) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	return f.Sync()
}

// SyncDir fsyncs a directory so a rename or create in it survives a crash.
// A directory that cannot be synced (os.ErrInvalid) is not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
