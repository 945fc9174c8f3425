package wasmhost

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// fileIdentity is what the MAC of a cache entry covers besides its name: the
// kernel's identity of the open file. Any write, truncation, replacement or
// chmod changes it: ctime is set by the kernel on every change and cannot be
// set back by a user, and since Linux 6.13 (ext4, xfs, btrfs, tmpfs) a
// change following a stat gets a fine-grained ctime, so it differs even
// within one tick of the coarse clock.
func fileIdentity(f *os.File) ([]byte, int64, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, 0, errors.New("no file identity on this system")
	}
	id := fmt.Sprintf("dev=%d;ino=%d;size=%d;mtime=%d.%09d;ctime=%d.%09d;uid=%d;mode=%o",
		s.Dev, s.Ino, s.Size, s.Mtim.Sec, s.Mtim.Nsec, s.Ctim.Sec, s.Ctim.Nsec, s.Uid, uint32(st.Mode()))
	return []byte(id), s.Size, nil
}
