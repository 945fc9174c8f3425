package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/murmur-go/murmur/internal/atomicfile"
)

// WriteFileAtomic writes data to path so that a reader sees either the old file
// or the whole new one, never a part: a temporary file in the same directory,
// fsync, rename over path, fsync the directory. On failure the temporary file is
// removed and path is untouched.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return atomicfile.Write(path, data, perm)
}

func writeSync(f *os.File, data []byte, perm os.FileMode) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	return f.Sync()
}

// writeNewFile creates path (which must not exist) with data and fsyncs it.
func writeNewFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if err := writeSync(f, data, perm); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir fsyncs a directory so a rename or create in it survives a crash.
func syncDir(dir string) error { return atomicfile.SyncDir(dir) }

func randSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// mkdirsTracked creates dir and its missing parents (0755), returning the
// directories it created, deepest last, so a failed write can remove exactly
// those and leave the store as it was.
func mkdirsTracked(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	var created []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			removeDirs(created)
			return nil, err
		} else if err == nil {
			created = append(created, missing[i])
		}
	}
	return created, nil
}

// removeDirs removes the given directories deepest first, if still empty.
func removeDirs(dirs []string) {
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i])
	}
}

// exchange swaps two directories atomically (renameat2 RENAME_EXCHANGE), so a
// forced republish never leaves a moment where the version is missing. Where
// the filesystem cannot exchange, it falls back to two renames.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if err == nil || !(errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)) {
		return err
	}
	old := b + ".old-" + randSuffix()
	if err := os.Rename(b, old); err != nil {
		return err
	}
	if err := os.Rename(a, b); err != nil {
		_ = os.Rename(old, b)
		return err
	}
	return os.Rename(old, a)
}
