// Package snapshot is the workdir snapshot (docs/delegation.md): a one-time copy of a parent capsule's work folder into a
// delegated child's directory, made before the child process exists.
//
// The copy walks the source with descriptors (openat with O_NOFOLLOW and
// O_DIRECTORY at every step), so an entry replaced by a symbolic link while
// the copy runs is never followed out of the folder: a directory is opened
// only as a directory, a file only as a regular file, a link is read and
// recreated, never resolved. What the copy keeps and what it skips is the
// spec's table, row by row:
//
//   - a regular file: its content, its rwx bits, its modification time;
//     setuid, setgid and sticky are dropped;
//   - a directory: recreated with its rwx bits and, once its contents are
//     in, its modification time;
//   - a symbolic link: recreated, never followed; an absolute target inside
//     the source is re-pointed at the same place in the copy, any other is
//     kept as it is;
//   - FIFOs, sockets and device nodes: skipped as fifo, socket, device;
//   - what cannot be opened: skipped as unreadable;
//   - peer-in and out at the top level, and the directories the caller names
//     (the parent's runtime and records directories, the child's own):
//     skipped as runtime-owned.
//
// Hard links among the source's files stay hard links in the copy, and their
// bytes count once. A sparse file stays sparse: only its data extents are
// read and written (SEEK_DATA/SEEK_HOLE), so a hole costs the copy no disk. The copied bytes count against a ceiling (the child's
// capabilities.resources.workdir_max_bytes); passing it stops the copy with
// a *TooLarge.
package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/murmur-go/murmur/internal/trace"
)

// Skip reasons, in the spec's words.
const (
	ReasonFIFO         = "fifo"
	ReasonSocket       = "socket"
	ReasonDevice       = "device"
	ReasonUnreadable   = "unreadable"
	ReasonRuntimeOwned = "runtime-owned"
)

// topLevelRuntime are the entries at the top of a work folder the runtime
// writes, which a snapshot never copies.
var topLevelRuntime = map[string]bool{"peer-in": true, "out": true}

// Options bound one copy.
type Options struct {
	// MaxBytes is the ceiling on the copied bytes: the child's
	// capabilities.resources.workdir_max_bytes. Zero or less means none.
	MaxBytes int64
	// RuntimeOwned are directories skipped as runtime-owned wherever they
	// lie inside the source (the parent session's runtime and records
	// directories). The destination is always one of them.
	RuntimeOwned []string
	// Budget, when set, is the file data this copy may write, shared with
	// the session's other copies; spending it stops the copy with a
	// *BudgetSpent, and a copy that fails gives back what it took.
	Budget *Budget
}

// TooLarge is a source holding more bytes than the ceiling allows.
type TooLarge struct {
	Source   string
	MaxBytes int64
}

func (e *TooLarge) Error() string {
	return fmt.Sprintf("the work folder %s holds more than %d bytes, past the child's capabilities.resources.workdir_max_bytes (%d)",
		e.Source, e.MaxBytes, e.MaxBytes)
}

// Copy copies the folder src into dst, an existing empty directory, and
// returns the summary delegation_start.workdir_snapshot records (files,
// directories below the top, symlinks, bytes of regular files,
// skipped entries by path relative to src). dst's own mode and times are
// left as the caller made them. A cancelled ctx stops the copy between
// entries with ctx's error. On any error the partial copy is left for the
// caller to Remove.
func Copy(ctx context.Context, src, dst string, opts Options) (*trace.Snapshot, error) {
	src = filepath.Clean(src)
	if !filepath.IsAbs(src) {
		return nil, fmt.Errorf("snapshot: the source %s is not an absolute path", src)
	}
	c := &copier{
		ctx: ctx, src: src, dst: filepath.Clean(dst), max: opts.MaxBytes,
		owned: map[fileID]bool{}, links: map[fileID]string{},
		sum:    &trace.Snapshot{Source: src, Skipped: []trace.SnapshotSkip{}},
		budget: opts.Budget,
	}
	// Link targets are re-pointed whether they name the folder by the path
	// it was given or by its real one.
	c.prefixes = []string{src}
	if real, err := filepath.EvalSymlinks(src); err == nil && real != src {
		c.prefixes = append(c.prefixes, real)
	}
	for _, p := range append([]string{dst}, opts.RuntimeOwned...) {
		var st unix.Stat_t
		if p != "" && unix.Stat(p, &st) == nil {
			c.owned[idOf(&st)] = true
		}
	}
	sfd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("snapshot: the work folder %s cannot be opened: %w", src, err)
	}
	defer unix.Close(sfd)
	dfd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("snapshot: the child's directory %s cannot be opened: %w", dst, err)
	}
	defer unix.Close(dfd)
	c.rootFD = dfd
	if err := c.dir(sfd, dfd, ""); err != nil {
		c.budget.give(c.data) // the caller removes the partial copy
		return nil, err
	}
	return c.sum, nil
}

type fileID struct{ dev, ino uint64 }

func idOf(st *unix.Stat_t) fileID { return fileID{uint64(st.Dev), uint64(st.Ino)} }

type copier struct {
	ctx      context.Context
	src, dst string
	prefixes []string
	max      int64
	owned    map[fileID]bool
	links    map[fileID]string // a multiply linked source file → its path in the copy
	sum      *trace.Snapshot
	rootFD   int // the copy's top, for hard links made by path relative to it
	budget   *Budget
	data     int64 // file data written (holes and hard links cost none)
}

func (c *copier) skip(rel, reason string) {
	c.sum.Skipped = append(c.sum.Skipped, trace.SnapshotSkip{Path: rel, Reason: reason})
}

// dir copies the entries of the open source directory sfd into dfd; rel is
// its path below the source ("" for the top).
func (c *copier) dir(sfd, dfd int, rel string) error {
	names, err := readNames(sfd)
	if err != nil {
		return fmt.Errorf("snapshot: %s cannot be listed: %w", c.display(rel), err)
	}
	for _, name := range names {
		r := name
		if rel != "" {
			r = rel + "/" + name
		}
		if err := c.ctx.Err(); err != nil {
			return err
		}
		if rel == "" && topLevelRuntime[name] {
			c.skip(r, ReasonRuntimeOwned)
			continue
		}
		if err := c.entry(sfd, dfd, name, r); err != nil {
			return err
		}
	}
	return nil
}

// entry copies one entry. An entry that changes type between its lstat and
// its open (the work folder is live) is looked at again, a few times; one
// that disappears is simply not in the copy.
func (c *copier) entry(sfd, dfd int, name, rel string) error {
	for attempt := 0; attempt < 3; attempt++ {
		var st unix.Stat_t
		if err := unix.Fstatat(sfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			c.skip(rel, ReasonUnreadable)
			return nil
		}
		if afterLstat != nil {
			afterLstat(rel)
		}
		var err error
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			err = c.file(sfd, dfd, name, rel, &st)
		case unix.S_IFDIR:
			if c.owned[idOf(&st)] {
				c.skip(rel, ReasonRuntimeOwned)
				return nil
			}
			err = c.subdir(sfd, dfd, name, rel)
		case unix.S_IFLNK:
			err = c.symlink(sfd, dfd, name, rel, &st)
		case unix.S_IFIFO:
			c.skip(rel, ReasonFIFO)
		case unix.S_IFSOCK:
			c.skip(rel, ReasonSocket)
		case unix.S_IFCHR, unix.S_IFBLK:
			c.skip(rel, ReasonDevice)
		default:
			c.skip(rel, ReasonUnreadable)
		}
		if errors.Is(err, errChanged) {
			continue
		}
		return err
	}
	c.skip(rel, ReasonUnreadable)
	return nil
}

// afterLstat is a test's hook into the window between an entry's lstat and
// its open, where a live folder can swap it.
var afterLstat func(rel string)

// errChanged is an entry whose type changed under the copy.
var errChanged = errors.New("the entry changed while it was copied")

// changedOrUnreadable sorts an open's failure: a swap (a link or another
// kind where a file or directory was) is looked at again; ENOENT is gone;
// anything else is unreadable.
func (c *copier) changedOrUnreadable(err error, rel string) error {
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ENXIO):
		return errChanged
	case errors.Is(err, unix.ENOENT):
		return nil
	}
	c.skip(rel, ReasonUnreadable)
	return nil
}

func (c *copier) file(sfd, dfd int, name, rel string, st *unix.Stat_t) error {
	id := idOf(st)
	if st.Nlink > 1 {
		if first, ok := c.links[id]; ok {
			if err := unix.Linkat(c.rootFD, first, dfd, name, 0); err == nil {
				c.sum.Files++
				return nil
			}
			// A link the copy cannot make is copied as a file of its own.
		}
	}
	// O_NONBLOCK: a FIFO swapped in after the lstat must not hang the open.
	fd, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return c.changedOrUnreadable(err, rel)
	}
	in := os.NewFile(uintptr(fd), name)
	defer in.Close()
	var fst unix.Stat_t
	if err := unix.Fstat(fd, &fst); err != nil {
		c.skip(rel, ReasonUnreadable)
		return nil
	}
	if fst.Mode&unix.S_IFMT != unix.S_IFREG {
		return errChanged
	}
	if c.max > 0 && c.sum.Bytes+fst.Size > c.max {
		return &TooLarge{Source: c.src, MaxBytes: c.max}
	}
	ofd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("snapshot: %s cannot be created in the copy: %w", rel, err)
	}
	out := os.NewFile(uintptr(ofd), name)
	defer out.Close()
	limit := int64(-1)
	if c.max > 0 {
		// A file growing under the copy is bounded too: one byte past the
		// ceiling is enough to know.
		limit = c.max - c.sum.Bytes + 1
	}
	n, data, err := c.copySparse(in, out, fd, ofd, limit)
	c.data += data
	if err != nil {
		var spent *BudgetSpent
		if errors.As(err, &spent) {
			return err
		}
		if isReadErr(err) {
			unix.Unlinkat(dfd, name, 0)
			c.skip(rel, ReasonUnreadable)
			return nil
		}
		return fmt.Errorf("snapshot: %s cannot be copied: %w", rel, err)
	}
	c.sum.Bytes += n
	if c.max > 0 && c.sum.Bytes > c.max {
		return &TooLarge{Source: c.src, MaxBytes: c.max}
	}
	if err := unix.Fchmod(ofd, uint32(fst.Mode&0o777)); err != nil {
		return fmt.Errorf("snapshot: %s: %w", rel, err)
	}
	if err := unix.UtimesNanoAt(dfd, name, times(&fst), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("snapshot: %s: %w", rel, err)
	}
	if fst.Nlink > 1 {
		c.links[idOf(&fst)] = rel
	}
	c.sum.Files++
	return nil
}

// isReadErr tells a source that fails mid-read (EIO, a file truncated
// under us) from a destination that fails (ENOSPC, EDQUOT): the first is an
// unreadable entry, the second fails the copy.
func isReadErr(err error) bool {
	return !errors.Is(err, unix.ENOSPC) && !errors.Is(err, unix.EDQUOT) && !errors.Is(err, unix.EROFS) &&
		!errors.Is(err, unix.EFBIG)
}

func (c *copier) subdir(sfd, dfd int, name, rel string) error {
	fd, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return c.changedOrUnreadable(err, rel)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		c.skip(rel, ReasonUnreadable)
		return nil
	}
	if c.owned[idOf(&st)] {
		c.skip(rel, ReasonRuntimeOwned)
		return nil
	}
	if err := unix.Mkdirat(dfd, name, 0o700); err != nil {
		return fmt.Errorf("snapshot: %s cannot be created in the copy: %w", rel, err)
	}
	nfd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("snapshot: %s cannot be opened in the copy: %w", rel, err)
	}
	defer unix.Close(nfd)
	c.sum.Directories++
	if err := c.dir(fd, nfd, rel); err != nil {
		return err
	}
	// Mode and time once the contents are in: a read-only directory is
	// still filled, and filling it does not move its mtime afterwards.
	if err := unix.Fchmod(nfd, uint32(st.Mode&0o777)); err != nil {
		return fmt.Errorf("snapshot: %s: %w", rel, err)
	}
	if err := unix.UtimesNanoAt(dfd, name, times(&st), unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("snapshot: %s: %w", rel, err)
	}
	return nil
}

func (c *copier) symlink(sfd, dfd int, name, rel string, st *unix.Stat_t) error {
	buf := make([]byte, st.Size+1)
	if len(buf) < 256 {
		buf = make([]byte, 256)
	}
	var target string
	for {
		n, err := unix.Readlinkat(sfd, name, buf)
		if err != nil {
			if errors.Is(err, unix.EINVAL) {
				return errChanged // no longer a link
			}
			return c.changedOrUnreadable(err, rel)
		}
		if n < len(buf) {
			target = string(buf[:n])
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	if err := unix.Symlinkat(c.repoint(target), dfd, name); err != nil {
		return fmt.Errorf("snapshot: the link %s cannot be made in the copy: %w", rel, err)
	}
	// The link's own time, never its target's.
	_ = unix.UtimesNanoAt(dfd, name, times(st), unix.AT_SYMLINK_NOFOLLOW)
	c.sum.Symlinks++
	return nil
}

// repoint maps an absolute target inside the source to the same place in
// the copy; every other target is kept as it is.
func (c *copier) repoint(target string) string {
	if !filepath.IsAbs(target) {
		return target
	}
	clean := filepath.Clean(target)
	for _, p := range c.prefixes {
		if clean == p {
			return c.dst
		}
		if strings.HasPrefix(clean, p+"/") {
			return c.dst + clean[len(p):]
		}
	}
	return target
}

func (c *copier) display(rel string) string {
	if rel == "" {
		return c.src
	}
	return filepath.Join(c.src, rel)
}

func times(st *unix.Stat_t) []unix.Timespec {
	return []unix.Timespec{st.Atim, st.Mtim}
}

// readNames lists a directory by its descriptor, sorted, without closing it.
func readNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(dup)
	f := os.NewFile(uintptr(dup), "dir")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// Remove deletes a copy (or a partial one). When a plain removal fails, it
// makes each directory writable and tries again: a read-only directory copied
// from the source (a Go module cache) must not keep its records on disk.
func Remove(dir string) error {
	if os.RemoveAll(dir) == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = unix.Fchmodat(unix.AT_FDCWD, p, 0o700, 0)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
