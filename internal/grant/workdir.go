package grant

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// WorkdirLimitError is why a run was stopped when its work folder passed
// capabilities.resources.workdir_max_bytes: EndingOf reads it (as the cause
// of a cancelled call) as a resource_limit ending.
type WorkdirLimitError struct {
	Dir string
	// Home is the session's HOME, measured with the work folder under the
	// same limit ("" when there is none).
	Home string
	Max  int64
	Used int64
	// Unreadable is the first entry the measure could not read ("" when
	// it read everything): what cannot be measured counts as past the limit.
	Unreadable string
	Err        error
}

func (e *WorkdirLimitError) Error() string {
	what := "the work folder " + e.Dir + " holds"
	if e.Home != "" {
		what = "the work folder " + e.Dir + " and the session's HOME " + e.Home + " hold"
	}
	if e.Unreadable != "" {
		return fmt.Sprintf("E-RUN-017: %s %s, which the runtime cannot measure (%v); what it cannot measure counts as past capabilities.resources.workdir_max_bytes (%d)",
			what, e.Unreadable, e.Err, e.Max)
	}
	return fmt.Sprintf("E-RUN-017: %s %d bytes, past capabilities.resources.workdir_max_bytes (%d)", what, e.Used, e.Max)
}

// UnreadableError is an entry a measure could not read.
type UnreadableError struct {
	Path string
	Err  error
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("%s cannot be measured: %v", e.Path, e.Err)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// MaxMeasureDepth is the deepest directory a measure descends to; a deeper
// one is an *UnreadableError (each level holds a descriptor open).
const MaxMeasureDepth = 1024

// WorkdirBytes is the size of folders as the limit counts them: the
// apparent size of every regular file under each dir (a hard link once,
// across all of them; symbolic links are not followed). It walks by
// descriptor (openat and fstatat from the directory's own descriptor, with
// O_NOFOLLOW), so a path of any length is measured and a directory swapped
// for a link is never followed. An entry that vanishes during the walk is
// skipped, and a dir that does not exist is empty; an entry that exists and
// cannot be read (a chmod 000 directory, a tree deeper than
// MaxMeasureDepth) is an *UnreadableError.
func WorkdirBytes(dirs ...string) (int64, error) {
	return workdirBytes(nil, dirs...)
}

// workdirBytes is WorkdirBytes calling watch with each directory's
// descriptor before it is listed (nil: none), so that a change made after
// the listing is reported to the watcher.
func workdirBytes(watch func(fd int), dirs ...string) (int64, error) {
	m := measure{seen: map[fileKey]bool{}, watch: watch}
	for _, dir := range dirs {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return m.total, &UnreadableError{Path: dir, Err: err}
		}
		err = m.dir(fd, dir, 0)
		unix.Close(fd)
		if err != nil {
			return m.total, err
		}
	}
	return m.total, nil
}

type fileKey struct{ dev, ino uint64 }

type measure struct {
	seen  map[fileKey]bool
	total int64
	watch func(fd int)
}

func (m *measure) dir(fd int, path string, depth int) error {
	if depth > MaxMeasureDepth {
		return &UnreadableError{Path: path, Err: fmt.Errorf("deeper than %d directories", MaxMeasureDepth)}
	}
	if m.watch != nil {
		m.watch(fd)
	}
	names, err := dirNames(fd)
	if err != nil {
		return &UnreadableError{Path: path, Err: err}
	}
	for _, name := range names {
		p := path + "/" + name
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return &UnreadableError{Path: p, Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			if st.Nlink > 1 {
				k := fileKey{uint64(st.Dev), uint64(st.Ino)}
				if m.seen[k] {
					continue
				}
				m.seen[k] = true
			}
			m.total += st.Size
		case unix.S_IFDIR:
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			switch {
			case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
				continue // gone, or swapped for something else since the stat: the next measure sees it
			case err != nil:
				return &UnreadableError{Path: p, Err: err}
			}
			err = m.dir(sub, p, depth+1)
			unix.Close(sub)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// dirNames lists a directory by its descriptor, without closing it.
func dirNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(dup)
	f := os.NewFile(uintptr(dup), "dir")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// WorkdirPollInterval is the shortest time between two measures of a work
// folder; a walk that takes long spaces them out to ten times its length,
// so watching a large folder costs at most a tenth of a core.
const WorkdirPollInterval = 20 * time.Millisecond

// WorkdirRecheckInterval is how often a watched folder is measured when no
// change was reported: a safety net for what the kernel's notifications do
// not report (an overflowed event queue, a directory made between its
// parent's listing and its own watch).
const WorkdirRecheckInterval = 5 * time.Second

// WatchWorkdir measures dir until ctx ends, and calls stop once with a
// *WorkdirLimitError when it holds more than max bytes. A folder already
// past max is stopped at the first measure.
//
// Where the kernel reports changes (inotify), a folder is measured when
// something in it changed — at most every WorkdirPollInterval — and every
// WorkdirRecheckInterval besides, so an idle session costs next to nothing;
// a change is seen as soon as it is made. Elsewhere, or when a watch cannot
// be added (the watch limit), it is measured every WorkdirPollInterval.
// Between two measures a guest can write more: the overshoot is bounded by
// what it writes in one interval, not by the limit.
func WatchWorkdir(ctx context.Context, dir string, max int64, stop func(*WorkdirLimitError)) {
	WatchWorkdirAndHome(ctx, dir, "", max, stop)
}

// WatchWorkdirAndHome is WatchWorkdir over the work folder and the
// session's HOME together (home "" is none): a command's HOME is as
// writable as its work folder, so the two share the one limit. An entry
// that exists and cannot be measured stops the run as if past the limit.
func WatchWorkdirAndHome(ctx context.Context, dir, home string, max int64, stop func(*WorkdirLimitError)) {
	dirs := []string{dir}
	if home != "" {
		dirs = append(dirs, home)
	}
	watchTree(ctx, dirs, max, func(used int64, ue *UnreadableError) {
		e := &WorkdirLimitError{Dir: dir, Home: home, Max: max, Used: used}
		if ue != nil {
			e.Unreadable, e.Err = ue.Path, ue.Err
		}
		stop(e)
	})
}

// watchTree measures dirs together until ctx ends, and calls stop once when
// they hold more than max bytes (ue nil) or hold an entry that cannot be
// measured (ue set): the loop behind WatchWorkdir and WatchState.
func watchTree(ctx context.Context, dirs []string, max int64, stop func(used int64, ue *UnreadableError)) {
	if max <= 0 {
		return
	}
	var tw *treeWatch
	if !pollOnly {
		tw = newTreeWatch(ctx)
		defer tw.close()
	}
	for {
		start := time.Now()
		var watch func(int)
		if tw.ok() {
			watch = tw.add
		}
		used, err := workdirBytes(watch, dirs...)
		var ue *UnreadableError
		switch {
		case errors.As(err, &ue):
			stop(used, ue)
			return
		case err == nil && used > max:
			stop(used, nil)
			return
		}
		wait := WorkdirPollInterval
		if took := time.Since(start); 10*took > wait {
			wait = 10 * took
		}
		if tw.ok() && !tw.wait(WorkdirRecheckInterval) {
			return // ctx ended
		}
		// At most one measure per wait, however many changes are reported.
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(start.Add(wait))):
		}
	}
}

// pollOnly makes WatchWorkdir measure every WorkdirPollInterval without
// watching (tests and benchmarks compare the two).
var pollOnly = false
