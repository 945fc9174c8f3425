package wasmhost

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"
)

// Value conversion between Go and wasmtime's wasmtime_component_val_t.
//
// lower writes a Go value into a C value slot; the value must have passed
// Check against the same type first, which makes lower infallible (a half
// built C value is never left behind). Every allocation is made with
// wasmtime's own allocators because wasmtime frees what it is handed.
// lift copies a C value into Go memory; the C value is not touched.

const (
	cvBool = iota
	cvS8
	cvU8
	cvS16
	cvU16
	cvS32
	cvU32
	cvS64
	cvU64
	cvF32
	cvF64
	cvChar
	cvString
	cvList
	cvRecord
	cvTuple
	cvVariant
	cvEnum
	cvOption
	cvResult
	cvFlags
	cvResource
)

type cval = C.wasmtime_component_val_t

func of(v *cval) unsafe.Pointer { return unsafe.Pointer(&v.of) }

func setName(dst *C.wasm_name_t, s string) {
	if len(s) == 0 {
		C.wasm_byte_vec_new_empty(dst)
		return
	}
	C.wasm_byte_vec_new(dst, C.size_t(len(s)), (*C.wasm_byte_t)(unsafe.Pointer(unsafe.StringData(s))))
}

func goName(n *C.wasm_name_t) string {
	if n.size == 0 {
		return ""
	}
	return string(unsafe.Slice((*byte)(unsafe.Pointer(n.data)), int(n.size)))
}

func valSlice(p *cval, n C.size_t) []cval {
	if n == 0 || p == nil {
		return nil
	}
	return unsafe.Slice(p, int(n))
}

// box moves *tmp into a wasmtime heap value (for option/result/variant payloads).
func box(tmp *cval) *cval { return C.wh_val_box(tmp) }

// setCPtr stores p into a pointer field of a C value (an option, variant or
// result payload) as a plain word. A store through a Go pointer type would
// run the GC write barrier, which reads and shades the field's old contents:
// in memory wasmtime hands out uninitialised (valrecord/vallist/valtuple
// _new_uninit, a host call's results) that is whatever malloc left there,
// sometimes a stale Go heap address, and shading it marks a free object
// ("found pointer to free object", "found bad pointer in Go heap").
// cval has no pointer bits for the GC, so no barrier is needed even when the
// value lives in Go memory.
func setCPtr(slot unsafe.Pointer, p *cval) { *(*uintptr)(slot) = uintptr(unsafe.Pointer(p)) }

func lower(v Value, t *Type, dst *cval) {
	p := of(dst)
	switch t.Kind {
	case KindBool:
		dst.kind = cvBool
		*(*C.bool)(p) = C.bool(v.(bool))
	case KindS8, KindU8:
		bits, _ := intBits(v, t.Kind)
		dst.kind = cvS8
		if t.Kind == KindU8 {
			dst.kind = cvU8
		}
		*(*uint8)(p) = uint8(bits)
	case KindS16, KindU16:
		bits, _ := intBits(v, t.Kind)
		dst.kind = cvS16
		if t.Kind == KindU16 {
			dst.kind = cvU16
		}
		*(*uint16)(p) = uint16(bits)
	case KindS32, KindU32:
		bits, _ := intBits(v, t.Kind)
		dst.kind = cvS32
		if t.Kind == KindU32 {
			dst.kind = cvU32
		}
		*(*uint32)(p) = uint32(bits)
	case KindS64, KindU64:
		bits, _ := intBits(v, t.Kind)
		dst.kind = cvS64
		if t.Kind == KindU64 {
			dst.kind = cvU64
		}
		*(*uint64)(p) = bits
	case KindF32:
		dst.kind = cvF32
		*(*float32)(p) = v.(float32)
	case KindF64:
		dst.kind = cvF64
		*(*float64)(p) = v.(float64)
	case KindChar:
		dst.kind = cvChar
		*(*uint32)(p) = uint32(v.(Char))
	case KindString:
		dst.kind = cvString
		setName((*C.wasm_name_t)(p), v.(string))
	case KindList:
		dst.kind = cvList
		vl := (*C.wasmtime_component_vallist_t)(p)
		if b, ok := v.(Bytes); ok {
			lowerSeq(vl, len(b), func(i int, d *cval) {
				d.kind = cvU8
				*(*uint8)(of(d)) = b[i]
			})
			return
		}
		l := v.(List)
		lowerSeq(vl, len(l), func(i int, d *cval) { lower(l[i], t.Elem, d) })
	case KindTuple:
		tu := v.(Tuple)
		dst.kind = cvTuple
		vl := (*C.wasmtime_component_valtuple_t)(p)
		if len(tu) == 0 {
			C.wasmtime_component_valtuple_new_empty(vl)
			return
		}
		C.wasmtime_component_valtuple_new_uninit(vl, C.size_t(len(tu)))
		items := valSlice(vl.data, vl.size)
		for i := range tu {
			lower(tu[i], t.Tuple[i], &items[i])
		}
	case KindRecord:
		r := v.(Record)
		dst.kind = cvRecord
		vr := (*C.wasmtime_component_valrecord_t)(p)
		if len(r) == 0 {
			C.wasmtime_component_valrecord_new_empty(vr)
			return
		}
		C.wasmtime_component_valrecord_new_uninit(vr, C.size_t(len(r)))
		ents := unsafe.Slice(vr.data, len(r))
		for i := range r {
			setName(&ents[i].name, t.Fields[i].Name)
			lower(r[i].Value, t.Fields[i].Type, &ents[i].val)
		}
	case KindVariant:
		va := v.(Variant)
		dst.kind = cvVariant
		vv := (*C.wasmtime_component_valvariant_t)(p)
		setName(&vv.discriminant, va.Case)
		setCPtr(unsafe.Pointer(&vv.val), nil)
		if c := caseOf(t, va.Case); c.Type != nil {
			var tmp cval
			lower(va.Value, c.Type, &tmp)
			setCPtr(unsafe.Pointer(&vv.val), box(&tmp))
		}
	case KindEnum:
		dst.kind = cvEnum
		setName((*C.wasm_name_t)(p), string(v.(Enum)))
	case KindOption:
		o := v.(Option)
		dst.kind = cvOption
		setCPtr(p, nil)
		if o.Some {
			var tmp cval
			lower(o.Value, t.Elem, &tmp)
			setCPtr(p, box(&tmp))
		}
	case KindResult:
		r := v.(Result)
		dst.kind = cvResult
		vr := (*C.wasmtime_component_valresult_t)(p)
		vr.is_ok = C.bool(!r.IsErr)
		setCPtr(unsafe.Pointer(&vr.val), nil)
		side := t.Ok
		if r.IsErr {
			side = t.Err
		}
		if side != nil {
			var tmp cval
			lower(r.Value, side, &tmp)
			setCPtr(unsafe.Pointer(&vr.val), box(&tmp))
		}
	case KindFlags:
		f := v.(Flags)
		dst.kind = cvFlags
		vf := (*C.wasmtime_component_valflags_t)(p)
		if len(f) == 0 {
			C.wasmtime_component_valflags_new_empty(vf)
			return
		}
		C.wasmtime_component_valflags_new_uninit(vf, C.size_t(len(f)))
		names := unsafe.Slice(vf.data, len(f))
		for i, n := range f {
			setName(&names[i], n)
		}
	case KindOwn, KindBorrow:
		r := v.(*Resource)
		dst.kind = cvResource
		*(**C.wasmtime_component_resource_any_t)(p) = C.wasmtime_component_resource_any_clone(r.p)
	default:
		panic("wasmhost: lower of unchecked kind " + t.Kind.String())
	}
}

func lowerSeq(vl *C.wasmtime_component_vallist_t, n int, each func(int, *cval)) {
	if n == 0 {
		C.wasmtime_component_vallist_new_empty(vl)
		return
	}
	C.wasmtime_component_vallist_new_uninit(vl, C.size_t(n))
	items := valSlice(vl.data, vl.size)
	for i := range items {
		each(i, &items[i])
	}
}

// lift copies a C value into Go. Resources are cloned and owned by r (nil r:
// resources are refused, returned as nil).
func lift(src *cval, r *run) Value {
	p := of(src)
	switch src.kind {
	case cvBool:
		return bool(*(*C.bool)(p))
	case cvS8:
		return *(*int8)(p)
	case cvU8:
		return *(*uint8)(p)
	case cvS16:
		return *(*int16)(p)
	case cvU16:
		return *(*uint16)(p)
	case cvS32:
		return *(*int32)(p)
	case cvU32:
		return *(*uint32)(p)
	case cvS64:
		return *(*int64)(p)
	case cvU64:
		return *(*uint64)(p)
	case cvF32:
		return *(*float32)(p)
	case cvF64:
		return *(*float64)(p)
	case cvChar:
		return Char(*(*uint32)(p))
	case cvString:
		return goName((*C.wasm_name_t)(p))
	case cvList:
		vl := (*C.wasmtime_component_vallist_t)(p)
		items := valSlice(vl.data, vl.size)
		if len(items) > 0 && items[0].kind == cvU8 {
			// A list's elements share one type: list<u8>.
			out := make(Bytes, len(items))
			for i := range items {
				out[i] = *(*uint8)(of(&items[i]))
			}
			return out
		}
		out := make(List, len(items))
		for i := range items {
			out[i] = lift(&items[i], r)
		}
		return out
	case cvTuple:
		vl := (*C.wasmtime_component_valtuple_t)(p)
		items := valSlice(vl.data, vl.size)
		out := make(Tuple, len(items))
		for i := range items {
			out[i] = lift(&items[i], r)
		}
		return out
	case cvRecord:
		vr := (*C.wasmtime_component_valrecord_t)(p)
		if vr.size == 0 {
			return Record{}
		}
		ents := unsafe.Slice(vr.data, int(vr.size))
		out := make(Record, len(ents))
		for i := range ents {
			out[i] = FieldValue{Name: goName(&ents[i].name), Value: lift(&ents[i].val, r)}
		}
		return out
	case cvVariant:
		vv := (*C.wasmtime_component_valvariant_t)(p)
		out := Variant{Case: goName(&vv.discriminant)}
		if vv.val != nil {
			out.Value = lift(vv.val, r)
		}
		return out
	case cvEnum:
		return Enum(goName((*C.wasm_name_t)(p)))
	case cvOption:
		pv := *(**cval)(p)
		if pv == nil {
			return None
		}
		return Some(lift(pv, r))
	case cvResult:
		vr := (*C.wasmtime_component_valresult_t)(p)
		out := Result{IsErr: !bool(vr.is_ok)}
		if vr.val != nil {
			out.Value = lift(vr.val, r)
		}
		return out
	case cvFlags:
		vf := (*C.wasmtime_component_valflags_t)(p)
		out := make(Flags, int(vf.size))
		if vf.size > 0 {
			names := unsafe.Slice(vf.data, int(vf.size))
			for i := range names {
				out[i] = goName(&names[i])
			}
		}
		return out
	case cvResource:
		if r == nil {
			return nil
		}
		any := *(**C.wasmtime_component_resource_any_t)(p)
		return r.adoptResource(C.wasmtime_component_resource_any_clone(any))
	}
	return nil
}

// deleteVals releases the contents of C values the host owns.
func deleteVals(vs []cval) {
	for i := range vs {
		C.wasmtime_component_val_delete(&vs[i])
	}
}
