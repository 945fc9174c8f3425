package grant

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// treeWatch reports changes under the directories a measure walks, through
// inotify: each directory gets a watch (by its descriptor, so a path of any
// length works) before it is listed. A watch that cannot be added (the
// user's watch limit, no /proc) marks it failed, and WatchWorkdir goes back
// to polling. It holds one descriptor, waited on through Go's poller: no
// thread sleeps in it, and nothing wakes while nothing changes.
type treeWatch struct {
	f        *os.File
	fd       int
	ended    atomic.Bool
	stopWake func() bool
	failed   bool
	buf      []byte
}

// watchMask is every change that can alter what a measure counts: sizes
// (writes, truncation, fallocate), entries (created, removed, renamed,
// linked), and modes (a chmod 000 directory is unreadable: past the limit).
const watchMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_DELETE |
	unix.IN_DELETE_SELF | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_MOVE_SELF

func newTreeWatch(ctx context.Context) *treeWatch {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	// A non-blocking descriptor is registered with the runtime's poller, so
	// reads park the goroutine and deadlines interrupt them.
	t := &treeWatch{f: os.NewFile(uintptr(fd), "inotify"), fd: fd, buf: make([]byte, 16<<10)}
	t.stopWake = context.AfterFunc(ctx, func() {
		t.ended.Store(true)
		t.f.SetReadDeadline(time.Now())
	})
	return t
}

func (t *treeWatch) ok() bool { return t != nil && !t.failed }

// add watches the directory open as dirfd.
func (t *treeWatch) add(dirfd int) {
	if t.failed {
		return
	}
	if _, err := unix.InotifyAddWatch(t.fd, "/proc/self/fd/"+strconv.Itoa(dirfd), watchMask); err != nil {
		t.failed = true
	}
}

// wait blocks until a change is reported or d passes (true), or the
// context ends (false). Reported changes are drained: one measure answers
// them all.
func (t *treeWatch) wait(d time.Duration) bool {
	if t.ended.Load() {
		return false
	}
	if err := t.f.SetReadDeadline(time.Now().Add(d)); err != nil {
		t.failed = true // not pollable here: poll instead
		return true
	}
	_, err := t.f.Read(t.buf)
	if t.ended.Load() {
		return false
	}
	switch {
	case err == nil:
		// Drain what else is queued without blocking.
		t.f.SetReadDeadline(time.Now())
		for {
			if _, err := t.f.Read(t.buf); err != nil {
				break
			}
		}
	case errors.Is(err, os.ErrDeadlineExceeded):
	default:
		t.failed = true
	}
	return true
}

func (t *treeWatch) close() {
	if t == nil {
		return
	}
	t.stopWake()
	t.f.Close()
}
