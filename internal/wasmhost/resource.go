package wasmhost

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
)

// Host-defined resources. Resources of interfaces that WASI does not provide
// (e.g. wasi:http/types) are linked as host resource types; a host function
// creates a handle by returning HostResource{Rep} where its WIT result has
// own<R> or borrow<R>, and recognises handles the guest passes back with
// (*Resource).HostRep. Per-run objects behind the reps live in the run's
// table (newObj/obj); the guest dropping its handle removes them.

// HostResource is a new handle to a host-defined resource: Rep identifies the
// object in the host (see NewObject). The resource type is the one the
// function's WIT signature names.
type HostResource struct{ Rep uint32 }

// HostRep returns the representation of a host-defined resource handle, or
// false when the handle is not one of the host's.
func (res *Resource) HostRep() (uint32, bool) {
	if res.closed() || res.run == nil || res.run.cctx == nil {
		return 0, false
	}
	var h *C.wasmtime_component_resource_host_t
	if err := C.wasmtime_component_resource_any_to_host(res.run.cctx, res.p, &h); err != nil {
		errorText(err)
		return 0, false
	}
	rep := uint32(C.wasmtime_component_resource_host_rep(h))
	C.wasmtime_component_resource_host_delete(h)
	return rep, true
}

func (r *run) newObj(v any) HostResource {
	if r.objs == nil {
		r.objs = map[uint32]any{}
	}
	r.nextRep++
	r.objs[r.nextRep] = v
	return HostResource{Rep: r.nextRep}
}

// objOf returns the run's object behind a host resource handle.
func (r *run) objOf(v Value) (any, bool) {
	res, ok := v.(*Resource)
	if !ok {
		return nil, false
	}
	rep, ok := res.HostRep()
	if !ok {
		return nil, false
	}
	o, ok := r.objs[rep]
	return o, ok
}

// materialize turns HostResource values inside v into real handles of the
// resource types the linker defined, following t.
func (r *run) materialize(v Value, t *Type, le *linkerEntry) (Value, error) {
	if t == nil || v == nil {
		return v, nil
	}
	switch t.Kind {
	case KindOwn, KindBorrow:
		if res, ok := v.(*Resource); ok {
			if res.run != r {
				// A handle of another store would be misinterpreted (or
				// refused deep inside wasmtime).
				return nil, fmt.Errorf("resource handle belongs to another instance")
			}
			return v, nil
		}
		hr, ok := v.(HostResource)
		if !ok {
			return v, nil
		}
		var id uint32
		if le != nil {
			id, ok = le.resIDs[t.resKey]
		}
		if !ok {
			return nil, fmt.Errorf("resource %s is not defined by the host", t)
		}
		h := C.wasmtime_component_resource_host_new(C.bool(t.Kind == KindOwn), C.uint32_t(hr.Rep), C.uint32_t(id))
		var any *C.wasmtime_component_resource_any_t
		err := C.wasmtime_component_resource_host_to_any(r.cctx, h, &any)
		C.wasmtime_component_resource_host_delete(h)
		if err != nil {
			return nil, fmt.Errorf("creating a %s handle: %s", t, errorText(err))
		}
		return r.adoptResource(any), nil
	case KindResult:
		res, ok := v.(Result)
		if !ok {
			return v, nil
		}
		side := t.Ok
		if res.IsErr {
			side = t.Err
		}
		x, err := r.materialize(res.Value, side, le)
		res.Value = x
		return res, err
	case KindOption:
		o, ok := v.(Option)
		if !ok || !o.Some {
			return v, nil
		}
		x, err := r.materialize(o.Value, t.Elem, le)
		o.Value = x
		return o, err
	case KindList:
		l, ok := v.(List)
		if !ok {
			return v, nil
		}
		out := make(List, len(l))
		for i := range l {
			x, err := r.materialize(l[i], t.Elem, le)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case KindTuple:
		l, ok := v.(Tuple)
		if !ok || len(l) != len(t.Tuple) {
			return v, nil
		}
		out := make(Tuple, len(l))
		for i := range l {
			x, err := r.materialize(l[i], t.Tuple[i], le)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case KindRecord:
		rec, ok := v.(Record)
		if !ok || len(rec) != len(t.Fields) {
			return v, nil
		}
		out := make(Record, len(rec))
		for i := range rec {
			x, err := r.materialize(rec[i].Value, t.Fields[i].Type, le)
			if err != nil {
				return nil, err
			}
			out[i] = FieldValue{rec[i].Name, x}
		}
		return out, nil
	case KindVariant:
		va, ok := v.(Variant)
		if !ok {
			return v, nil
		}
		if c := caseOf(t, va.Case); c != nil && c.Type != nil {
			x, err := r.materialize(va.Value, c.Type, le)
			va.Value = x
			return va, err
		}
	}
	return v, nil
}

// forgetResources frees the run's handles from index from on, which no
// Value still refers to.
func (r *run) forgetResources(from int) {
	if from >= len(r.resources) {
		return
	}
	for _, res := range r.resources[from:] {
		C.wasmtime_component_resource_any_delete(res.p)
		res.p = nil
	}
	clear(r.resources[from:])
	r.resources = r.resources[:from]
}
