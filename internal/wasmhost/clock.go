package wasmhost

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"math"
	"time"
)

// Deadline-aware wasi:clocks/monotonic-clock.
//
// Epoch interruption only stops a guest running its own code; a guest
// blocked in a WASI clock wait is stuck in wasmtime's host code. The only
// unbounded blocking source in WASI 0.2 as configured here (stdin is bytes,
// sockets are denied) is a clock subscription, so the component's linker
// shadows monotonic-clock: subscriptions are capped at the remaining
// deadline plus the grace, and a subscription reaching past the deadline is
// recorded so the ending reports "waiting on
// wasi:clocks/monotonic-clock#subscribe-duration". The pollable returned to
// the guest must be wasip2's own resource type, which only wasip2 can mint:
// a tiny helper component, instantiated in the same store through a plain
// wasip2 linker, re-exports subscribe-duration for us.

const clockHelperWAT = `(component
  (import "wasi:io/poll@0.2.6" (instance $poll (export "pollable" (type (sub resource)))))
  (alias export $poll "pollable" (type $pollable))
  (import "wasi:clocks/monotonic-clock@0.2.6" (instance $clock
    (export "pollable" (type (eq $pollable)))
    (export "subscribe-duration" (func (param "when" u64) (result (own $pollable))))))
  (core func $lowered (canon lower (func $clock "subscribe-duration")))
  (core module $fwd
    (import "host" "subscribe" (func $s (param i64) (result i32)))
    (export "subscribe" (func $s)))
  (core instance $fwd_i (instantiate $fwd (with "host" (instance (export "subscribe" (func $lowered))))))
  (func (export "subscribe-duration") (param "when" u64) (result (own $pollable))
    (canon lift (core func $fwd_i "subscribe"))))`

var procStart = time.Now()

type helperInst struct {
	inst C.wasmtime_component_instance_t
	fn   C.wasmtime_component_func_t
}

// clockHelper compiles the helper once per engine, through the compile
// cache: a run pays a cache load (~0.1 ms), not a Cranelift compile.
func (e *Engine) clockHelper() (*Component, error) {
	e.helperOnce.Do(func() {
		c, err := e.compile([]byte(clockHelperWAT), CompileOptions{}, false)
		if err != nil {
			e.helperErr = fmt.Errorf("wasmhost: compiling the clock helper: %w", err)
			return
		}
		e.helper = c
	})
	return e.helper, e.helperErr
}

func (le *linkerEntry) addClock(l *C.wasmtime_component_linker_t) error {
	own := &Type{Kind: KindOwn, Resource: "pollable"}
	return le.withInstance(l, clockIface+"@0.2.6", func(li *C.wasmtime_component_linker_instance_t) error {
		fns := []struct {
			name string
			typ  *FuncType
			f    func(*run, []Value) (Value, error)
		}{
			{"now", &FuncType{Result: tU64}, func(*run, []Value) (Value, error) {
				return uint64(time.Since(procStart)), nil
			}},
			{"resolution", &FuncType{Result: tU64}, func(*run, []Value) (Value, error) { return uint64(1), nil }},
			{"subscribe-duration", &FuncType{Params: []Param{{"when", tU64}}, Result: own}, func(r *run, a []Value) (Value, error) {
				return r.subscribe(a[0].(uint64), "subscribe-duration")
			}},
			{"subscribe-instant", &FuncType{Params: []Param{{"when", tU64}}, Result: own}, func(r *run, a []Value) (Value, error) {
				now := uint64(time.Since(procStart))
				var d uint64
				if w := a[0].(uint64); w > now {
					d = w - now
				}
				return r.subscribe(d, "subscribe-instant")
			}},
		}
		for _, f := range fns {
			if err := le.addSlot(li, clockIface+"@0.2.6", f.name, f.typ, f.f); err != nil {
				return err
			}
		}
		return nil
	})
}

// subscribe caps a clock wait at the remaining deadline plus the grace and
// returns a real wasip2 pollable for it.
func (r *run) subscribe(ns uint64, fn string) (Value, error) {
	d := time.Duration(math.MaxInt64)
	if ns < math.MaxInt64 {
		d = time.Duration(ns)
	}
	if !r.deadline.IsZero() {
		remaining := time.Until(r.deadline)
		if d > remaining {
			r.waitedCall = clockIface + "#" + fn
			limit := remaining + r.limits.Grace
			if limit < 0 {
				limit = 0
			}
			if d > limit {
				d = limit
			}
		}
	}
	if r.helper == nil {
		h, err := r.eng.clockHelper()
		if err != nil {
			return nil, err
		}
		hi := &helperInst{}
		if cerr := C.wh_instantiate(r.eng.plainWasiLinker(), r.cctx, h.c, &hi.inst, r.c); cerr != nil {
			return nil, goErr("wasmhost: instantiating the clock helper", cerr)
		}
		f, err := h.exportFunc("", "subscribe-duration")
		if err != nil {
			return nil, err
		}
		if !C.wasmtime_component_instance_get_func(&hi.inst, r.cctx, f.idx, &hi.fn) {
			return nil, errNoHelper
		}
		r.helper = hi
	}
	var arg, res [1]cval
	lower(uint64(d), tU64, &arg[0])
	if cerr := C.wasmtime_component_func_call(&r.helper.fn, r.cctx, &arg[0], 1, &res[0], 1); cerr != nil {
		return nil, goErr("wasmhost: clock helper", cerr)
	}
	out := lift(&res[0], r)
	deleteVals(res[:])
	if cerr := C.wasmtime_component_func_post_return(&r.helper.fn, r.cctx); cerr != nil {
		return nil, goErr("wasmhost: clock helper post-return", cerr)
	}
	if _, ok := out.(*Resource); !ok {
		return nil, fmt.Errorf("wasmhost: clock helper returned %T", out)
	}
	return out, nil
}
