package wasmhost

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/murmur-go/murmur/internal/diag"
)

// Go-owned wasi:io, for the runs whose caller asks for it (RunConfig.GoIO;
// see RATIONALE.md, "Go's wasi:io: what it answers"): Murmur gives it to
// a driver's runs, and to a capsule's or tool's whose component uses
// wasi:http without wasi:filesystem (internal/wit.ChooseIO).
//
// wasmtime 39's C API can mint wasip2 streams only over files, and a file
// stream reads a growing file as ended, so a wasi:http response body can
// reach a wasip2 guest only once it is whole. A driver's turn is an SSE
// response it must relay as it arrives, and a driver runs with no
// preopens, so for driver runs the host answers the interfaces that hand
// out streams and pollables itself: wasi:io (poll, streams, error),
// wasi:cli stdin/stdout/stderr, the monotonic clock, wasi:filesystem (no
// descriptors) and wasi:sockets (refused). incoming-body.stream is then a
// Go input-stream fed as the server sends, outgoing-body.write a Go
// output-stream, and every pollable a Go value that poll waits on with the
// call's deadline. The rest of WASI (environment, exit, random, wall clock,
// terminals) stays wasip2's: none of it touches a stream.

// goIOProvides reports whether a run with Go's wasi:io answers the
// instance in Go.
func goIOProvides(name string) bool {
	iface, ver, ok := strings.Cut(name, "@")
	if !ok || !strings.HasPrefix(ver, "0.2.") {
		return false
	}
	switch iface {
	case "wasi:io/poll", "wasi:io/streams", "wasi:io/error",
		"wasi:cli/stdin", "wasi:cli/stdout", "wasi:cli/stderr",
		"wasi:clocks/monotonic-clock",
		"wasi:filesystem/types", "wasi:filesystem/preopens":
		return true
	}
	return strings.HasPrefix(iface, "wasi:sockets/")
}

// ioRun is the Go-owned WASI state of a driver run.
type ioRun struct {
	stdin          []byte
	stdinStream    *goInput // made on the first get-stdin, shared by all
	stdout, stderr *os.File // nil: discarded
}

// stdinHandle is one get-stdin handle: as in wasmtime, every handle reads
// the one stdin (a read through any of them moves on for all), and
// dropping a handle does not end it for the others.
type stdinHandle struct {
	family // its pollables
	s      *goInput
}

func (io *ioRun) close() {
	for _, f := range []*os.File{io.stdout, io.stderr} {
		if f != nil {
			f.Close()
		}
	}
}

// ownIO makes Go answer r's wasi:io (RunConfig.GoIO): its std streams are opened here (the Go
// streams write to them), and the WASI context it returns for wasip2 keeps
// only what wasip2 still answers (arguments, environment).
func (r *run) ownIO(w WASI) (WASI, error) {
	if len(w.Preopens) > 0 {
		return w, diag.New("E-RUN-104", "a driver run has no filesystem, but %d preopens were given", len(w.Preopens)).
			WithHint("run components that need a work folder as capsules or tools")
	}
	io := &ioRun{stdin: w.Stdin}
	open := func(f *os.File, path, name string) (*os.File, error) {
		switch {
		case f != nil:
			// Our own duplicate: the caller may close f once Instantiate
			// has returned.
			rc, err := f.SyscallConn()
			if err != nil {
				return nil, err
			}
			var nfd int
			var derr error
			if err := rc.Control(func(fd uintptr) { nfd, derr = syscall.Dup(int(fd)) }); err != nil {
				return nil, err
			}
			if derr != nil {
				return nil, derr
			}
			syscall.CloseOnExec(nfd)
			return os.NewFile(uintptr(nfd), f.Name()), nil
		case path != "":
			return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		}
		return nil, nil
	}
	var err error
	if io.stdout, err = open(w.Stdout, w.StdoutPath, "stdout"); err != nil {
		return w, diag.Wrap(err, "E-RUN-104", "cannot open the guest's stdout").WithHint("check that its directory exists and is writable")
	}
	if io.stderr, err = open(w.Stderr, w.StderrPath, "stderr"); err != nil {
		io.close()
		return w, diag.Wrap(err, "E-RUN-104", "cannot open the guest's stderr").WithHint("check that its directory exists and is writable")
	}
	r.io = io
	return WASI{Args: w.Args, Env: w.Env}, nil
}

// family counts the children of a resource: wasmtime refuses to drop a
// resource (a stream, a body) while a child made from it (its pollable,
// its stream) is alive, trapping the guest, and so does the Go side.
type family struct{ kids int }

func (f *family) liveKids() int { return f.kids }

type parent interface{ liveKids() int }

// goPollable is a Go-owned pollable. state reports whether it is ready
// and, when it is not, a channel closed when that may have changed and/or
// the time at which it becomes ready.
type goPollable struct {
	call   string  // what a guest still waiting at the deadline waited on
	parent *family // what it was subscribed from, if anything
	state  func() (ready bool, wake <-chan struct{}, at time.Time)
	// fd, when set, is a socket whose readiness may make it ready (-1:
	// none now); a wait sleeps in ppoll(2) on it.
	fd func() int
}

// inputPollable is s's pollable.
func (s *goInput) pollable(parent *family) *goPollable {
	return &goPollable{call: s.call, parent: parent, state: s.state, fd: s.pollFD}
}

// pollFD is the socket the guest's thread reads s's body from, or -1.
func (s *goInput) pollFD() int {
	if s.src != nil && s.src.ex.x.Conn != nil {
		return s.src.ex.x.Conn.FD()
	}
	return -1
}

func (p *goPollable) drop() {
	if p.parent != nil {
		p.parent.kids--
	}
}

func readyPollable(call string) *goPollable {
	return &goPollable{call: call, state: func() (bool, <-chan struct{}, time.Time) { return true, nil, time.Time{} }}
}

// chanPollable is ready once ch is closed.
func chanPollable(ch <-chan struct{}, call string) *goPollable {
	return &goPollable{call: call, state: func() (bool, <-chan struct{}, time.Time) {
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
func (r *run) timerPollable(at time.Time, fn string) *goPollable {
	call := clockIface + "#" + fn
	if !r.deadline.IsZero() && at.After(r.deadline) {
		r.waitedCall = call
	}
	return &goPollable{call: call, state: func() (bool, <-chan struct{}, time.Time) {
		if !time.Now().Before(at) {
			return true, nil, time.Time{}
		}
		return false, nil, at
	}}
}

// errCallEnded: the call ended (cancelled) while the guest waited.
var errCallEnded = errors.New("the call ended while the guest was waiting")

// waitAny blocks until one of ps is ready and returns the indices of those
// that are. It waits up to the deadline plus the grace; woken past the
// call's deadline it gives up with a waiting DeadlineError naming what the
// first pending pollable waits on; a
// cancelled call ends it with errCallEnded.
func (r *run) waitAny(ps []*goPollable) ([]uint32, error) {
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
			return nil, errCallEnded
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
		return errCallEnded
	}
	return nil
}

const (
	socketWaitCap   = 100 * time.Millisecond
	socketWaitMixed = time.Millisecond
)

// pendingCall names what the first pollable not ready waits on.
func pendingCall(ps []*goPollable) string {
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

// goInput is a Go-owned input-stream: bytes a producer pushes (a response
// body as the server sends it) or given whole (stdin), read by the guest.
// At most max bytes wait in it; past that the producer waits for the guest.
type goInput struct {
	family
	call    string // the blocking read's name for a deadline ending
	mu      sync.Mutex
	buf     []byte
	max     int
	end     bool
	err     Value // with end: nil is closed, else the error-code it failed with
	dropped bool
	changed chan struct{} // closed (and replaced) when buf, end or dropped change
	// src, when set, is a response body the guest's thread reads from the
	// socket (httpsynclive.go); only that thread touches it.
	src *syncBody
}

func newGoInput(max int) *goInput {
	return &goInput{max: max, changed: make(chan struct{})}
}

func (s *goInput) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// push hands p to the guest, waiting while the stream is full; done ends
// the wait (the exchange ended). A dropped stream takes everything.
func (s *goInput) push(p []byte, done <-chan struct{}) bool {
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

// finish ends the stream: err nil is a clean end (the guest reads closed
// once the bytes are read), else an error-code the guest reads as
// last-operation-failed.
func (s *goInput) finish(err Value) {
	s.mu.Lock()
	if !s.end {
		s.end, s.err = true, err
		s.signal()
	}
	s.mu.Unlock()
}

func (s *goInput) state() (bool, <-chan struct{}, time.Time) {
	if src := s.src; src != nil {
		s.mu.Lock()
		has := len(s.buf) > 0 || s.end
		s.mu.Unlock()
		if has || src.ready() {
			return true, nil, time.Time{}
		}
		at, _ := src.limitAt()
		return false, nil, at
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) > 0 || s.end {
		return true, nil, time.Time{}
	}
	return false, s.changed, time.Time{}
}

// take reads up to n bytes without waiting: ok false with the stream's
// ending once it is drained.
func (s *goInput) take(n uint64) (b []byte, ending Value, ok bool) {
	if src := s.src; src != nil {
		s.mu.Lock()
		empty := len(s.buf) == 0 && !s.end
		s.mu.Unlock()
		if empty {
			src.fill(n)
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

func (s *goInput) drop() {
	if src := s.src; src != nil {
		src.toAsync() // the rest of the body is read (and discarded) for its trailers
	}
	s.mu.Lock()
	s.dropped = true
	s.buf = nil
	s.signal()
	s.mu.Unlock()
}

func (s *goInput) isDropped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// goOutput is a Go-owned output-stream. write takes what check-write
// permitted; writes are synchronous, so the permit is always the whole
// goWritePermit until the stream fails.
type goOutput struct {
	family
	write  func(p []byte) error // nil discards
	failed bool                 // a write failed: every later call is closed
}

// goWritePermit is what check-write grants: a guest writes at most this
// much a call (wasmtime's file streams grant the same order).
const goWritePermit = 64 << 10

// blockingWriteMax is the wasi:io bound on blocking-write-and-flush's
// contents ("at most 4096 bytes"); wasmtime traps past it.
const blockingWriteMax = 4096

// ioError is a wasi:io error resource. code, when set, is the wasi:http
// error-code http-error-code reads from it.
type ioError struct {
	msg  string
	code Value
}

// refused is a resource of a refused interface (a socket, a network): it
// exists only so a refusal can be typed.
type refused struct{}

// goIOBuiltin is the Go answer of a driver run for iface#fn, or nil.
func goIOBuiltin(iface, fn string, typ *FuncType) func(*run, []Value) (Value, error) {
	bare := stripVersion(iface)
	var impl func(*run, []Value) (Value, error)
	switch bare {
	case "wasi:io/poll", "wasi:io/streams", "wasi:io/error", "wasi:cli/stdin", "wasi:cli/stdout", "wasi:cli/stderr", clockIface:
		impl = goIOFuncs[bare+"#"+fn]
		if impl == nil && strings.HasPrefix(fn, "[method]") {
			// A method this host does not know (a later 0.2.x addition):
			// refused like a closed stream.
			impl = refusal(typ, "closed")
		}
	case "wasi:filesystem/types", "wasi:filesystem/preopens":
		switch fn {
		case "get-directories":
			impl = func(*run, []Value) (Value, error) { return List{}, nil }
		case "filesystem-error-code":
			impl = func(*run, []Value) (Value, error) { return None, nil }
		default:
			// No descriptor exists: every method is bad-descriptor.
			impl = refusal(typ, "bad-descriptor")
		}
	default:
		if strings.HasPrefix(bare, "wasi:sockets/") {
			impl = refusal(typ, "access-denied")
		}
	}
	if impl == nil {
		return nil
	}
	name := bare + "#" + fn
	return func(r *run, args []Value) (Value, error) {
		if r.io == nil {
			return nil, fmt.Errorf("%s: the run's wasi:io is not the host's", name)
		}
		first := r.nextRep + 1
		v, err := impl(r, args)
		r.releaseArgs(args)
		if len(r.objs) > maxHostObjects && r.nextRep >= first {
			for rep := first; rep <= r.nextRep; rep++ {
				if d, ok := r.objs[rep].(dropper); ok {
					d.drop()
				}
				delete(r.objs, rep)
			}
			return nil, fmt.Errorf("%s: the component holds %d host resources (streams, pollables, wasi:http values) it has not dropped; the host allows %d",
				name, len(r.objs), maxHostObjects)
		}
		return v, err
	}
}

// releaseArgs ends the borrows a Go builtin was lent and frees their
// handles, which sit at the end of the run's resources (the C API requires
// a lent handle be converted to the host's or dropped before the call
// returns, or wasmtime traps: "borrow handles still remain"). A driver reads
// its stream thousands of times a turn; each read would otherwise keep a
// handle until the store ends.
func (r *run) releaseArgs(args []Value) {
	var lent []*Resource
	var collect func(v Value)
	collect = func(v Value) {
		switch x := v.(type) {
		case *Resource:
			if !x.closed() {
				lent = append(lent, x)
			}
		case List:
			for _, e := range x {
				collect(e)
			}
		}
	}
	for _, a := range args {
		collect(a)
	}
	for _, res := range lent {
		res.HostRep()
	}
	n := len(r.resources)
	if len(lent) > n {
		return
	}
	for j, res := range lent {
		if r.resources[n-len(lent)+j] != res {
			return
		}
	}
	for _, res := range lent {
		C.wasmtime_component_resource_any_delete(res.p)
		res.p = nil
	}
	clear(r.resources[n-len(lent):])
	r.resources = r.resources[:n-len(lent)]
}

// refusal answers a function of an interface that has nothing behind it
// for a driver: a result's error side gets errCase, anything else a zero
// value of its type (a resource result a fresh refused object, a pollable
// a ready one).
func refusal(typ *FuncType, errCase string) func(*run, []Value) (Value, error) {
	return func(r *run, _ []Value) (Value, error) {
		if typ == nil || typ.Result == nil {
			return nil, nil
		}
		t := typ.Result
		if t.Kind == KindResult {
			return Err(caseValue(r, t.Err, errCase)), nil
		}
		return zeroValue(r, t, 0), nil
	}
}

func caseValue(r *run, t *Type, c string) Value {
	if t == nil {
		return nil
	}
	switch t.Kind {
	case KindEnum:
		if indexOf(t.Names, c) >= 0 {
			return Enum(c)
		}
	case KindVariant:
		if cs := caseOf(t, c); cs != nil && cs.Type == nil {
			return Variant{Case: c}
		}
	}
	return zeroValue(r, t, 0)
}

func zeroValue(r *run, t *Type, depth int) Value {
	if t == nil || depth > maxDepth {
		return nil
	}
	switch t.Kind {
	case KindBool:
		return false
	case KindS8:
		return int8(0)
	case KindS16:
		return int16(0)
	case KindS32:
		return int32(0)
	case KindS64:
		return int64(0)
	case KindU8:
		return uint8(0)
	case KindU16:
		return uint16(0)
	case KindU32:
		return uint32(0)
	case KindU64:
		return uint64(0)
	case KindF32:
		return float32(0)
	case KindF64:
		return float64(0)
	case KindChar:
		return Char(0)
	case KindString:
		return ""
	case KindList:
		return List{}
	case KindOption:
		return None
	case KindFlags:
		return Flags{}
	case KindEnum:
		if len(t.Names) > 0 {
			return Enum(t.Names[0])
		}
	case KindResult:
		return Ok(zeroValue(r, t.Ok, depth+1))
	case KindVariant:
		if len(t.Cases) > 0 {
			return Variant{Case: t.Cases[0].Name, Value: zeroValue(r, t.Cases[0].Type, depth+1)}
		}
	case KindRecord:
		rec := make(Record, len(t.Fields))
		for i, f := range t.Fields {
			rec[i] = FieldValue{f.Name, zeroValue(r, f.Type, depth+1)}
		}
		return rec
	case KindTuple:
		tu := make(Tuple, len(t.Tuple))
		for i, e := range t.Tuple {
			tu[i] = zeroValue(r, e, depth+1)
		}
		return tu
	case KindOwn, KindBorrow:
		if t.Resource == "pollable" {
			return r.newObj(readyPollable(""))
		}
		return r.newObj(&refused{})
	}
	return nil
}

func streamClosed() Result { return Err(Variant{Case: "closed"}) }

// streamFailed is last-operation-failed with a fresh error resource.
func (r *run) streamFailed(e *ioError) Result {
	return Err(Variant{Case: "last-operation-failed", Value: r.newObj(e)})
}

// inputEnding is a drained stream's answer: closed, or the error that
// ended it.
func (r *run) inputEnding(ending Value) Result {
	if ending == nil {
		return streamClosed()
	}
	return r.streamFailed(&ioError{msg: "the response body failed: " + errorCodeText(ending), code: ending})
}

func errorCodeText(code Value) string {
	if v, ok := code.(Variant); ok {
		if o, ok := v.Value.(Option); ok && o.Some {
			return fmt.Sprintf("%s(%v)", v.Case, o.Value)
		}
		return v.Case
	}
	return fmt.Sprint(code)
}

// trapf is an error that traps the guest, for a use wasmtime traps on.
func trapf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func (r *run) inputOf(v Value) (*goInput, error) {
	o, _ := r.objOf(v)
	switch s := o.(type) {
	case *goInput:
		return s, nil
	case *stdinHandle:
		return s.s, nil
	}
	return nil, trapf("wasi:io: not an input-stream of this host")
}

func (r *run) outputOf(v Value) (*goOutput, error) {
	if o := objAs[*goOutput](r, v); o != nil {
		return o, nil
	}
	return nil, trapf("wasi:io: not an output-stream of this host")
}

func (r *run) blockingRead(s *goInput, n uint64, skip bool) (Value, error) {
	for {
		b, ending, ok := s.take(n)
		if !ok {
			return r.inputEnding(ending), nil
		}
		if len(b) > 0 || n == 0 {
			if skip {
				return Ok(uint64(len(b))), nil
			}
			return Ok(Bytes(b)), nil
		}
		if _, err := r.waitAny([]*goPollable{s.pollable(nil)}); err != nil {
			return nil, err
		}
	}
}

func (r *run) outWrite(o *goOutput, p []byte, limit int, fn string) (Value, error) {
	if len(p) > limit {
		return nil, trapf("wasi:io/streams#[method]output-stream.%s: %d bytes is more than the %d the stream permits", fn, len(p), limit)
	}
	if o.failed {
		return streamClosed(), nil
	}
	if o.write != nil && len(p) > 0 {
		if err := o.write(p); err != nil {
			o.failed = true
			return r.streamFailed(&ioError{msg: err.Error()}), nil
		}
	}
	return okUnit, nil
}

// stdStream makes the guest's stdout or stderr: writes go to f, or nowhere.
func stdStream(f *os.File) *goOutput {
	o := &goOutput{}
	if f != nil {
		o.write = func(p []byte) error { _, err := f.Write(p); return err }
	}
	return o
}

func u64Arg(v Value) uint64 { n, _ := v.(uint64); return n }

var goIOFuncs = map[string]func(*run, []Value) (Value, error){
	"wasi:io/poll#poll": func(r *run, a []Value) (Value, error) {
		l, _ := a[0].(List)
		if len(l) == 0 {
			return nil, trapf("wasi:io/poll#poll: empty poll list")
		}
		ps := make([]*goPollable, len(l))
		for i, v := range l {
			if ps[i] = objAs[*goPollable](r, v); ps[i] == nil {
				return nil, trapf("wasi:io/poll#poll: not a pollable of this host")
			}
		}
		ready, err := r.waitAny(ps)
		if err != nil {
			return nil, err
		}
		out := make(List, len(ready))
		for i, x := range ready {
			out[i] = x
		}
		return out, nil
	},
	"wasi:io/poll#[method]pollable.ready": func(r *run, a []Value) (Value, error) {
		p := objAs[*goPollable](r, a[0])
		if p == nil {
			return nil, trapf("wasi:io/poll: not a pollable of this host")
		}
		ok, _, _ := p.state()
		return ok, nil
	},
	"wasi:io/poll#[method]pollable.block": func(r *run, a []Value) (Value, error) {
		p := objAs[*goPollable](r, a[0])
		if p == nil {
			return nil, trapf("wasi:io/poll: not a pollable of this host")
		}
		_, err := r.waitAny([]*goPollable{p})
		return nil, err
	},
	"wasi:io/error#[method]error.to-debug-string": func(r *run, a []Value) (Value, error) {
		if e := objAs[*ioError](r, a[0]); e != nil {
			return e.msg, nil
		}
		return "", nil
	},

	"wasi:io/streams#[method]input-stream.read": func(r *run, a []Value) (Value, error) {
		s, err := r.inputOf(a[0])
		if err != nil {
			return nil, err
		}
		b, ending, ok := s.take(u64Arg(a[1]))
		if !ok {
			return r.inputEnding(ending), nil
		}
		return Ok(Bytes(b)), nil
	},
	"wasi:io/streams#[method]input-stream.blocking-read": func(r *run, a []Value) (Value, error) {
		s, err := r.inputOf(a[0])
		if err != nil {
			return nil, err
		}
		return r.blockingRead(s, u64Arg(a[1]), false)
	},
	"wasi:io/streams#[method]input-stream.skip": func(r *run, a []Value) (Value, error) {
		s, err := r.inputOf(a[0])
		if err != nil {
			return nil, err
		}
		b, ending, ok := s.take(u64Arg(a[1]))
		if !ok {
			return r.inputEnding(ending), nil
		}
		return Ok(uint64(len(b))), nil
	},
	"wasi:io/streams#[method]input-stream.blocking-skip": func(r *run, a []Value) (Value, error) {
		s, err := r.inputOf(a[0])
		if err != nil {
			return nil, err
		}
		return r.blockingRead(s, u64Arg(a[1]), true)
	},
	"wasi:io/streams#[method]input-stream.subscribe": func(r *run, a []Value) (Value, error) {
		// One look-up: a lent handle converts to the host's once.
		o, _ := r.objOf(a[0])
		var s *goInput
		var fam *family
		switch x := o.(type) {
		case *goInput:
			s, fam = x, &x.family
		case *stdinHandle:
			s, fam = x.s, &x.family
		default:
			return nil, trapf("wasi:io: not an input-stream of this host")
		}
		fam.kids++
		return r.newObj(s.pollable(fam)), nil
	},
	"wasi:io/streams#[method]output-stream.check-write": func(r *run, a []Value) (Value, error) {
		o, err := r.outputOf(a[0])
		if err != nil {
			return nil, err
		}
		if o.failed {
			return streamClosed(), nil
		}
		return Ok(uint64(goWritePermit)), nil
	},
	"wasi:io/streams#[method]output-stream.write": func(r *run, a []Value) (Value, error) {
		o, err := r.outputOf(a[0])
		if err != nil {
			return nil, err
		}
		return r.outWrite(o, []byte(bytesOf(a[1])), goWritePermit, "write")
	},
	"wasi:io/streams#[method]output-stream.blocking-write-and-flush": func(r *run, a []Value) (Value, error) {
		o, err := r.outputOf(a[0])
		if err != nil {
			return nil, err
		}
		return r.outWrite(o, []byte(bytesOf(a[1])), blockingWriteMax, "blocking-write-and-flush")
	},
	"wasi:io/streams#[method]output-stream.write-zeroes": func(r *run, a []Value) (Value, error) {
		o, err := r.outputOf(a[0])
		if err != nil {
			return nil, err
		}
		n := u64Arg(a[1])
		if n > goWritePermit {
			return nil, trapf("wasi:io/streams#[method]output-stream.write-zeroes: %d bytes is more than the %d the stream permits", n, goWritePermit)
		}
		return r.outWrite(o, make([]byte, n), goWritePermit, "write-zeroes")
	},
	"wasi:io/streams#[method]output-stream.blocking-write-zeroes-and-flush": func(r *run, a []Value) (Value, error) {
		o, err := r.outputOf(a[0])
		if err != nil {
			return nil, err
		}
		n := u64Arg(a[1])
		if n > blockingWriteMax {
			return nil, trapf("wasi:io/streams#[method]output-stream.blocking-write-zeroes-and-flush: %d bytes is more than %d", n, blockingWriteMax)
		}
		return r.outWrite(o, make([]byte, n), blockingWriteMax, "blocking-write-zeroes-and-flush")
	},
	"wasi:io/streams#[method]output-stream.flush":          outFlush,
	"wasi:io/streams#[method]output-stream.blocking-flush": outFlush,
	"wasi:io/streams#[method]output-stream.subscribe": func(r *run, a []Value) (Value, error) {
		o, err := r.outputOf(a[0])
		if err != nil {
			return nil, err
		}
		// Writes are synchronous: the stream is always ready for one.
		o.kids++
		p := readyPollable("wasi:io/streams#[method]output-stream.subscribe")
		p.parent = &o.family
		return r.newObj(p), nil
	},
	"wasi:io/streams#[method]output-stream.splice": func(r *run, a []Value) (Value, error) {
		return outSplice(r, a, false)
	},
	"wasi:io/streams#[method]output-stream.blocking-splice": func(r *run, a []Value) (Value, error) {
		return outSplice(r, a, true)
	},

	"wasi:cli/stdin#get-stdin": func(r *run, _ []Value) (Value, error) {
		if r.io.stdinStream == nil {
			s := newGoInput(len(r.io.stdin))
			s.call = "wasi:io/streams#[method]input-stream.blocking-read"
			s.buf, s.end = r.io.stdin, true
			r.io.stdinStream = s
		}
		return r.newObj(&stdinHandle{s: r.io.stdinStream}), nil
	},
	"wasi:cli/stdout#get-stdout": func(r *run, _ []Value) (Value, error) {
		return r.newObj(stdStream(r.io.stdout)), nil
	},
	"wasi:cli/stderr#get-stderr": func(r *run, _ []Value) (Value, error) {
		return r.newObj(stdStream(r.io.stderr)), nil
	},

	clockIface + "#now": func(*run, []Value) (Value, error) {
		return uint64(time.Since(procStart)), nil
	},
	clockIface + "#resolution": func(*run, []Value) (Value, error) { return uint64(1), nil },
	clockIface + "#subscribe-duration": func(r *run, a []Value) (Value, error) {
		d := u64Arg(a[0])
		at := time.Now()
		if d > uint64(time.Duration(1<<62)) {
			at = at.Add(1 << 62)
		} else {
			at = at.Add(time.Duration(d))
		}
		return r.newObj(r.timerPollable(at, "subscribe-duration")), nil
	},
	clockIface + "#subscribe-instant": func(r *run, a []Value) (Value, error) {
		w := u64Arg(a[0])
		if w > uint64(time.Duration(1<<62)) {
			w = uint64(time.Duration(1 << 62))
		}
		return r.newObj(r.timerPollable(procStart.Add(time.Duration(w)), "subscribe-instant")), nil
	},
}

func outFlush(r *run, a []Value) (Value, error) {
	o, err := r.outputOf(a[0])
	if err != nil {
		return nil, err
	}
	if o.failed {
		return streamClosed(), nil
	}
	return okUnit, nil
}

func outSplice(r *run, a []Value, blocking bool) (Value, error) {
	o, err := r.outputOf(a[0])
	if err != nil {
		return nil, err
	}
	s, err := r.inputOf(a[1])
	if err != nil {
		return nil, err
	}
	n := min(u64Arg(a[2]), goWritePermit)
	var got Value
	if blocking {
		got, err = r.blockingRead(s, n, false)
		if err != nil {
			return nil, err
		}
	} else {
		b, ending, ok := s.take(n)
		got = Ok(Bytes(b))
		if !ok {
			got = r.inputEnding(ending)
		}
	}
	res := got.(Result)
	if res.IsErr {
		return res, nil
	}
	b := res.Value.(Bytes)
	w, err := r.outWrite(o, b, goWritePermit, "splice")
	if err != nil || w.(Result).IsErr {
		return w, err
	}
	return Ok(uint64(len(b))), nil
}
