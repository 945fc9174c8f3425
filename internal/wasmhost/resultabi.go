package wasmhost

// Bounding a tool's result before it is lifted.
//
// A tool's run returns a record whose metadata is a list<tuple<string,
// string>>. wasmtime 39's C API lifts a call's result whole, a Rust value and
// then a C value per element, before the host sees any of it: a result of a
// million pairs ("k", "v", 16 bytes each in the guest) cost about 1 GB in
// the host. The record is too big to be returned flat, so the canonical ABI
// returns it as one i32, the address of a return area in the guest's memory.
// Before compiling, the function type of every tool run the component
// declares — direct func types (not instance-type declarations, which are
// imports) with the single parameter "input" and a non-primitive result, in
// a component that exports murmur:tool/run — gets u32 as its result: the
// guest's code, which returns that address, is untouched, and wasmtime hands
// the host the address. The host reads the record from the guest's memory
// itself (readResult), before post-return frees it, with a bound on what a
// list may cost (MaxResultListBytes): elements past it are handed to the
// run's ResultSpill instead of being kept. The export is reported with its
// declared type (toolResultType), so nothing above the engine sees the
// rewrite. A component whose declarations this rewrite cannot make
// consistent fails to compile rewritten and is compiled as it was (its
// result is then lifted by wasmtime, unbounded, as before).

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxResultListBytes bounds what one list in a tool's result read from
// memory may keep: each element costs its canonical ABI size plus the bytes
// of the strings it holds. Elements past the bound are handed to
// RunConfig.ResultSpill (or dropped). 64 KiB of metadata is about 4,000
// short pairs; a continuation id is one.
const MaxResultListBytes = 64 << 10

// liftToolResults turns the rewrite off (a benchmark's "before").
var liftToolResults = false

// rewrites names the rewrites Compile applies before wasmtime sees a
// component (fieldsabi.go, this file), for the compile cache's entry names:
// code compiled under other rewrites is never loaded.
func rewrites() string {
	if liftToolResults {
		return "fields-abi-1"
	}
	return "fields-abi-1,tool-result-abi-1"
}

// toolRunIface is the exported interface whose run is read from memory.
const toolRunIface = "murmur:tool/run@0.1."

// toolResultType is the declared result of murmur:tool/run#run.
func toolResultType() *Type {
	optStr := &Type{Kind: KindOption, Elem: &Type{Kind: KindString}}
	return &Type{Kind: KindRecord, Fields: []Field{
		{Name: "status", Type: &Type{Kind: KindEnum, Names: []string{"passed", "failed", "error"}}},
		{Name: "summary", Type: optStr},
		{Name: "data", Type: optStr},
		{Name: "data-path", Type: optStr},
		{Name: "truncated", Type: &Type{Kind: KindBool}},
		{Name: "metadata", Type: &Type{Kind: KindList, Elem: &Type{Kind: KindTuple, Tuple: []*Type{{Kind: KindString}, {Kind: KindString}}}}},
	}}
}

// boundResultABI returns the component with the result of each tool run
// type it declares replaced by u32, or nil when it exports no tool run or
// nothing was rewritten.
func boundResultABI(wasm []byte) []byte {
	if len(wasm) < 8 || wasm[4] != 0x0d || !exportsToolRun(wasm) {
		return nil
	}
	out, changed, err := resultComponent(wasm)
	if err != nil || !changed {
		return nil
	}
	return out
}

// exportsToolRun tells whether the component's own export section names a
// murmur:tool/run instance.
func exportsToolRun(b []byte) bool {
	secs, err := readSections(b)
	if err != nil {
		return false
	}
	for _, s := range secs {
		if s.id != 11 {
			continue
		}
		r := &cr{b: s.body}
		n := r.u32()
		for i := uint32(0); i < n && r.err == nil; i++ {
			name := r.externName()
			if strings.HasPrefix(name, toolRunIface) {
				return true
			}
			if r.byte() == 0x00 { // sort: core sort takes a second byte
				r.byte()
			}
			r.u32()
			if r.byte() == 0x01 {
				r.externDesc()
			}
		}
	}
	return false
}

// resultComponent rewrites the type sections (7) of a component and of its
// nested components (4).
func resultComponent(b []byte) ([]byte, bool, error) {
	return rewriteTypeSections(b, resultTypeSection)
}

// resultTypeSection rewrites each direct func type of a type section that
// has the one parameter "input" and a result given by type index.
func resultTypeSection(b []byte) ([]byte, bool, error) {
	r := &cr{b: b}
	n := r.u32()
	out := binary.AppendUvarint(nil, uint64(n))
	changed := false
	for i := uint32(0); i < n && r.err == nil; i++ {
		start := r.pos
		if r.pos < len(b) && b[r.pos] == 0x40 {
			if nb := toolRunFunc(r); nb != nil {
				out, changed = append(out, nb...), true
				continue
			}
			r.pos = start
		}
		r.deftype(func(byte, []byte) ([]byte, error) { return nil, nil })
		if r.err != nil {
			break
		}
		out = append(out, b[start:r.pos]...)
	}
	if r.err != nil {
		return nil, false, r.err
	}
	if r.pos != len(b) {
		return nil, false, errFieldsABI
	}
	return out, changed, nil
}

// toolRunFunc reads a func type at r.pos; when it is (input: T) -> U with U
// a type index it returns the type with u32 as its result, else nil (r.pos
// is then the caller's to reset).
func toolRunFunc(r *cr) []byte {
	start := r.pos
	r.byte() // 0x40
	if r.u32() != 1 || r.name() != "input" {
		return nil
	}
	r.valtype()
	resPos := r.pos
	if r.byte() != 0x00 || r.err != nil || r.pos >= len(r.b) {
		return nil
	}
	if c := r.b[r.pos]; c >= 0x40 && c < 0x80 {
		return nil // a primitive result: not a tool run
	}
	r.valtype()
	if r.err != nil {
		return nil
	}
	out := append([]byte{}, r.b[start:resPos]...)
	return append(out, 0x00, 0x79) // result: u32
}

// isToolRunExport tells whether iface#fn with typ is a tool run whose
// declaration was rewritten (its result is the u32 address).
func isToolRunExport(iface, fn string, typ *FuncType) bool {
	return strings.HasPrefix(iface, toolRunIface) && fn == "run" && typ != nil &&
		len(typ.Params) == 1 && typ.Params[0].Name == "input" &&
		typ.Result != nil && typ.Result.Kind == KindU32
}

// declareToolRuns puts the declared result back on each rewritten tool run
// export and returns their "iface#fn" keys.
func declareToolRuns(exports []Item) map[string]bool {
	var keys map[string]bool
	for i := range exports {
		e := &exports[i]
		if e.Kind != ItemInstance {
			continue
		}
		for j := range e.Exports {
			x := &e.Exports[j]
			if x.Kind != ItemFunc || !isToolRunExport(e.Name, x.Name, x.Func) {
				continue
			}
			x.Func = &FuncType{Params: x.Func.Params, Result: toolResultType()}
			if keys == nil {
				keys = map[string]bool{}
			}
			keys[e.Name+"#"+x.Name] = true
		}
	}
	return keys
}

// memReader reads canonical ABI values from a run's memory.
type memReader struct {
	r     *run
	spill func(Value)
	err   error
}

func (m *memReader) fail(format string, a ...any) {
	if m.err == nil {
		m.err = &TrapError{Message: fmt.Sprintf(format, a...)}
	}
}

// readResult reads a value of type t at ptr of the run's memory; list
// elements past MaxResultListBytes go to spill.
func (r *run) readResult(t *Type, ptr uint32, spill func(Value)) (Value, error) {
	m := &memReader{r: r, spill: spill}
	if ptr%abiAlign(t) != 0 {
		return nil, &TrapError{Message: "tool result: misaligned return area"}
	}
	b, ok := r.guestRead(ptr, abiSize(t))
	if !ok {
		return nil, &TrapError{Message: "tool result: return area outside the guest's memory"}
	}
	v := m.value(t, b, 0)
	return v, m.err
}

// value decodes t from b, whose bytes are the value's flat layout; depth
// bounds nesting.
func (m *memReader) value(t *Type, b []byte, depth int) Value {
	if m.err != nil {
		return nil
	}
	if depth > maxDepth {
		m.fail("tool result: nested too deeply")
		return nil
	}
	switch t.Kind {
	case KindBool:
		return b[0] != 0
	case KindS8:
		return int8(b[0])
	case KindU8:
		return b[0]
	case KindS16:
		return int16(binary.LittleEndian.Uint16(b))
	case KindU16:
		return binary.LittleEndian.Uint16(b)
	case KindS32:
		return int32(binary.LittleEndian.Uint32(b))
	case KindU32:
		return binary.LittleEndian.Uint32(b)
	case KindS64:
		return int64(binary.LittleEndian.Uint64(b))
	case KindU64:
		return binary.LittleEndian.Uint64(b)
	case KindString:
		s, _ := m.str(b)
		return s
	case KindEnum:
		d := discriminant(b, len(t.Names))
		if d >= uint32(len(t.Names)) {
			m.fail("tool result: enum discriminant %d out of range", d)
			return nil
		}
		return Enum(t.Names[d])
	case KindOption:
		switch b[0] {
		case 0:
			return None
		case 1:
			off := alignTo(1, abiAlign(t.Elem))
			return Some(m.value(t.Elem, b[off:], depth+1))
		}
		m.fail("tool result: option discriminant %d", b[0])
		return nil
	case KindRecord:
		rec := make(Record, len(t.Fields))
		off := uint32(0)
		for i, f := range t.Fields {
			off = alignTo(off, abiAlign(f.Type))
			rec[i] = FieldValue{Name: f.Name, Value: m.value(f.Type, b[off:], depth+1)}
			off += abiSize(f.Type)
		}
		return rec
	case KindTuple:
		tup := make(Tuple, len(t.Tuple))
		off := uint32(0)
		for i, et := range t.Tuple {
			off = alignTo(off, abiAlign(et))
			tup[i] = m.value(et, b[off:], depth+1)
			off += abiSize(et)
		}
		return tup
	case KindList:
		return m.list(t.Elem, binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), depth)
	}
	m.fail("tool result: %s is not read from memory", t.Kind)
	return nil
}

// list reads count elements of t at ptr, keeping them while their cost stays
// within MaxResultListBytes.
func (m *memReader) list(t *Type, ptr, count uint32, depth int) Value {
	size := abiSize(t)
	if uint64(ptr)+uint64(count)*uint64(size) > 1<<32 || ptr%abiAlign(t) != 0 {
		m.fail("tool result: list outside the guest's memory")
		return nil
	}
	out := List{}
	budget := int64(MaxResultListBytes)
	ok := m.r.guestElems(ptr, count, size, func(e []byte) bool {
		if m.err != nil {
			return false
		}
		cost := int64(size) + m.stringBytes(t, e)
		if cost > budget {
			budget = -1 // keep the order: nothing after the first spilled element is kept
			if m.spill == nil {
				return true
			}
		}
		v := m.value(t, e, depth+1)
		if m.err != nil {
			return false
		}
		if budget >= 0 {
			budget -= cost
			out = append(out, v)
		} else {
			m.spill(v)
		}
		return true
	})
	if !ok {
		m.fail("tool result: list outside the guest's memory")
	}
	return out
}

// stringBytes is the string bytes directly held by an element of t (the
// lengths in its flat layout), without reading them.
func (m *memReader) stringBytes(t *Type, b []byte) int64 {
	switch t.Kind {
	case KindString:
		return int64(binary.LittleEndian.Uint32(b[4:]))
	case KindTuple:
		var n int64
		off := uint32(0)
		for _, et := range t.Tuple {
			off = alignTo(off, abiAlign(et))
			n += m.stringBytes(et, b[off:])
			off += abiSize(et)
		}
		return n
	}
	return 0
}

// str reads a string's (ptr, len) at b from the guest's memory.
func (m *memReader) str(b []byte) (string, bool) {
	ptr, n := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
	s, ok := m.r.guestRead(ptr, n)
	if !ok {
		m.fail("tool result: string outside the guest's memory")
		return "", false
	}
	if !utf8.Valid(s) {
		m.fail("tool result: string is not valid UTF-8")
		return "", false
	}
	return string(s), true
}

func discriminant(b []byte, cases int) uint32 {
	switch {
	case cases <= 1<<8:
		return uint32(b[0])
	case cases <= 1<<16:
		return uint32(binary.LittleEndian.Uint16(b))
	}
	return binary.LittleEndian.Uint32(b)
}

func alignTo(n, a uint32) uint32 { return (n + a - 1) / a * a }

func discSize(cases int) uint32 {
	switch {
	case cases <= 1<<8:
		return 1
	case cases <= 1<<16:
		return 2
	}
	return 4
}

// abiAlign and abiSize are the canonical ABI's alignment and size of t, for
// the kinds value reads (others count as 4 bytes and fail when read).
func abiAlign(t *Type) uint32 {
	switch t.Kind {
	case KindBool, KindS8, KindU8:
		return 1
	case KindS16, KindU16:
		return 2
	case KindS64, KindU64, KindF64:
		return 8
	case KindEnum:
		return discSize(len(t.Names))
	case KindOption:
		return max(1, abiAlign(t.Elem))
	case KindRecord:
		a := uint32(1)
		for _, f := range t.Fields {
			a = max(a, abiAlign(f.Type))
		}
		return a
	case KindTuple:
		a := uint32(1)
		for _, et := range t.Tuple {
			a = max(a, abiAlign(et))
		}
		return a
	}
	return 4
}

func abiSize(t *Type) uint32 {
	switch t.Kind {
	case KindBool, KindS8, KindU8:
		return 1
	case KindS16, KindU16:
		return 2
	case KindS64, KindU64, KindF64:
		return 8
	case KindString, KindList:
		return 8
	case KindEnum:
		return discSize(len(t.Names))
	case KindOption:
		a := abiAlign(t.Elem)
		return alignTo(alignTo(1, a)+abiSize(t.Elem), max(1, a))
	case KindRecord:
		off := uint32(0)
		for _, f := range t.Fields {
			off = alignTo(off, abiAlign(f.Type)) + abiSize(f.Type)
		}
		return alignTo(off, abiAlign(t))
	case KindTuple:
		off := uint32(0)
		for _, et := range t.Tuple {
			off = alignTo(off, abiAlign(et)) + abiSize(et)
		}
		return alignTo(off, abiAlign(t))
	}
	return 4
}
