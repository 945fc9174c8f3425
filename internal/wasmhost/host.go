package wasmhost

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime/cgo"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// HostFunc implements one imported function in Go. args are the guest's
// arguments (see Value for the representation); the returned value must match
// the function's WIT result type (nil for a function without result) and is
// checked before it crosses into wasmtime. A returned error traps the guest
// (the call ends with a *TrapError carrying it). ctx is cancelled at the
// call's deadline plus the grace: a host function that waits must honour it.
// A panic is recovered and treated as an error.
type HostFunc func(ctx context.Context, args []Value) (Value, error)

// Host is the set of Go functions a run grants, keyed by interface and
// function name. Build it before Instantiate and do not change it while runs
// use it; one Host may serve many runs.
type Host struct {
	funcs map[string]HostFunc
	// grants: the providers the Host grants, with their configuration
	// (Provide).
	grants map[string]any
}

// NewHost returns an empty Host: a component importing anything beyond WASI
// gets "capability not granted" errors when it calls it.
func NewHost() *Host { return &Host{funcs: map[string]HostFunc{}} }

// Define grants iface#fn. iface is "namespace:package/interface" with or
// without "@version" ("" for a top-level function import); without a version
// it matches any version the component imports.
func (h *Host) Define(iface, fn string, f HostFunc) {
	h.funcs[iface+"#"+fn] = f
}

func (h *Host) lookup(s *importSlot) HostFunc {
	if h == nil {
		return nil
	}
	if f := h.funcs[s.key]; f != nil {
		return f
	}
	return h.funcs[s.bareKey]
}

// importSlot is one imported function as linked for a component. Its cgo
// handle is the data pointer of the linker's host function, so the callback
// knows which import it serves; the run comes from the store.
type importSlot struct {
	key     string // iface@version#fn, as imported
	bareKey string // iface#fn (version stripped): also the DeadlineError.Call name
	typ     *FuncType
	builtin func(r *run, args []Value) (Value, error)
	handle  cgo.Handle
	le      *linkerEntry
}

func stripVersion(iface string) string {
	if i := strings.LastIndexByte(iface, '@'); i >= 0 {
		return iface[:i]
	}
	return iface
}

// wasip2Provides reports whether wasmtime's add_wasip2 defines the instance.
// Any 0.2.x version links to wasmtime 39's 0.2.6 by semver matching.
func wasip2Provides(name string) bool {
	iface, ver, ok := strings.Cut(name, "@")
	if !ok || !strings.HasPrefix(ver, "0.2.") {
		return false
	}
	switch iface {
	case "wasi:cli/environment", "wasi:cli/exit", "wasi:cli/stdin", "wasi:cli/stdout", "wasi:cli/stderr",
		"wasi:cli/terminal-input", "wasi:cli/terminal-output", "wasi:cli/terminal-stdin",
		"wasi:cli/terminal-stdout", "wasi:cli/terminal-stderr",
		"wasi:clocks/monotonic-clock", "wasi:clocks/wall-clock",
		"wasi:filesystem/types", "wasi:filesystem/preopens",
		"wasi:io/error", "wasi:io/poll", "wasi:io/streams",
		"wasi:random/random", "wasi:random/insecure", "wasi:random/insecure-seed",
		"wasi:sockets/network", "wasi:sockets/instance-network", "wasi:sockets/udp",
		"wasi:sockets/udp-create-socket", "wasi:sockets/tcp", "wasi:sockets/tcp-create-socket",
		"wasi:sockets/ip-name-lookup":
		return true
	}
	return false
}

const clockIface = "wasi:clocks/monotonic-clock"

var hostResourceIDs atomic.Uint32

// linkerEntry is a linker built for one set of imports: wasip2, the
// deadline-aware monotonic clock, and a dispatching host function for every
// other imported function. What a run may actually call is decided per run by
// its Host, so one linker serves every component with the same imports and
// every run of them, and instantiation stays cheap (building a linker with
// wasip2 costs about a millisecond).
type linkerEntry struct {
	eng   *Engine
	once  sync.Once
	l     *C.wasmtime_component_linker_t
	err   error
	slots []*importSlot
	// resIDs maps "<iface>#<resource>" to the host resource type id this
	// linker defined for it.
	resIDs map[string]uint32
	// goIO: the linker of runs where Go answers wasi:io and what hands
	// out its streams and pollables (the wasi:io provider).
	goIO bool
}

// linkerFor is the shared linker of the component's imports for runs
// where Go answers wasi:io (goIO) or wasip2 does: the two differ for the
// same imports.
func (c *Component) linkerFor(goIO bool) (*C.wasmtime_component_linker_t, error) {
	key := c.importKey
	if goIO {
		key = "goio\n" + key
	}
	v, _ := c.eng.linkers.LoadOrStore(key, &linkerEntry{eng: c.eng, goIO: goIO})
	le := v.(*linkerEntry)
	le.once.Do(func() { le.l, le.err = le.build(c.imports) })
	return le.l, le.err
}

func (le *linkerEntry) free() {
	if le.l != nil {
		C.wasmtime_component_linker_delete(le.l)
		le.l = nil
	}
	for _, s := range le.slots {
		s.handle.Delete()
	}
	le.slots = nil
}

func (le *linkerEntry) build(imports []Item) (*C.wasmtime_component_linker_t, error) {
	e := le.eng
	l := C.wasmtime_component_linker_new(e.e)
	if err := C.wasmtime_component_linker_add_wasip2(l); err != nil {
		C.wasmtime_component_linker_delete(l)
		return nil, goErr("wasmhost: add_wasip2", err)
	}
	C.wasmtime_component_linker_allow_shadowing(l, true)
	fail := func(err error) (*C.wasmtime_component_linker_t, error) {
		C.wasmtime_component_linker_delete(l)
		return nil, err
	}
	for _, imp := range imports {
		switch imp.Kind {
		case ItemInstance:
			if _, ok := goIOProvides(imp.Name); le.goIO && ok {
				// Shadows wasip2's instance of the same name.
				if err := le.addDispatchInstance(l, imp); err != nil {
					return fail(err)
				}
				continue
			}
			iface, _, _ := strings.Cut(imp.Name, "@")
			if iface == clockIface && wasip2Provides(imp.Name) {
				if err := le.addClock(l); err != nil {
					return fail(err)
				}
				continue
			}
			if wasip2Provides(imp.Name) {
				continue
			}
			if err := le.addDispatchInstance(l, imp); err != nil {
				return fail(err)
			}
		case ItemFunc:
			if hasAsyncTypes(imp.Func) {
				continue
			}
			root := C.wasmtime_component_linker_root(l)
			err := le.addSlot(root, "", imp.Name, imp.Func, nil)
			C.wasmtime_component_linker_instance_delete(root)
			if err != nil {
				return fail(err)
			}
		}
	}
	return l, nil
}

func (le *linkerEntry) withInstance(l *C.wasmtime_component_linker_t, name string, f func(li *C.wasmtime_component_linker_instance_t) error) error {
	root := C.wasmtime_component_linker_root(l)
	defer C.wasmtime_component_linker_instance_delete(root)
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var li *C.wasmtime_component_linker_instance_t
	if err := C.wasmtime_component_linker_instance_add_instance(root, cs, C.size_t(len(name)), &li); err != nil {
		return goErr("wasmhost: linking "+name, err)
	}
	defer C.wasmtime_component_linker_instance_delete(li)
	return f(li)
}

func (le *linkerEntry) addDispatchInstance(l *C.wasmtime_component_linker_t, imp Item) error {
	return le.withInstance(l, imp.Name, func(li *C.wasmtime_component_linker_instance_t) error {
		for _, x := range imp.Exports {
			switch {
			case x.Kind == ItemFunc:
				if hasAsyncTypes(x.Func) {
					// wasmtime 39's C API aborts the process (todo!()) when a
					// future/stream/error-context value crosses it: leave the
					// import undefined so instantiation fails cleanly.
					continue
				}
				b := grantedBuiltin(imp.Name, x.Name, x.Func)
				if p, ok := goIOProvides(imp.Name); le.goIO && ok {
					b = providerBuiltin(ProviderGoIO, p, imp.Name, x.Name, x.Func)
				}
				if err := le.addSlot(li, imp.Name, x.Name, x.Func, b); err != nil {
					return err
				}
			case x.Kind == ItemResource && !x.Alias:
				// A resource of an interface the host does not implement
				// natively: give it a fresh host type so the component links;
				// its constructors/methods dispatch like any function.
				id := hostResourceIDs.Add(1)
				rt := C.wasmtime_component_resource_type_new_host(C.uint32_t(id))
				if le.resIDs == nil {
					le.resIDs = map[string]uint32{}
				}
				le.resIDs[imp.Name+"#"+x.Name] = id
				slot := &importSlot{key: imp.Name + "#" + x.Name, bareKey: stripVersion(imp.Name) + "#" + x.Name, le: le}
				slot.handle = cgo.NewHandle(slot)
				le.slots = append(le.slots, slot)
				cs := C.CString(x.Name)
				err := C.wh_add_resource(li, cs, C.size_t(len(x.Name)), rt, C.uintptr_t(slot.handle))
				C.free(unsafe.Pointer(cs))
				C.wasmtime_component_resource_type_delete(rt)
				if err != nil {
					return goErr("wasmhost: linking resource "+slot.key, err)
				}
			}
		}
		return nil
	})
}

func (le *linkerEntry) addSlot(li *C.wasmtime_component_linker_instance_t, iface, fn string, typ *FuncType, builtin func(*run, []Value) (Value, error)) error {
	slot := &importSlot{key: iface + "#" + fn, bareKey: stripVersion(iface) + "#" + fn, typ: typ, builtin: builtin, le: le}
	slot.handle = cgo.NewHandle(slot)
	le.slots = append(le.slots, slot)
	cs := C.CString(fn)
	defer C.free(unsafe.Pointer(cs))
	if err := C.wh_add_func(li, cs, C.size_t(len(fn)), C.uintptr_t(slot.handle)); err != nil {
		return goErr("wasmhost: linking "+slot.key, err)
	}
	return nil
}

// runOf finds the Go run of a store.
func runOf(ctx *C.wasmtime_context_t) *run {
	cr := (*C.wh_run)(C.wasmtime_context_get_data(ctx))
	return cgo.Handle(cr.gohandle).Value().(*run)
}

//export whHostCall
func whHostCall(slotH C.uintptr_t, ctx *C.wasmtime_context_t, args *C.wasmtime_component_val_t, nargs C.size_t,
	results *C.wasmtime_component_val_t, nresults C.size_t) (ret *C.wasmtime_error_t) {
	s := cgo.Handle(slotH).Value().(*importSlot)
	r := runOf(ctx)
	defer func() {
		if p := recover(); p != nil {
			ret = r.hostFailed(s, fmt.Errorf("host function %s panicked: %v", s.key, p))
		}
	}()
	in := valSlice(args, nargs)
	goArgs := make([]Value, len(in))
	for i := range in {
		goArgs[i] = lift(&in[i], r)
	}
	var res Value
	var err error
	f := r.host.lookup(s)
	if f == nil && s.builtin != nil {
		res, err = s.builtin(r, goArgs)
		if err == errNotGranted {
			return r.hostFailed(s, &CapabilityError{Name: s.key})
		}
		if err == nil && r.goIO && !r.deadline.IsZero() && time.Now().After(r.deadline) {
			// A Go-owned wasi:io run waits up to the grace (waitEnd): a
			// builtin that returns past the deadline was waited on.
			r.waitedCall = s.bareKey
			r.deadlineStop = true
			return cError("murmur: deadline exceeded while waiting on " + s.bareKey)
		}
	} else {
		if f == nil {
			return r.hostFailed(s, &CapabilityError{Name: s.key})
		}
		r.inHost.Store(&s.bareKey)
		res, err = f(r.ctx(), goArgs)
		r.inHost.Store(nil)
		if !r.deadline.IsZero() && time.Now().After(r.deadline) {
			// The guest was waiting on this call as its deadline passed.
			r.waitedCall = s.bareKey
			r.deadlineStop = true
			return cError("murmur: deadline exceeded while waiting on " + s.bareKey)
		}
	}
	if err != nil {
		if de := (*DeadlineError)(nil); errors.As(err, &de) {
			r.waitedCall = de.Call
			r.deadlineStop = true
			return cError("murmur: " + de.Error())
		}
		if errors.Is(err, ErrCallEnded) && r.parentCtx != nil && r.parentCtx.Err() != nil {
			// The caller cancelled while the guest waited in Go: the same
			// ending as an epoch stop for the cancellation.
			r.c.stop = C.WH_STOP_CANCEL
			return cError("murmur: call cancelled while waiting on " + s.bareKey)
		}
		return r.hostFailed(s, err)
	}
	out := valSlice(results, nresults)
	if s.typ != nil && s.typ.Result != nil {
		if len(out) != 1 {
			return r.hostFailed(s, fmt.Errorf("wasmtime expected %d results", len(out)))
		}
		made := len(r.resources)
		res, err = r.materialize(res, s.typ.Result, s.le)
		if err != nil {
			return r.hostFailed(s, fmt.Errorf("host function %s: %w", s.key, err))
		}
		if err := Check(res, s.typ.Result); err != nil {
			return r.hostFailed(s, fmt.Errorf("host function %s returned an invalid value: %w", s.key, err))
		}
		lower(res, s.typ.Result, &out[0])
		// lower cloned the handles materialize made for the result: the
		// run need not keep them (a driver makes one per stream read).
		r.forgetResources(made)
	} else if res != nil {
		return r.hostFailed(s, fmt.Errorf("host function %s returned a value but has no result", s.key))
	}
	return nil
}

//export whResourceDrop
func whResourceDrop(slotH C.uintptr_t, ctx *C.wasmtime_context_t, rep C.uint32_t) *C.wasmtime_error_t {
	// The guest dropped its last handle: forget the host object (after
	// letting it act: an unread response stops downloading).
	r := runOf(ctx)
	obj := r.objs[uint32(rep)]
	if p, ok := obj.(Parent); ok && p.LiveKids() > 0 {
		// As wasmtime's resource table: a stream outlives neither its
		// pollables' parent nor its body.
		delete(r.objs, uint32(rep))
		err := fmt.Errorf("a resource was dropped while %d resources made from it (its stream or pollables) are alive", p.LiveKids())
		if r.hostErr == nil {
			r.hostErr = err
		}
		return cError(err.Error())
	}
	dropObject(obj)
	delete(r.objs, uint32(rep))
	return nil
}

// errNotGranted is returned by a builtin whose capability the run's Host
// does not grant.
var errNotGranted = errors.New("not granted")

// hostFailed records why a host call failed (so the ending names it) and
// returns the error that traps the guest.
func (r *run) hostFailed(s *importSlot, err error) *C.wasmtime_error_t {
	if r.hostErr == nil {
		r.hostErr = err
	}
	return cError(err.Error())
}

// hasAsyncTypes reports whether a signature mentions future, stream or
// error-context anywhere.
func hasAsyncTypes(f *FuncType) bool {
	if f == nil {
		return false
	}
	for _, p := range f.Params {
		if typeHasAsync(p.Type, 0) {
			return true
		}
	}
	return typeHasAsync(f.Result, 0)
}

func typeHasAsync(t *Type, depth int) bool {
	if t == nil || depth > maxDepth {
		return false
	}
	switch t.Kind {
	case KindFuture, KindStream, KindErrorContext:
		return true
	}
	if typeHasAsync(t.Elem, depth+1) || typeHasAsync(t.Ok, depth+1) || typeHasAsync(t.Err, depth+1) {
		return true
	}
	for _, f := range t.Fields {
		if typeHasAsync(f.Type, depth+1) {
			return true
		}
	}
	for _, c := range t.Cases {
		if typeHasAsync(c.Type, depth+1) {
			return true
		}
	}
	for _, e := range t.Tuple {
		if typeHasAsync(e, depth+1) {
			return true
		}
	}
	return false
}
