package wasmhost

import (
	"context"
	"os"
	"reflect"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The Go-owned streams and pollables a provider hands the guest (Go's
// wasi:io, internal/wasmhost/wasiio; wasi:http's live bodies), and the
// wait on them that honours the call's deadline and cancellation: the
// engine's, because the wait decides how a call ends.

// Family counts the children of a resource: wasmtime refuses to drop a
// resource (a stream, a body) while a child made from it (its pollable,
// its stream) is alive, trapping the guest, and so does the Go side.
type Family struct{ kids int }

// LiveKids is how many children made from it are alive.
func (f *Family) LiveKids() int { return f.kids }

// Adopt makes p a child of f (a stream's pollable): f cannot be dropped
// while p is alive.
func (f *Family) Adopt(p *Pollable) *Pollable {
	f.kids++
	p.parent = f
	return p
}

// Pollable is a Go-owned pollable. state reports whether it is ready
// and, when it is not, a channel closed when that may have changed and/or
// the time at which it becomes ready.
type Pollable struct {
	call   string  // what a guest still waiting at the deadline waited on
	parent *Family // what it was subscribed from, if anything
	state  func() (ready bool, wake <-chan struct{}, at time.Time)
	// fd, when set, is a socket whose readiness may make it ready (-1:
	// none now); a wait sleeps in ppoll(2) on it.
	fd func() int
}

// Pollable is s's pollable, a child of nothing (Family.Adopt makes it
// one).
func (s *InputStream) Pollable() *Pollable { return s.pollable(nil) }

// pollable is s's pollable.
func (s *InputStream) pollable(parent *Family) *Pollable {
	return &Pollable{call: s.call, parent: parent, state: s.state, fd: s.pollFD}
}

// pollFD is the socket the guest's thread reads s's body from, or -1.
func (s *InputStream) pollFD() int {
	if s.src != nil {
		return s.src.FD()
	}
	return -1
}

// Ready reports whether p is ready, without waiting.
func (p *Pollable) Ready() bool {
	ok, _, _ := p.state()
	return ok
}

func (p *Pollable) drop() {
	if p.parent != nil {
		p.parent.kids--
	}
}

// ReadyPollable is always ready; call names it in a deadline ending.
func ReadyPollable(call string) *Pollable {
	return &Pollable{call: call, state: func() (bool, <-chan struct{}, time.Time) { return true, nil, time.Time{} }}
}

// ChanPollable is ready once ch is closed; call names it in a deadline
// ending.
func ChanPollable(ch <-chan struct{}, call string) *Pollable {
	return &Pollable{call: call, state: func() (bool, <-chan struct{}, time.Time) {
		select {
		case <-ch:
			return true, nil, time.Time{}
		default:
			return false, ch, time.Time{}
		}
	}}
}

// timerPollable is ready at at. A wait reaching past the call's deadline
// is recorded as a clock wait, as for wasip2's clock (clock.go).
func (r *run) timerPollable(at time.Time, fn string) *Pollable {
	call := clockIface + "#" + fn
	if !r.deadline.IsZero() && at.After(r.deadline) {
		r.waitedCall = call
	}
	return &Pollable{call: call, state: func() (bool, <-chan struct{}, time.Time) {
		if !time.Now().Before(at) {
			return true, nil, time.Time{}
		}
		return false, nil, at
	}}
}

// waitAny blocks until one of ps is ready and returns the indices of those
// that are. It waits up to the deadline plus the grace; woken past the
// call's deadline it gives up with a waiting DeadlineError naming what the
// first pending pollable waits on; a
// cancelled call ends it with ErrCallEnded.
func (r *run) waitAny(ps []*Pollable) ([]uint32, error) {
	ctx := r.ctx()
	for {
		// Past the deadline the wait is over even if a pollable became ready
		// meanwhile: an exchange ends at the same deadline, and the ending
		// should name what the guest waited on (as awaitHTTP does).
		if !r.deadline.IsZero() && !time.Now().Before(r.deadline) {
			return nil, &DeadlineError{Waiting: true, Call: pendingCall(ps)}
		}
		var ready []uint32
		var chans []<-chan struct{}
		var fds []unix.PollFd
		var at time.Time
		for i, p := range ps {
			ok, ch, t := p.state()
			if ok {
				ready = append(ready, uint32(i))
				continue
			}
			if ch != nil {
				chans = append(chans, ch)
			}
			if p.fd != nil {
				if fd := p.fd(); fd >= 0 {
					fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
				}
			}
			if !t.IsZero() && (at.IsZero() || t.Before(at)) {
				at = t
			}
		}
		if len(ready) > 0 {
			// A socket's pollable turns ready when its limit passes, which
			// may be the deadline itself, passed since the check above.
			if !r.deadline.IsZero() && !time.Now().Before(r.deadline) {
				return nil, &DeadlineError{Waiting: true, Call: pendingCall(ps)}
			}
			return ready, nil
		}
		if ctx.Err() != nil {
			return nil, ErrCallEnded
		}
		wake := r.waitEnd() // a guest waiting on the runtime gets the grace
		if !at.IsZero() && (wake.IsZero() || at.Before(wake)) {
			wake = at
		}
		if len(fds) > 0 {
			if err := pollSockets(ctx, fds, wake, len(chans) > 0); err != nil {
				return nil, err
			}
			continue
		}
		var timer <-chan time.Time
		if !wake.IsZero() {
			t := time.NewTimer(time.Until(wake))
			defer t.Stop()
			timer = t.C
		}
		switch len(chans) {
		case 0:
			select {
			case <-timer:
			case <-ctx.Done():
			}
		case 1:
			select {
			case <-chans[0]:
			case <-timer:
			case <-ctx.Done():
			}
		default:
			cases := make([]reflect.SelectCase, 0, len(chans)+2)
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
			if timer != nil {
				cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer)})
			}
			for _, ch := range chans {
				cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
			}
			reflect.Select(cases)
		}
	}
}

// pollSockets sleeps in ppoll(2) until one of fds is readable or wake
// passes. A cancelled exchange shuts its socket down, which wakes the
// poll; a wait is still capped (socketWaitCap, or socketWaitMixed when
// channel pollables wait too, which only a new look sees), so a
// cancellation nothing shut down is seen soon.
func pollSockets(ctx context.Context, fds []unix.PollFd, wake time.Time, mixed bool) error {
	limit := socketWaitCap
	if mixed {
		limit = socketWaitMixed
	}
	d := limit
	if !wake.IsZero() {
		d = min(d, time.Until(wake))
	}
	if d < 0 {
		d = 0
	}
	ts := unix.NsecToTimespec(d.Nanoseconds())
	if _, err := unix.Ppoll(fds, &ts, nil); err != nil && err != unix.EINTR {
		return os.NewSyscallError("ppoll", err)
	}
	if ctx.Err() != nil {
		return ErrCallEnded
	}
	return nil
}

const (
	socketWaitCap   = 100 * time.Millisecond
	socketWaitMixed = time.Millisecond
)

// pendingCall names what the first pollable not ready waits on.
func pendingCall(ps []*Pollable) string {
	for _, p := range ps {
		if ok, _, _ := p.state(); !ok {
			return p.call
		}
	}
	if len(ps) > 0 {
		return ps[0].call
	}
	return ""
}

// InputStream is a Go-owned input-stream: bytes a producer pushes (a response
// body as the server sends it) or given whole (stdin), read by the guest.
// At most max bytes wait in it; past that the producer waits for the guest.
type InputStream struct {
	Family
	call    string // the blocking read's name for a deadline ending
	mu      sync.Mutex
	buf     []byte
	max     int
	end     bool
	err     Value // with end: nil is closed, else the error-code it failed with
	dropped bool
	changed chan struct{} // closed (and replaced) when buf, end or dropped change
	// src, when set, is a response body the guest's thread reads from the
	// socket (wasi:http's, internal/wasmhost/wasihttp); only that thread
	// touches it.
	src InputSource
}

// InputSource feeds an InputStream on the guest's own thread (a response
// body read from the socket by the guest's reads): the stream asks it
// before it waits or reads.
type InputSource interface {
	// Ready reports whether a read would not wait (bytes buffered, the
	// socket readable, or the wait's limit passed).
	Ready() bool
	// LimitAt is when a wait for the next bytes gives up (zero: none).
	LimitAt() time.Time
	// Fill reads what is there (at most n bytes) into the stream
	// (InputStream.Append), or finishes it.
	Fill(n uint64)
	// ToAsync hands the rest to a goroutine (the stream dropped early).
	ToAsync()
	// FD is the socket a wait may sleep on in ppoll(2), or -1.
	FD() int
}

func newGoInput(max int) *InputStream {
	return &InputStream{max: max, changed: make(chan struct{})}
}

// NewInputStream is an empty stream a producer pushes into, at most max
// bytes ahead of the guest; a blocking read of it waiting at the deadline
// is named call.
func NewInputStream(max int, call string) *InputStream {
	s := newGoInput(max)
	s.call = call
	return s
}

// Buffered is how many bytes wait in s for the guest.
func (s *InputStream) Buffered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.buf)
}

// SetSource makes src feed s on the guest's thread; nil ends that.
func (s *InputStream) SetSource(src InputSource) { s.src = src }

// Source is what feeds s on the guest's thread, or nil.
func (s *InputStream) Source() InputSource { return s.src }

// Append hands p to the guest at once, past the stream's bound (a source
// filling it on the guest's thread).
func (s *InputStream) Append(p []byte) {
	if len(p) == 0 {
		return
	}
	s.mu.Lock()
	s.buf = append(s.buf, p...)
	s.signal()
	s.mu.Unlock()
}

// WholeInputStream is a stream of b, ended after it (stdin); a blocking
// read of it waiting at the deadline is named call.
func WholeInputStream(b []byte, call string) *InputStream {
	s := newGoInput(len(b))
	s.call = call
	s.buf, s.end = b, true
	return s
}

func (s *InputStream) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Push hands p to the guest, waiting while the stream is full; done ends
// the wait (the exchange ended): false. A dropped stream takes everything.
func (s *InputStream) Push(p []byte, done <-chan struct{}) bool {
	s.mu.Lock()
	for len(p) > 0 {
		if s.dropped {
			s.mu.Unlock()
			return true
		}
		room := s.max - len(s.buf)
		if room <= 0 {
			ch := s.changed
			s.mu.Unlock()
			select {
			case <-ch:
			case <-done:
				return false
			}
			s.mu.Lock()
			continue
		}
		n := min(room, len(p))
		s.buf = append(s.buf, p[:n]...)
		p = p[n:]
		s.signal()
	}
	s.mu.Unlock()
	return true
}

// Finish ends the stream: err nil is a clean end (the guest reads closed
// once the bytes are read), else an error-code the guest reads as
// last-operation-failed.
func (s *InputStream) Finish(err Value) {
	s.mu.Lock()
	if !s.end {
		s.end, s.err = true, err
		s.signal()
	}
	s.mu.Unlock()
}

func (s *InputStream) state() (bool, <-chan struct{}, time.Time) {
	if src := s.src; src != nil {
		s.mu.Lock()
		has := len(s.buf) > 0 || s.end
		s.mu.Unlock()
		if has || src.Ready() {
			return true, nil, time.Time{}
		}
		return false, nil, src.LimitAt()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) > 0 || s.end {
		return true, nil, time.Time{}
	}
	return false, s.changed, time.Time{}
}

// Take reads up to n bytes without waiting: ok false with the stream's
// ending once it is drained.
func (s *InputStream) Take(n uint64) (b []byte, ending Value, ok bool) {
	if src := s.src; src != nil {
		s.mu.Lock()
		empty := len(s.buf) == 0 && !s.end
		s.mu.Unlock()
		if empty {
			src.Fill(n)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) == 0 {
		if s.end {
			return nil, s.err, false
		}
		return Bytes{}, nil, true
	}
	k := len(s.buf)
	if uint64(k) > n {
		k = int(n)
	}
	out := make([]byte, k)
	copy(out, s.buf)
	s.buf = s.buf[k:]
	if len(s.buf) == 0 {
		s.buf = nil
	}
	s.signal()
	return out, nil, true
}

func (s *InputStream) drop() {
	if src := s.src; src != nil {
		src.ToAsync() // the rest of the body is read (and discarded) for its trailers
	}
	s.mu.Lock()
	s.dropped = true
	s.buf = nil
	s.signal()
	s.mu.Unlock()
}

// Dropped reports whether the guest dropped s.
func (s *InputStream) Dropped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// OutputStream is a Go-owned output-stream. write takes what check-write
// permitted; writes are synchronous, so the stream is always ready for the
// next until it fails.
type OutputStream struct {
	Family
	write  func(p []byte) error // nil discards
	failed bool                 // a write failed: every later call is closed
}

// NewOutputStream is a stream whose writes go to write (nil: nowhere).
func NewOutputStream(write func(p []byte) error) *OutputStream {
	return &OutputStream{write: write}
}

// Failed reports whether a write failed: the stream is closed since.
func (o *OutputStream) Failed() bool { return o.failed }

// Write writes p; an error fails the stream for good.
func (o *OutputStream) Write(p []byte) error {
	if o.write == nil || len(p) == 0 {
		return nil
	}
	if err := o.write(p); err != nil {
		o.failed = true
		return err
	}
	return nil
}

// IOError is a wasi:io error resource. code, when set, is the wasi:http
// error-code http-error-code reads from it.
type IOError struct {
	Msg  string
	Code Value
}

// refused is a resource of a refused interface (a socket, a network): it
