package wasmhost

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Host interfaces plugged into the engine. A Provider answers some WASI
// instances in Go for the runs that ask for it: Go's wasi:io
// (internal/wasmhost/wasiio) for runs with RunConfig.GoIO, whose instances
// shadow wasip2's of the same name, and Go's wasi:http
// (internal/wasmhost/wasihttp) for runs whose Host grants it
// (Host.Provide), which answers instances wasip2 has not. The run keeps
// each provider's per-run state, and the provider's objects live in the
// run's resource table (Run). Providers register at init (Register);
// whoever builds runs imports them.

// Provider answers host interfaces in Go.
type Provider interface {
	// Provides reports whether it answers the imported instance name
	// ("wasi:io/streams@0.2.6").
	Provides(instance string) bool
	// Func is its answer to iface#fn (iface without its version), or nil
	// when it has none (the import then fails as not granted). t is the
	// function's type as the component imports it.
	Func(iface, fn string, t *FuncType) ProviderFunc
	// Open makes a run's state (Run.SetState) from the run's WASI
	// configuration and, for a granted provider, the Host's configuration
	// (Run.Config), and returns the WASI configuration the run gets (what
	// of it wasip2 still answers, or with a preopen the provider needs).
	Open(r *Run, w WASI) (WASI, error)
}

// ProviderFunc is a provider's host function: args are the guest's
// arguments, the result is checked and lowered as a HostFunc's. An error
// traps the guest, except a DeadlineError and ErrCallEnded, which end the
// call as waiting past its deadline or cancelled.
type ProviderFunc func(r *Run, args []Value) (Value, error)

// ProviderGoIO is the name Go's wasi:io registers under: runs with
// RunConfig.GoIO use it. Every other registered provider is granted by a
// run's Host (Host.Provide).
const ProviderGoIO = "wasi:io"

var providers sync.Map // name → Provider

// Register makes p the provider named name, for every engine of the
// process. Call it from an init function.
func Register(name string, p Provider) { providers.Store(name, p) }

func providerNamed(name string) Provider {
	if p, ok := providers.Load(name); ok {
		return p.(Provider)
	}
	return nil
}

// Provide grants the provider registered as name to the runs of this
// Host (its instances, as the component imports them); cfg is what the
// provider's Open reads (Run.Config). Without it, the provider's
// functions fail as not granted.
func (h *Host) Provide(name string, cfg any) {
	if h.grants == nil {
		h.grants = map[string]any{}
	}
	h.grants[name] = cfg
}

// provSlot is one provider's part of a run.
type provSlot struct {
	name  string
	p     Provider
	cfg   any
	state any
	view  Run
}

// Run is a provider's view of one run: its table of host objects, its
// per-run state, and the engine's waits, which honour the call's deadline
// and cancellation. It is valid during the run's host calls, on the
// call's thread.
type Run struct {
	r    *run
	slot *provSlot
}

// NewObject puts o in the run's table: the handle a host function returns
// for an own<R> or borrow<R> of a host-defined resource. When the guest
// drops its last handle, an engine stream or pollable acts on it, an
// object with a Drop method (Dropper) is dropped, and an object with
// live children (Parent, or embedding Family) traps the guest.
func (v *Run) NewObject(o any) HostResource { return v.r.newObj(o) }

// Object is the object behind a handle the guest passed, if it is one of
// the run's.
func (v *Run) Object(h Value) (any, bool) { return v.r.objOf(h) }

// Objects is how many objects the run's table holds, and the handle the
// next one gets (for ForgetFrom).
func (v *Run) Objects() (held int, next uint32) { return len(v.r.objs), v.r.nextRep + 1 }

// ForgetFrom drops (as the guest would) and forgets every object made
// since Objects answered next: a call undoing what it made.
func (v *Run) ForgetFrom(next uint32) {
	for rep := next; rep <= v.r.nextRep; rep++ {
		dropObject(v.r.objs[rep])
		delete(v.r.objs, rep)
	}
}

// State is what the provider's Open set.
func (v *Run) State() any { return v.slot.state }

// SetState keeps s for the run; it is closed with the run if it has a
// Close method.
func (v *Run) SetState(s any) { v.slot.state = s }

// Config is what the run's Host gave the provider (Host.Provide); nil for
// Go's wasi:io.
func (v *Run) Config() any { return v.slot.cfg }

// GoIO reports whether the run's wasi:io is Go's (RunConfig.GoIO).
func (v *Run) GoIO() bool { return v.r.goIO }

// Context is the call's context: cancelled at the call's deadline plus
// the grace, or when the caller cancels.
func (v *Run) Context() context.Context { return v.r.ctx() }

// Deadline is the call's deadline; zero without one.
func (v *Run) Deadline() time.Time { return v.r.deadline }

// WaitEnd is when a guest waiting on the runtime is stopped: the deadline
// plus the grace for a run whose wasi:io is Go's, else the deadline; zero
// without a deadline.
func (v *Run) WaitEnd() time.Time { return v.r.waitEnd() }

// Cancelled reports whether the caller has cancelled the call.
func (v *Run) Cancelled() bool { return v.r.parentCtx != nil && v.r.parentCtx.Err() != nil }

// WaitAny blocks until one of ps is ready and returns the indices of those
// that are, or the call's ending: a waiting DeadlineError past the
// deadline, or ErrCallEnded.
func (v *Run) WaitAny(ps []*Pollable) ([]uint32, error) { return v.r.waitAny(ps) }

// Timer is a pollable ready at at, for the monotonic clock's fn
// ("subscribe-duration"); a wait on it past the call's deadline is a
// clock wait, as on wasip2's clock.
func (v *Run) Timer(at time.Time, fn string) *Pollable { return v.r.timerPollable(at, fn) }

// ReadyWASIPollable is a ready wasip2 pollable (only wasip2 can mint the
// pollables of a run whose wasi:io is wasip2's).
func (v *Run) ReadyWASIPollable() (Value, error) { return v.r.subscribe(0, "") }

// GuestRead copies n bytes at ptr of the guest's memory; false when the
// range is outside it.
func (v *Run) GuestRead(ptr, n uint32) ([]byte, bool) { return v.r.guestRead(ptr, n) }

// GuestElems calls each for the count elements of size bytes at ptr, read
// from the guest's memory a batch at a time; it stops at the first false.
// False when the list lies outside the guest's memory.
func (v *Run) GuestElems(ptr, count, size uint32, each func(e []byte) bool) bool {
	return v.r.guestElems(ptr, count, size, each)
}

// FileStream opens the file name of the run's stream directory (the last
// preopen, which has ForStreams) as a wasip2 stream for the guest: an
// input-stream, or with write an output-stream.
func (v *Run) FileStream(name string, write bool) (*Resource, error) {
	return v.r.openStream(name, write)
}

// OpenFileDesc opens the file name of the stream directory for reading
// and keeps the descriptor in the run, for DescStream and CloseFileDesc.
func (v *Run) OpenFileDesc(name string) (uint32, error) { return v.r.openDesc(name) }

// DescStream is a new input-stream at the start of a descriptor
// OpenFileDesc kept (no open-at, so no thread handoff inside wasmtime);
// with prime its first read is started at once (only for a complete
// file: a file stream's read at the end of the file closes it for good).
func (v *Run) DescStream(desc uint32, prime bool) (*Resource, error) {
	return v.r.streamDesc(desc, prime)
}

// CloseFileDesc closes a descriptor OpenFileDesc kept.
func (v *Run) CloseFileDesc(desc uint32) { v.r.closeDesc(desc) }

// DropResource drops a stream the host made and never handed to the
// guest.
func (v *Run) DropResource(s *Resource) { v.r.dropStream(s) }

// MonotonicZero is the instant the monotonic clock counts from, the same
// for wasip2's clock and a provider's.
func MonotonicZero() time.Time { return procStart }

// ErrCallEnded ends a wait the caller cancelled: a provider function
// returning it ends the call as cancelled.
var ErrCallEnded = errors.New("the call ended while the guest was waiting")

// Dropper is a provider's object that acts when the guest drops its last
// handle (an unread response stops downloading).
type Dropper interface{ Drop() }

// Parent is a provider's object with children the guest must drop first
// (a body and its stream).
type Parent interface{ LiveKids() int }

// dropper is an engine object that acts when the guest drops its handle.
type dropper interface{ drop() }

// maxHostObjects caps the host resources one run of Go's wasi:io holds at
// once (each is host memory the guest's own limits do not count); a call
// that would pass it traps, naming the cap. Go's wasi:http keeps its own.
var maxHostObjects = 100_000

func dropObject(o any) {
	switch d := o.(type) {
	case dropper:
		d.drop()
	case Dropper:
		d.Drop()
	}
}

// providerBuiltin is the linked function of a provider's iface#fn, or nil.
// A run without the provider (no RunConfig.GoIO, or a Host without
// Provide) fails the call as not granted.
func providerBuiltin(name string, p Provider, iface, fn string, typ *FuncType) func(*run, []Value) (Value, error) {
	bare := stripVersion(iface)
	impl := p.Func(bare, fn, typ)
	if impl == nil {
		return nil
	}
	full := bare + "#" + fn
	if name != ProviderGoIO {
		return func(r *run, args []Value) (Value, error) {
			s := r.slot(name)
			if s == nil {
				return nil, errNotGranted
			}
			return impl(&s.view, args)
		}
	}
	return func(r *run, args []Value) (Value, error) {
		s := r.slot(name)
		if s == nil {
			return nil, fmt.Errorf("%s: the run's wasi:io is not the host's", full)
		}
		first := r.nextRep + 1
		v, err := impl(&s.view, args)
		r.releaseArgs(args)
		if len(r.objs) > maxHostObjects && r.nextRep >= first {
			for rep := first; rep <= r.nextRep; rep++ {
				dropObject(r.objs[rep])
				delete(r.objs, rep)
			}
			return nil, fmt.Errorf("%s: the component holds %d host resources (streams, pollables, wasi:http values) it has not dropped; the host allows %d",
				full, len(r.objs), maxHostObjects)
		}
		return v, err
	}
}

// grantedBuiltin is the function of the granted provider that answers
// iface#fn, or nil.
func grantedBuiltin(iface, fn string, typ *FuncType) func(*run, []Value) (Value, error) {
	var b func(*run, []Value) (Value, error)
	providers.Range(func(k, v any) bool {
		name, p := k.(string), v.(Provider)
		if name != ProviderGoIO && p.Provides(iface) {
			b = providerBuiltin(name, p, iface, fn, typ)
			return false
		}
		return true
	})
	return b
}

// ProviderState is the per-run state of the provider named name
// (Run.SetState), or nil when the run does not have it: what a provider's
// tests look at.
func (i *Instance) ProviderState(name string) any {
	if s := i.run.slot(name); s != nil {
		return s.state
	}
	return nil
}

// slot is the run's part of the provider named name, or nil.
func (r *run) slot(name string) *provSlot {
	for _, s := range r.provs {
		if s.name == name {
			return s
		}
	}
	return nil
}

// openProvider opens the provider named name for the run.
func (r *run) openProvider(name string, cfg any, w WASI) (WASI, error) {
	p := providerNamed(name)
	if p == nil {
		return w, fmt.Errorf("wasmhost: no %s provider is registered (import its package)", name)
	}
	s := &provSlot{name: name, p: p, cfg: cfg}
	s.view = Run{r: r, slot: s}
	r.provs = append(r.provs, s)
	return p.Open(&s.view, w)
}

// providersOpen opens the run's providers: Go's wasi:io with
// RunConfig.GoIO, then each one the Host grants whose instances the
// component imports.
func (r *run) providersOpen(c *Component, rc RunConfig) (WASI, error) {
	w := rc.WASI
	if rc.GoIO {
		if providerNamed(ProviderGoIO) == nil {
			return w, fmt.Errorf("wasmhost: no %s provider is registered (import internal/wasmhost/wasiio)", ProviderGoIO)
		}
		var err error
		if w, err = r.openProvider(ProviderGoIO, nil, w); err != nil {
			return w, err
		}
		r.goIO = true
	}
	if rc.Host == nil || len(rc.Host.grants) == 0 {
		return w, nil
	}
	names := make([]string, 0, len(rc.Host.grants))
	for name := range rc.Host.grants {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := providerNamed(name)
		if p == nil || name == ProviderGoIO || !c.importsAny(p.Provides) {
			continue
		}
		var err error
		if w, err = r.openProvider(name, rc.Host.grants[name], w); err != nil {
			return w, err
		}
	}
	return w, nil
}

// providersClose closes the providers' per-run states, the last opened
// first.
func (r *run) providersClose() {
	for i := len(r.provs) - 1; i >= 0; i-- {
		if c, ok := r.provs[i].state.(interface{ Close() error }); ok {
			c.Close()
		}
	}
}

// goIOProvides reports whether a run with Go's wasi:io answers the
// instance in Go.
func goIOProvides(name string) (Provider, bool) {
	p := providerNamed(ProviderGoIO)
	return p, p != nil && p.Provides(name)
}

// importsAny reports whether some instance the component imports is one
// provides answers.
func (c *Component) importsAny(provides func(string) bool) bool {
	for _, it := range c.imports {
		if it.Kind == ItemInstance && provides(it.Name) {
			return true
		}
	}
	return false
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
