package wasmhost

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"time"
)

// Host interfaces plugged into the engine. A Provider answers some WASI
// instances in Go for the runs that ask for it (Go's wasi:io,
// internal/wasmhost/wasiio, for runs with RunConfig.GoIO): the linker
// shadows wasip2's instance of the same name with the provider's
// functions, the run keeps the provider's per-run state, and the
// provider's objects live in the run's resource table (Run). Providers
// register at init (Register); whoever builds runs imports them.

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
	// configuration, and returns what of it wasip2 still answers.
	Open(r *Run, w WASI) (WASI, error)
}

// ProviderFunc is a provider's host function: args are the guest's
// arguments, the result is checked and lowered as a HostFunc's. An error
// traps the guest, except a DeadlineError and a cancelled wait, which end
// the call as waiting past its deadline or cancelled.
type ProviderFunc func(r *Run, args []Value) (Value, error)

// ProviderGoIO is the name Go's wasi:io registers under: runs with
// RunConfig.GoIO use it.
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

// Run is a provider's view of one run: its table of host objects, its
// per-run state, and the engine's waits, which honour the call's deadline
// and cancellation. It is valid during the run's host calls, on the
// call's thread.
type Run struct{ r *run }

// NewObject puts o in the run's table: the handle a host function returns
// for an own<R> or borrow<R> of a host-defined resource. When the guest
// drops its last handle, an engine stream or pollable acts on it, and an
// object embedding Family with live children traps the guest.
func (v *Run) NewObject(o any) HostResource { return v.r.newObj(o) }

// Object is the object behind a handle the guest passed, if it is one of
// the run's.
func (v *Run) Object(h Value) (any, bool) { return v.r.objOf(h) }

// State is what the provider's Open set.
func (v *Run) State() any { return v.r.provState }

// SetState keeps s for the run; it is closed with the run if it has a
// Close method.
func (v *Run) SetState(s any) { v.r.provState = s }

// WaitAny blocks until one of ps is ready and returns the indices of those
// that are, or the call's ending: a waiting DeadlineError past the
// deadline, or a cancelled wait.
func (v *Run) WaitAny(ps []*Pollable) ([]uint32, error) { return v.r.waitAny(ps) }

// Timer is a pollable ready at at, for the monotonic clock's fn
// ("subscribe-duration"); a wait on it past the call's deadline is a
// clock wait, as on wasip2's clock.
func (v *Run) Timer(at time.Time, fn string) *Pollable { return v.r.timerPollable(at, fn) }

// MonotonicZero is the instant the monotonic clock counts from, the same
// for wasip2's clock and a provider's.
func MonotonicZero() time.Time { return procStart }

// providerBuiltin is the linked function of a provider's iface#fn, or nil.
func providerBuiltin(p Provider, iface, fn string, typ *FuncType) func(*run, []Value) (Value, error) {
	bare := stripVersion(iface)
	impl := p.Func(bare, fn, typ)
	if impl == nil {
		return nil
	}
	name := bare + "#" + fn
	return func(r *run, args []Value) (Value, error) {
		if !r.goIO {
			return nil, fmt.Errorf("%s: the run's wasi:io is not the host's", name)
		}
		first := r.nextRep + 1
		v, err := impl(&r.view, args)
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

// providerOpen opens the run's wasi:io provider (RunConfig.GoIO).
func (r *run) providerOpen(w WASI) (WASI, error) {
	p := providerNamed(ProviderGoIO)
	if p == nil {
		return w, fmt.Errorf("wasmhost: no %s provider is registered (import internal/wasmhost/wasiio)", ProviderGoIO)
	}
	w, err := p.Open(&r.view, w)
	if err != nil {
		return w, err
	}
	r.goIO = true
	return w, nil
}

// providerClose closes the provider's per-run state.
func (r *run) providerClose() {
	if c, ok := r.provState.(interface{ Close() error }); ok {
		c.Close()
	}
}

// goIOProvides reports whether a run with Go's wasi:io answers the
// instance in Go.
func goIOProvides(name string) (Provider, bool) {
	p := providerNamed(ProviderGoIO)
	return p, p != nil && p.Provides(name)
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
