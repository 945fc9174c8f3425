package roost

import (
	"os"

	"golang.org/x/sys/unix"
)

// raiseNoFileLimit raises the soft limit on open files to the hard limit.
// The census holds one pidfd per live start-up record, and the daemon needs
// descriptors for its listener and every connection on top; the soft limit
// is the only part an unprivileged process may raise. (The Go runtime does
// the same at start on Linux; doing it here states the need and covers a
// runtime that stops doing it.) Failure leaves the limit as it was: the
// census then holds fewer pidfds (pidfdBudget).
func raiseNoFileLimit() {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil || lim.Cur >= lim.Max {
		return
	}
	lim.Cur = lim.Max
	_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
}

// maxHeadroom caps the descriptors kept back from pidfds on a generous limit.
const maxHeadroom = 1024

// pidfdBudget is how many pidfds the census may hold: what the soft limit
// leaves after the descriptors already open and a headroom (half the limit,
// at most maxHeadroom) for the listener, connections and registry reads.
// Records past it are asked through /proc on every census read instead: a
// daemon that holds every descriptor for pidfds cannot listen or answer.
func pidfdBudget() int {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil {
		return 0
	}
	soft := lim.Cur
	if soft > 1<<30 {
		soft = 1 << 30
	}
	headroom := min(soft/2, maxHeadroom)
	open := uint64(openDescriptors())
	if soft < headroom+open {
		return 0
	}
	return int(soft - headroom - open)
}

// openDescriptors counts this process's open descriptors; when /proc cannot
// say, it guesses high (the standard three plus the runtime's own) so the
// budget errs toward polling.
func openDescriptors() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 16
	}
	return len(ents)
}
