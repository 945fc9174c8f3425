package wasihttp

import (
	"encoding/binary"
	"strings"

	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp/h1"
)

// listArg reads a list argument at a[i]: (ptr, len) as two u32 when the
// declaration was rewritten, else nothing (ok false).
func listArg(a []wasmhost.Value, i int) (ptr, n uint32, ok bool) {
	if len(a) < i+2 {
		return 0, 0, false
	}
	p, ok1 := a[i].(uint32)
	l, ok2 := a[i+1].(uint32)
	return p, l, ok1 && ok2
}

// guestValue reads the bytes of one field value at (ptr, n), refused
// (ok false) past budget without copying anything.
func (r *run) guestValue(ptr, n uint32, budget int) (string, bool) {
	if int64(n) > int64(budget) {
		return "", false
	}
	b, ok := r.GuestRead(ptr, n)
	return string(b), ok
}

// fieldsAppendPtr is [method]fields.append with its value as (ptr, len).
func fieldsAppendPtr(r *run, f *httpFields, name string, ptr, n uint32) wasmhost.Result {
	s, ok := r.guestValue(ptr, n, maxFieldsBytes-f.size()-len(name))
	if !ok || !h1.ValidFieldValue(s) {
		return headerErr("invalid-syntax")
	}
	f.entries = append(f.entries, [2]string{name, s})
	return okUnit
}

// fieldsSetPtr is [method]fields.set with its list of values as (ptr, len):
// each element is a value's (ptr, len).
func fieldsSetPtr(r *run, f *httpFields, name string, ptr, count uint32) wasmhost.Result {
	// Every entry costs at least its name: more than the bound allows is
	// refused before the list is read.
	if uint64(count)*uint64(len(name)) > maxFieldsBytes || int64(ptr)+int64(count)*8 > 1<<32 {
		return headerErr("invalid-syntax")
	}
	budget := maxFieldsBytes - f.size()
	for _, e := range f.entries {
		if strings.EqualFold(e[0], name) {
			budget += len(e[0]) + len(e[1]) // replaced by the set
		}
	}
	var add [][2]string
	bad := false
	ok := r.GuestElems(ptr, count, 8, func(e []byte) bool {
		budget -= len(name)
		s, ok := r.guestValue(binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint32(e[4:]), budget)
		if !ok || !h1.ValidFieldValue(s) {
			bad = true
			return false
		}
		budget -= len(s)
		add = append(add, [2]string{name, s})
		return true
	})
	if !ok || bad {
		return headerErr("invalid-syntax")
	}
	f.remove(name)
	f.entries = append(f.entries, add...)
	return okUnit
}

// fieldsFromListPtr is [static]fields.from-list with its entries as (ptr,
// len): each element is (name ptr, name len, value ptr, value len).
func fieldsFromListPtr(r *run, ptr, count uint32) (wasmhost.Value, error) {
	if count > maxFieldsBytes || int64(ptr)+int64(count)*16 > 1<<32 {
		return headerErr("invalid-syntax"), nil
	}
	f := &httpFields{}
	budget := maxFieldsBytes
	var refusal string
	ok := r.GuestElems(ptr, count, 16, func(e []byte) bool {
		name, ok := r.guestValue(binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint32(e[4:]), budget)
		if !ok || !h1.ValidFieldName(name) {
			refusal = "invalid-syntax"
			return false
		}
		budget -= len(name)
		val, ok := r.guestValue(binary.LittleEndian.Uint32(e[8:]), binary.LittleEndian.Uint32(e[12:]), budget)
		if !ok || !h1.ValidFieldValue(val) {
			refusal = "invalid-syntax"
			return false
		}
		if h1.ForbiddenField(name) {
			refusal = "forbidden"
			return false
		}
		budget -= len(val)
		f.entries = append(f.entries, [2]string{name, val})
		return true
	})
	if !ok {
		refusal = "invalid-syntax"
	}
	if refusal != "" {
		return headerErr(refusal), nil
	}
	return wasmhost.Ok(r.NewObject(f)), nil
}
