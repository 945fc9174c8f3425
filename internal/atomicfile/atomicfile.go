// Package atomicfile writes a file so that a reader sees either the old
// file or the whole new one, never a part. It is a leaf (the standard
// library only) so that every level of the map can use the one copy: the
// engine's compile cache (level 1) as well as the stores (level 2).
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// Write writes data to path through a temporary file in the same
// directory: written, chmod'ed to perm, fsynced, renamed over path, and
// the directory fsynced. On failure the temporary file is removed and
// path is untouched.
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
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
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

// SyncDir fsyncs a directory so a rename or create in it survives a crash.
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
