package wasmhost

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// fileIdentity is what the MAC of a cache entry covers besides its name: the
// kernel's identity of the open file. Any write, truncation, replacement or
// chmod changes it: ctime is set by the kernel on every change and cannot be
// set back by a user, and since Linux 6.13 (ext4, xfs, btrfs, tmpfs) a
// change following a stat gets a fine-grained ctime, so it differs even
// within one tick of the coarse clock.
func fileIdentity(f *os.File) ([]byte, int64, error) {
	id, size, _, err := fileIdentityCtime(f)
	return id, size, err
}

func fileIdentityCtime(f *os.File) ([]byte, int64, int64, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, 0, 0, err
	}
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, 0, 0, errors.New("no file identity on this system")
	}
	id := fmt.Sprintf("dev=%d;ino=%d;size=%d;mtime=%d.%09d;ctime=%d.%09d;uid=%d;mode=%o",
		s.Dev, s.Ino, s.Size, s.Mtim.Sec, s.Mtim.Nsec, s.Ctim.Sec, s.Ctim.Nsec, s.Uid, uint32(st.Mode()))
	return []byte(id), s.Size, s.Ctim.Sec*1e9 + s.Ctim.Nsec, nil
}

// settledIdentity is the identity of a file this engine just wrote, taken
// once the clock file timestamps come from has moved past the file's ctime:
// any later change then gets a later ctime even where timestamps are coarse
// (before Linux 6.13, or filesystems without multigrain timestamps), so it
// cannot go unseen within the tick of the write. The wait is at most one
// tick (a few ms), paid once per compile.
func settledIdentity(f *os.File) ([]byte, error) {
	_, _, ctime, err := fileIdentityCtime(f)
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(time.Second); int64(C.wh_coarse_realtime()) <= ctime; {
		if time.Now().After(deadline) {
			return nil, errors.New("the file's ctime is in the future")
		}
		time.Sleep(time.Millisecond)
	}
	id, _, ctime2, err := fileIdentityCtime(f)
	if err != nil {
		return nil, err
	}
	if ctime2 != ctime {
		return nil, errors.New("the entry changed while it was written")
	}
	return id, nil
}
