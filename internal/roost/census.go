package roost

import (
	"errors"
	"sync"
	"time"

	"github.com/murmur-go/murmur/internal/running"
	"golang.org/x/sys/unix"
)

// StartupCount is what the start-up census found in ~/.murmur/running.
type StartupCount struct {
	Dir        string
	Read       int // every .json file read, parseable or not
	Live       int
	Stale      int
	Unreadable int
	Took       time.Duration
}

// startupRecord is one capsule found running at start-up. It counts toward
// the machine ceiling until the daemon has evidence that it is gone (the same
// evidence `mur ps` prunes on: running.Record.Alive), or until a session with
// its id registers, at which point the registration is the one capsule.
type startupRecord struct {
	rec   running.Record
	pidfd int  // -1 when none could be opened: Alive is asked on every read
	done  bool // found gone: never counted again
	held  bool // absorbed by a running session with its id, which counts instead
	// adopted: the record of a registered session, watched from its
	// registration (adopt), not found at start-up. It is only ever held:
	// the session's deregistration gives its slot back, as the text says.
	adopted bool
}

// startupSet holds the start-up capsules still counted. It has a lock of its
// own, taken inside the daemon's state lock or without it: the re-check
// (refresh), a system call or more, runs once per request before the state
// lock is taken, so it never holds up another session's decision, and the
// decision under the lock reads the figure it left (counted). A capsule that
// exits between the two is counted once more, which errs toward refusing.
//
// Re-checking 256 records on every census read with a kill(0) and a read of
// /proc/<pid>/stat each would cost about a millisecond per POST /spawn. A
// pidfd becomes readable when its process exits, so one poll(2) with a zero
// timeout over every pidfd tells, in one system call, which capsules may have
// gone; only those are then asked Alive(), which stays the authority (a
// zombie still holds its pid, and Alive counts it, as `mur ps` would). A
// record whose pidfd could not be opened, or past the descriptors the daemon
// may spend on pidfds (pidfdBudget), is asked Alive() on every read.
type startupSet struct {
	mu   sync.Mutex
	recs []*startupRecord
	byID map[string]*startupRecord
	// epfd is an epoll instance holding every pidfd in fds, so a re-check
	// costs one epoll_wait whatever the number of records (poll(2) walks all
	// of them, ~20 µs for 256); -1 when none could be made, and then fds
	// are polled.
	epfd  int
	evs   []unix.EpollEvent
	fds   []unix.PollFd
	owner []*startupRecord // owner[i] holds fds[i]
	slow  []*startupRecord // no pidfd
	live  int
	// budget is the pidfds the set may hold (pidfdBudget at start-up, which
	// lists /proc/self/fd: too dear to ask on every registration).
	budget int
	// ended holds the sessions whose record was found gone while a running
	// registration held it: the evidence that the session is gone too,
	// taken by the referee under its lock (takeEnded).
	ended []string
}

// scanStartup reads dir once. It never writes there.
func scanStartup(dir string) (*startupSet, StartupCount, error) {
	t0 := time.Now()
	entries, err := running.Scan(dir)
	if err != nil {
		return nil, StartupCount{}, err
	}
	set := &startupSet{byID: map[string]*startupRecord{}, epfd: -1}
	cnt := StartupCount{Dir: dir, Read: len(entries)}
	for _, e := range entries {
		switch e.State {
		case running.Stale:
			cnt.Stale++
			continue
		case running.Unreadable:
			cnt.Unreadable++
			continue
		}
		cnt.Live++
		r := &startupRecord{rec: e.Record, pidfd: -1}
		set.recs = append(set.recs, r)
		if _, dup := set.byID[r.rec.SessionID]; !dup {
			set.byID[r.rec.SessionID] = r
		}
	}
	cnt.Took = time.Since(t0)
	budget := pidfdBudget()
	set.budget = budget
	for _, r := range set.recs {
		if len(set.fds) < budget {
			set.watch(r)
		} else {
			set.poll(r)
		}
	}
	for _, r := range set.recs {
		if !r.done {
			set.live++
		}
	}
	set.arm()
	return set, cnt, nil
}

// arm puts every pidfd in one epoll instance (level-triggered: a pidfd of an
// exited process stays ready until reap closes it, and closing it removes it).
func (s *startupSet) arm() {
	if len(s.fds) == 0 {
		return
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return
	}
	for _, f := range s.fds {
		if unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, int(f.Fd), &unix.EpollEvent{Events: unix.EPOLLIN, Fd: f.Fd}) != nil {
			unix.Close(ep)
			return
		}
	}
	s.epfd = ep
	s.evs = make([]unix.EpollEvent, 64)
}

// epollReap reaps the pidfds the epoll instance reports ready. When epoll
// fails it closes the instance, and refresh polls instead.
func (s *startupSet) epollReap() {
	for {
		n, err := unix.EpollWait(s.epfd, s.evs, 0)
		for tries := 0; errors.Is(err, unix.EINTR) && tries < 3; tries++ {
			n, err = unix.EpollWait(s.epfd, s.evs, 0)
		}
		if err != nil {
			unix.Close(s.epfd)
			s.epfd = -1
			return
		}
		for _, ev := range s.evs[:n] {
			for i := range s.fds {
				if s.fds[i].Fd == ev.Fd {
					s.fds[i].Revents = unix.POLLIN
				}
			}
		}
		if n > 0 {
			s.reap() // closing a reaped pidfd takes it out of the instance
		}
		if n < len(s.evs) {
			return
		}
	}
}

// pollReap is epollReap with one poll(2) over every pidfd.
func (s *startupSet) pollReap() {
	n, err := unix.Poll(s.fds, 0)
	for tries := 0; errors.Is(err, unix.EINTR) && tries < 3; tries++ {
		n, err = unix.Poll(s.fds, 0)
	}
	if err != nil {
		// Fall back to asking each one; never grant on a guess.
		for _, r := range s.owner {
			s.moveToSlow(r)
		}
		s.fds, s.owner = s.fds[:0], s.owner[:0]
	} else if n > 0 {
		s.reap()
	}
}

// watch opens a pidfd for r and re-confirms, after opening it, that the pid
// still belongs to the recorded process: a pidfd names whichever process held
// the pid when it was opened, so the check after the open is what ties it to
// the capsule.
func (s *startupSet) watch(r *startupRecord) {
	fd, err := unix.PidfdOpen(r.rec.PID, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) && !r.rec.Alive() {
			r.done = true
			return
		}
		s.slow = append(s.slow, r)
		return
	}
	if !r.rec.Alive() {
		unix.Close(fd)
		r.done = true
		return
	}
	r.pidfd = fd
	s.fds = append(s.fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	s.owner = append(s.owner, r)
}

// poll is watch for a record past the pidfd budget: it is asked Alive() (a
// read of /proc) now and on every census read.
func (s *startupSet) poll(r *startupRecord) {
	if !r.rec.Alive() {
		r.done = true
		return
	}
	s.slow = append(s.slow, r)
}

// count re-checks every start-up capsule still counted and returns how many
// are. A capsule found gone is never counted again.
func (s *startupSet) count() int {
	s.refresh()
	return s.counted()
}

// counted is how many start-up capsules the last re-check left counted.
func (s *startupSet) counted() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live
}

// refresh re-checks every start-up capsule still counted.
func (s *startupSet) refresh() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.fds) > 0 && s.epfd >= 0 {
		s.epollReap()
	}
	if len(s.fds) > 0 && s.epfd < 0 {
		s.pollReap()
	}
	if len(s.slow) > 0 {
		kept := s.slow[:0]
		for _, r := range s.slow {
			if r.done {
				continue
			}
			if !r.rec.Alive() {
				s.gone(r)
				continue
			}
			kept = append(kept, r)
		}
		s.slow = kept
	}
}

// reap handles the pidfds poll reported ready.
func (s *startupSet) reap() {
	j := 0
	for i := range s.fds {
		r := s.owner[i]
		if s.fds[i].Revents == 0 {
			s.fds[j], s.owner[j] = s.fds[i], r
			s.fds[j].Revents = 0
			j++
			continue
		}
		unix.Close(r.pidfd)
		r.pidfd = -1
		if r.rec.Alive() {
			s.slow = append(s.slow, r) // e.g. a zombie: still holds its pid
			continue
		}
		s.gone(r)
	}
	s.fds, s.owner = s.fds[:j], s.owner[:j]
}

func (s *startupSet) moveToSlow(r *startupRecord) {
	if r.pidfd >= 0 {
		unix.Close(r.pidfd)
		r.pidfd = -1
	}
	if !r.done {
		s.slow = append(s.slow, r)
	}
}

// absorb stops counting the start-up record with this session id while the
// session it registered as is running: a start-up record and a registration
// with the same session id are one capsule, counted as the
// session. The record stays watched, because the session's deregistration is
// only the client's word: the capsule stops counting once the daemon has
// evidence that it is gone, and release hands the count back to the record
// until then. It reports whether a still-counted record was absorbed.
func (s *startupSet) absorb(sessionID string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.byID[sessionID]; !ok || r.adopted {
		return false
	}
	absorbed := 0
	for _, x := range s.recs {
		if x.rec.SessionID == sessionID && !x.done && !x.held {
			x.held = true
			absorbed++
		}
	}
	s.live -= absorbed
	return absorbed > 0
}

// release ends absorb for a session that deregistered: each of its start-up
// records counts again until its process is found gone (the next count
// re-checks it). It reports whether a record was handed back.
func (s *startupSet) release(sessionID string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.byID[sessionID]
	if !ok {
		return false
	}
	if r.adopted {
		// Counted as the session until now; it is not a start-up capsule
		// to hand the count back to, and nothing asks for it again.
		r.held, r.done = false, true
		delete(s.byID, sessionID)
		return false
	}
	back := 0
	for _, x := range s.recs {
		if x.rec.SessionID == sessionID && x.held {
			x.held = false
			if !x.done {
				back++
			}
		}
	}
	s.live += back
	return back > 0
}

// gone marks r as found gone; it was counted unless a session holds it.
func (s *startupSet) gone(r *startupRecord) {
	if r.done {
		return // an adopted record released by its deregistration
	}
	r.done = true
	if r.held {
		s.ended = append(s.ended, r.rec.SessionID)
	}
	if !r.held {
		s.live--
	}
}

// close releases every pidfd (tests start many daemons in one process).
func (s *startupSet) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.owner {
		if r.pidfd >= 0 {
			unix.Close(r.pidfd)
			r.pidfd = -1
		}
	}
	s.fds, s.owner = nil, nil
	if s.epfd >= 0 {
		unix.Close(s.epfd)
		s.epfd = -1
	}
}

// adopt watches the running record that is a counted session's evidence,
// held by that session (it counts as the session, once): its process's exit
// is seen when the session is killed without deregistering (kill -9, the OOM
// killer), whether or not `mur ps` has pruned the record since. A record
// already found gone is reported through takeEnded at once.
func (s *startupSet) adopt(rec running.Record) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byID[rec.SessionID]; ok {
		return
	}
	// Not in recs, which absorb and release walk: only byID and the watch
	// hold it, and release forgets it.
	r := &startupRecord{rec: rec, pidfd: -1, held: true, adopted: true}
	s.byID[rec.SessionID] = r
	if len(s.fds) < s.budget {
		s.watch(r)
	} else {
		s.poll(r)
	}
	switch {
	case r.done:
		s.ended = append(s.ended, rec.SessionID)
	case r.pidfd >= 0 && s.epfd >= 0:
		if unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, r.pidfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(r.pidfd)}) != nil {
			unix.Close(s.epfd) // refresh polls every pidfd instead
			s.epfd = -1
		}
	case r.pidfd >= 0 && s.evs == nil:
		s.arm() // the first pidfd: no epoll instance was made at start-up
	}
}

// takeEnded returns, once each, the sessions found gone since the last call.
func (s *startupSet) takeEnded() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.ended
	s.ended = nil
	return out
}
