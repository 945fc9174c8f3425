package snapshot

import (
	"errors"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Why OpenBeneath refused a path.
const (
	BeneathNotFound   = "not_found"
	BeneathSymlink    = "symlink_refused"
	BeneathNotRegular = "not_a_regular_file"
)

// BeneathError is a path OpenBeneath would not open: Kind is one of the
// Beneath* words, Err the operating system's.
type BeneathError struct {
	Kind string
	Err  error
}

func (e *BeneathError) Error() string { return e.Kind + ": " + e.Err.Error() }
func (e *BeneathError) Unwrap() error { return e.Err }

// OpenBeneath opens the regular file rel (slash-separated, relative, no
// empty, "." or ".." component: the caller checks) under the directory
// root the way the snapshot walks: an openat from each directory's own
// descriptor with O_NOFOLLOW at every component, so a symbolic link
// anywhere on the way, or a directory swapped for one after a check, is
// never followed. The last component is opened O_NONBLOCK (a FIFO does not
// block the opener) and must be a regular file. It returns the open file
// and its stat from that one descriptor.
func OpenBeneath(root, rel string) (*os.File, *unix.Stat_t, error) {
	dfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, classify(-1, root, err)
	}
	parts := strings.Split(rel, "/")
	for i, name := range parts {
		last := i == len(parts)-1
		flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if last {
			flags |= unix.O_NONBLOCK
		} else {
			flags |= unix.O_DIRECTORY
		}
		fd, err := unix.Openat(dfd, name, flags, 0)
		if err != nil {
			e := classify(dfd, name, err)
			unix.Close(dfd)
			return nil, nil, e
		}
		unix.Close(dfd)
		if !last {
			dfd = fd
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, nil, err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			unix.Close(fd)
			return nil, nil, &BeneathError{Kind: BeneathNotRegular, Err: errors.New("not a regular file")}
		}
		// Reads block as usual from here on.
		if err := unix.SetNonblock(fd, false); err != nil {
			unix.Close(fd)
			return nil, nil, err
		}
		return os.NewFile(uintptr(fd), rel), &st, nil
	}
	unix.Close(dfd)
	return nil, nil, &BeneathError{Kind: BeneathNotFound, Err: unix.ENOENT}
}

// classify words an openat failure of name under dfd (-1: name is the
// root path itself): a link is refused, a missing entry not found, and an
// entry that is there but not what the walk needs is not a regular file.
func classify(dfd int, name string, err error) error {
	var st unix.Stat_t
	var serr error
	if dfd < 0 {
		serr = unix.Lstat(name, &st)
	} else {
		serr = unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	switch {
	case serr == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK, errors.Is(err, unix.ELOOP):
		return &BeneathError{Kind: BeneathSymlink, Err: err}
	case errors.Is(err, unix.ENOENT):
		return &BeneathError{Kind: BeneathNotFound, Err: err}
	case errors.Is(err, unix.ENOTDIR):
		return &BeneathError{Kind: BeneathNotRegular, Err: err}
	}
	return err
}
