//go:build unix

package wasmhost

import (
	"io/fs"
	"syscall"
)

// fileOwner is the uid that owns the file st describes.
func fileOwner(st fs.FileInfo) (int, bool) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid), true
	}
	return 0, false
}
