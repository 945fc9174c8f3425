package grant

import (
	"context"
	"errors"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// treeWatch reports changes under the directories a measure walks, through
// inotify: each directory gets a watch (by its descriptor, so a path of any
// length works) before it is listed. A watch that cannot be added (the
// user's watch limit, no /proc) marks it failed, and WatchWorkdir goes back
// to polling.
type treeWatch struct {
	fd       int
	wake     [2]int // a pipe written when the context ends
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
	t := &treeWatch{fd: fd, buf: make([]byte, 16<<10)}
	if err := unix.Pipe2(t.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(fd)
		return nil
	}
	t.stopWake = context.AfterFunc(ctx, func() { unix.Write(t.wake[1], []byte{1}) })
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
	fds := []unix.PollFd{{Fd: int32(t.fd), Events: unix.POLLIN}, {Fd: int32(t.wake[0]), Events: unix.POLLIN}}
	deadline := time.Now().Add(d)
	for {
		ms := max(int(time.Until(deadline)/time.Millisecond), 0)
		n, err := unix.Poll(fds, ms)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			t.failed = true
			return true
		case fds[1].Revents != 0:
			return false
		case n > 0:
			for {
				if k, err := unix.Read(t.fd, t.buf); k <= 0 || err != nil {
					break
				}
			}
		}
		return true
	}
}

func (t *treeWatch) close() {
	if t == nil {
		return
	}
	t.stopWake()
	unix.Close(t.fd)
	unix.Close(t.wake[0])
	unix.Close(t.wake[1])
}
