package command

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Pinned is an executable the runtime opened once (its own helpers:
// mur-contain, mur-driver, mur for a delegated child). Running Path runs
// the file that was opened, whatever its name holds later: a binary
// replaced on disk after the runtime started (renamed over, or removed and
// written anew) is never run. Path refuses a file changed in place since it
// was opened (its ctime moved), so a write into the same inode is not run
// either.
//
// A Pinned must stay reachable for as long as it is used: its descriptor
// closes with it.
type Pinned struct {
	name string
	f    *os.File
	st   unix.Stat_t
}

// pinnedMinFD is the lowest descriptor number a Pinned takes.
const pinnedMinFD = 100

// Pin opens the executable at path for running by descriptor. A script
// cannot be run so (its interpreter reopens it by the /proc/self/fd path,
// which the close-on-exec descriptor no longer names): pin binaries.
func Pin(path string) (*Pinned, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	// Above every number a started process is handed (ExtraFiles are
	// dup2'ed onto 3, 4, …): a pinned descriptor there would be replaced in
	// the child before the execve that names it.
	high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, pinnedMinFD)
	unix.Close(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(high), path)
	p := &Pinned{name: path, f: f}
	if err := unix.Fstat(int(f.Fd()), &p.st); err != nil {
		f.Close()
		return nil, err
	}
	if p.st.Mode&unix.S_IFMT != unix.S_IFREG || p.st.Mode&0o111 == 0 {
		f.Close()
		return nil, fmt.Errorf("%s is not an executable file", path)
	}
	return p, nil
}

// Name is the path the file was opened at.
func (p *Pinned) Name() string { return p.name }

// Path is what to execute: /proc/self/fd/N of the pinned descriptor (an
// execve of it is an fexecve; the descriptor is close-on-exec and the
// kernel opens the file before it closes the descriptor). It fails when
// the file was changed in place since it was pinned.
func (p *Pinned) Path() (string, error) {
	var st unix.Stat_t
	fd := int(p.f.Fd())
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("%s: %w", p.name, err)
	}
	// Not the ctime: unlinking the name (a rename over it) moves that too,
	// and a file replaced so is still the one to run.
	if st.Mtim != p.st.Mtim || st.Size != p.st.Size {
		return "", fmt.Errorf("%s was changed in place after the runtime started, so it is not run", p.name)
	}
	return "/proc/self/fd/" + strconv.Itoa(fd), nil
}
