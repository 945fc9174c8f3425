package session

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/murmur-go/murmur/internal/ids"
)

// RemoveOrphan removes ~/.murmur/sessions/<id> (sessionsDir/<id>) when no
// process holds the session's begun lock: the session died (SIGKILL, a
// crash during start-up) before Close could remove it. It reports whether
// it removed the dir; a dir whose lock is held, an id that is not a
// session id, and a dir that is already gone are left alone (false, nil).
//
// The removal happens while RemoveOrphan itself holds the lock, and
// markBegun re-checks after locking that its lock file is still the one at
// the path, so a session starting at the same moment never loses its dir:
// it either holds the lock first (and is skipped) or starts again after the
// removal. A dir without a lock file (a session killed between its mkdir
// and its lock) gets one for the same reason.
func RemoveOrphan(sessionsDir, id string) (bool, error) {
	if !ids.Valid(ids.Session, id) {
		return false, nil
	}
	dir := filepath.Join(sessionsDir, id)
	f, err := os.OpenFile(filepath.Join(dir, beganFile), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return false, nil
		}
		return false, err
	}
	if !samePath(f, filepath.Join(dir, beganFile)) {
		return false, nil // removed (and perhaps begun again) meanwhile
	}
	if err := os.RemoveAll(dir); err != nil {
		return false, err
	}
	return true, nil
}

// samePath reports whether f is still the file at path.
func samePath(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Lstat(path)
	return err == nil && os.SameFile(fi, pi)
}
