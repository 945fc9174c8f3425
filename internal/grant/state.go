package grant

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"golang.org/x/sys/unix"
)

// StateMount is where a component sees its state store: the store's folder,
// read-write, as "state" and "/state" (it hides a "state" entry at the top
// of the component's own view).
const StateMount = "state"

// StatePreopens are the preopens of the store at dir: "/state" and
// "state". A component that sees a store gets them after its own.
func StatePreopens(dir string) []wasmhost.Preopen {
	return []wasmhost.Preopen{
		{HostDir: dir, GuestPath: "/" + StateMount},
		{HostDir: dir, GuestPath: StateMount},
	}
}

// PrepareStateStores makes (or checks) the folder of the state stores and
// each named store in it, 0700, owned by this user, neither a symbolic link;
// an existing one is put back to 0700. It runs at staging, before any
// session exists: a store that cannot be used is E-CAP-009.
func PrepareStateStores(homeDir string, stores []string) error {
	if len(stores) == 0 {
		return nil
	}
	root := home.State(homeDir)
	if err := os.MkdirAll(home.Murmur(homeDir), 0o700); err != nil {
		return stateErr(stores[0], home.StateStore(homeDir, stores[0]), err.Error())
	}
	if why := assertPrivateDir(root); why != "" {
		return stateErr(stores[0], home.StateStore(homeDir, stores[0]), why)
	}
	for _, s := range stores {
		p := home.StateStore(homeDir, s)
		if why := assertPrivateDir(p); why != "" {
			return stateErr(s, p, why)
		}
	}
	return nil
}

func stateErr(store, path, why string) error {
	return diag.New("E-CAP-009", "the state store %s at %s cannot be used: %s", store, path, why).
		WithHint("make it a directory of your own (or remove it: 'mur state rm %s' clears a store)", store)
}

// assertPrivateDir makes dir 0700 when it is missing, else checks it is a
// directory of this user's and not a symbolic link, and sets it 0700. It
// returns why it cannot be used ("" when it can).
func assertPrivateDir(dir string) string {
	err := unix.Mkdir(dir, 0o700)
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Sprintf("mkdir %s: %v", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Sprintf("%s: %v", dir, err)
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return dir + " is a symbolic link"
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return dir + " is not a directory"
	case int(st.Uid) != os.Geteuid():
		return fmt.Sprintf("%s is owned by uid %d, not by this user (uid %d)", dir, st.Uid, os.Geteuid())
	}
	if st.Mode&0o7777 != 0o700 {
		// By descriptor, so a swap for a link between the check and the
		// chmod changes nothing it points at.
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Sprintf("%s: %v", dir, err)
		}
		defer unix.Close(fd)
		if err := unix.Fchmod(fd, 0o700); err != nil {
			return fmt.Sprintf("chmod %s: %v", dir, err)
		}
	}
	return ""
}

// StateBusyError is a call that did not get its store's lock by its
// deadline: it ends deadline_exceeded without running.
type StateBusyError struct {
	Store    string
	Deadline time.Duration
}

func (e *StateBusyError) Error() string {
	return fmt.Sprintf("the state store %s was held by another call for the whole of this call's deadline (%s); the call did not run", e.Store, e.Deadline)
}

// StateLimitError is why a call was stopped when a store it sees passed
// capabilities.resources.state_max_bytes: a resource_limit ending.
type StateLimitError struct {
	Store string
	Dir   string
	Max   int64
	Used  int64
	// Unreadable is the first entry the measure could not read ("" when it
	// read everything): what cannot be measured counts as past the limit.
	Unreadable string
	Err        error
}

func (e *StateLimitError) Error() string {
	if e.Unreadable != "" {
		return fmt.Sprintf("E-RUN-058: the state store %s holds %s, which the runtime cannot measure (%v); what it cannot measure counts as past capabilities.resources.state_max_bytes (%d)",
			e.Store, e.Unreadable, e.Err, e.Max)
	}
	return fmt.Sprintf("E-RUN-058: the state store %s holds %d bytes, past capabilities.resources.state_max_bytes (%d)", e.Store, e.Used, e.Max)
}

// StateBytes measures store's folder dir against max now: a
// *StateLimitError when it is past it (or cannot be measured), else nil.
func StateBytes(store, dir string, max int64) *StateLimitError {
	used, err := WorkdirBytes(dir)
	var ue *UnreadableError
	switch {
	case errors.As(err, &ue):
		return &StateLimitError{Store: store, Dir: dir, Max: max, Used: used, Unreadable: ue.Path, Err: ue.Err}
	case err == nil && used > max:
		return &StateLimitError{Store: store, Dir: dir, Max: max, Used: used}
	}
	return nil
}

// WatchState measures store's folder dir, as a work folder is measured,
// until ctx ends, and calls stop once with a *StateLimitError when it holds
// more than max bytes.
func WatchState(ctx context.Context, store, dir string, max int64, stop func(*StateLimitError)) {
	watchTree(ctx, []string{dir}, max, func(used int64, ue *UnreadableError) {
		e := &StateLimitError{Store: store, Dir: dir, Max: max, Used: used}
		if ue != nil {
			e.Unreadable, e.Err = ue.Path, ue.Err
		}
		stop(e)
	})
}

// A store's lock: an exclusive flock on its lock file, held for the whole of
// each component call that sees the store, so calls on one store never
// overlap, whichever session or formation member makes them. Within one
// process the callers of one store first queue on a channel (cancellable,
// unlike flock), and the one that holds it keeps the lock file open between
// calls: an uncontended call costs two flock calls and a stat.
type stateLock struct {
	turn chan struct{} // holds a token while a caller of this process has the store
	path string
	f    *os.File // the lock file, opened by the first caller (nil until then)
	ino  uint64
	dev  uint64
}

var (
	stateLocksMu sync.Mutex
	stateLocks   = map[string]*stateLock{}
)

func lockOf(path string) *stateLock {
	stateLocksMu.Lock()
	defer stateLocksMu.Unlock()
	l := stateLocks[path]
	if l == nil {
		l = &stateLock{turn: make(chan struct{}, 1), path: path}
		stateLocks[path] = l
	}
	return l
}

type heldKey struct{ store string }

// stateFlockPoll bounds the sleep between two tries of a contended lock
// file: the first is short, each later one twice the last.
const (
	stateFlockFirst = 50 * time.Microsecond
	stateFlockMax   = 5 * time.Millisecond
)

// HoldState takes the lock of store (its lock file at lockPath) for one
// component call, waiting at most wait. A call whose ctx already holds the
// store (a call nested in one of the same session that holds it) runs under
// that hold: release does nothing. It returns the ctx to run the call with
// (marked as holding the store), the release, and how long it waited. A
// store not got within wait is a *StateBusyError.
func HoldState(ctx context.Context, store, lockPath string, wait time.Duration) (context.Context, func(), time.Duration, error) {
	if ctx.Value(heldKey{store}) != nil {
		return ctx, func() {}, 0, nil
	}
	start := time.Now()
	deadline := start.Add(wait)
	l := lockOf(lockPath)
	select {
	case l.turn <- struct{}{}:
	default:
		t := time.NewTimer(wait)
		select {
		case l.turn <- struct{}{}:
			t.Stop()
		case <-t.C:
			return ctx, nil, time.Since(start), &StateBusyError{Store: store, Deadline: wait}
		case <-ctx.Done():
			t.Stop()
			return ctx, nil, time.Since(start), context.Cause(ctx)
		}
	}
	if err := l.flock(ctx, deadline); err != nil {
		<-l.turn
		var busy *StateBusyError
		if errors.As(err, &busy) {
			busy.Store, busy.Deadline = store, wait
		}
		return ctx, nil, time.Since(start), err
	}
	release := func() {
		unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
		<-l.turn
	}
	return context.WithValue(ctx, heldKey{store}, true), release, time.Since(start), nil
}

// flock takes the lock file's exclusive lock by deadline. The file is
// opened once and kept; when the file at the path is no longer the one
// held open (removed by 'mur state rm', or replaced), it is opened again,
// so two processes never lock two different files of one store.
func (l *stateLock) flock(ctx context.Context, deadline time.Time) error {
	sleep := stateFlockFirst
	for {
		if l.f == nil {
			if err := l.open(); err != nil {
				return err
			}
		}
		err := unix.Flock(int(l.f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			var st unix.Stat_t
			if e := unix.Lstat(l.path, &st); e == nil && uint64(st.Ino) == l.ino && uint64(st.Dev) == l.dev {
				return nil
			}
			// The path names another file now: lock that one instead.
			unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
			l.f.Close()
			l.f = nil
			continue
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("lock %s: %w", l.path, err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return &StateBusyError{}
		}
		t := time.NewTimer(min(sleep, left))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		}
		sleep = min(2*sleep, stateFlockMax)
	}
}

func (l *stateLock) open() error {
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return err
	}
	fd, err := unix.Open(l.path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("open the lock %s: %w", l.path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return fmt.Errorf("open the lock %s: %w", l.path, err)
	}
	l.f, l.ino, l.dev = os.NewFile(uintptr(fd), l.path), uint64(st.Ino), uint64(st.Dev)
	return nil
}

// TryHoldStateFile takes the lock file at lockPath without waiting, for a
// command that changes a store from outside any session ('mur state rm'):
// false when a call holds it now. The returned release unlocks and closes.
func TryHoldStateFile(lockPath string) (func(), bool, error) {
	fd, err := unix.Open(lockPath, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, false, &os.PathError{Op: "open", Path: lockPath, Err: err}
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, &os.PathError{Op: "flock", Path: lockPath, Err: err}
	}
	return func() { unix.Flock(fd, unix.LOCK_UN); unix.Close(fd) }, true, nil
}

// PeerInMount is the work folder's peer-in/ (files fetched from peers, the
// runtime's): a component whose view is the whole work folder sees it
// through a read-only preopen of this name (and "/peer-in") that hides
// the read-write view of it under ".".
const PeerInMount = "peer-in"

// PeerInPreopens are the read-only preopens of workdir's peer-in/, or none
// when it is not a directory (a symbolic link is not followed).
func PeerInPreopens(workdir string) []wasmhost.Preopen {
	dir := filepath.Join(workdir, PeerInMount)
	if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
		return nil
	}
	return []wasmhost.Preopen{
		{HostDir: dir, GuestPath: "/" + PeerInMount, ReadOnly: true},
		{HostDir: dir, GuestPath: PeerInMount, ReadOnly: true},
	}
}

// StateCall is one state store as a component call that sees it is handed
// it: its name, its folder, its lock file and capabilities.resources.state_max_bytes.
type StateCall struct {
	Name, Dir, Lock string
	MaxBytes        int64
}

// Open readies one call that sees the store: its lock taken (waiting at
// most wait), the folder made again if 'mur state rm' removed it since
// staging (E-CAP-009 when it cannot be), a measure before the call (a store
// already past MaxBytes is not called: *StateLimitError) and a watch while
// it runs, which cancels the returned ctx with a *StateLimitError past it.
// It returns how long it waited; a lock got only as wait ran out is a
// *StateBusyError too. done releases the watch and the lock.
func (s StateCall) Open(ctx context.Context, wait time.Duration) (context.Context, func(), time.Duration, error) {
	ctx, release, waited, err := HoldState(ctx, s.Name, s.Lock, wait)
	if err != nil {
		return ctx, nil, waited, err
	}
	if waited >= wait {
		release()
		return ctx, nil, waited, &StateBusyError{Store: s.Name, Deadline: wait}
	}
	if err := os.Mkdir(s.Dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		release()
		return ctx, nil, waited, diag.Wrap(err, "E-CAP-009", "the state store %s at %s cannot be used", s.Name, s.Dir)
	}
	if e := StateBytes(s.Name, s.Dir, s.MaxBytes); e != nil {
		release()
		return ctx, nil, waited, e
	}
	ctx, cancel := context.WithCancelCause(ctx)
	var watch sync.WaitGroup
	watch.Go(func() {
		WatchState(ctx, s.Name, s.Dir, s.MaxBytes, func(e *StateLimitError) { cancel(e) })
	})
	return ctx, func() { cancel(nil); watch.Wait(); release() }, waited, nil
}

// Final is the measure as a call ends: the watch's stop (the cause of ctx,
// the ctx Open returned) or one more measure, so a write made after the
// watch's last measure is not let through. nil: within the limit.
func (s StateCall) Final(ctx context.Context) *StateLimitError {
	if sl, ok := context.Cause(ctx).(*StateLimitError); ok {
		return sl
	}
	return StateBytes(s.Name, s.Dir, s.MaxBytes)
}
