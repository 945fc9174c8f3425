package session

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/murmur-go/murmur/internal/ids"
)

// beganFile is the file in ~/.murmur/sessions/<id> whose exclusive lock a
// session holds from before its first dir exists until it ends. A lock,
// not the file's presence, is the mark: the kernel drops it when the
// process dies, so a session killed with SIGKILL leaves no false mark.
const beganFile = "begun.lock"

// markBegun creates sessionDir and takes the session's lock in it. The
// returned file holds the lock; closing it releases the mark. A lock taken
// on a file that RemoveOrphan removed meanwhile is no mark, so it starts
// again.
func markBegun(sessionDir string) (*os.File, error) {
	for try := 0; ; try++ {
		if try == 100 {
			return nil, errors.New("its dir keeps being removed")
		}
		if err := os.MkdirAll(sessionDir, 0o700); err != nil {
			return nil, err
		}
		path := filepath.Join(sessionDir, beganFile)
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // the dir was removed between the two calls
			}
			return nil, err
		}
		// Blocking: a Begun probe may hold a shared lock for an instant,
		// RemoveOrphan an exclusive one for its removal.
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			f.Close()
			return nil, err
		}
		if samePath(f, path) {
			return f, nil
		}
		f.Close()
	}
}

// Begun reports whether session id has begun and not yet ended: its process
// holds the lock New takes before creating any of its dirs. sessionsDir is
// ~/.murmur/sessions. A session whose records dir exists and that is not
// Begun has ended (or died); one that is Begun must be left alone.
func Begun(sessionsDir, id string) bool {
	if !ids.Valid(ids.Session, id) {
		return false
	}
	f, err := os.Open(filepath.Join(sessionsDir, id, beganFile))
	if err != nil {
		// No mark: it ended (Close removed it), or never began here. A
		// mark that cannot be read is treated as held: keeping records is
		// the safe side.
		return !errors.Is(err, os.ErrNotExist)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return true // EWOULDBLOCK: the session holds it
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}
