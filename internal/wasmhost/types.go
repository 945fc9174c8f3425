package wasmhost

import (
	"strconv"
	"strings"
)

// Kind is the kind of a WIT value type. The numbering follows wasmtime's
// WASMTIME_COMPONENT_VALTYPE_* constants.
type Kind uint8

// Value type kinds.
const (
	KindBool Kind = iota
	KindS8
	KindS16
	KindS32
	KindS64
	KindU8
	KindU16
	KindU32
	KindU64
	KindF32
	KindF64
	KindChar
	KindString
	KindList
	KindRecord
	KindTuple
	KindVariant
	KindEnum
	KindOption
	KindResult
	KindFlags
	KindOwn
	KindBorrow
	KindFuture
	KindStream
	KindErrorContext
)

var kindNames = [...]string{"bool", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64",
	"f32", "f64", "char", "string", "list", "record", "tuple", "variant", "enum", "option",
	"result", "flags", "own", "borrow", "future", "stream", "error-context"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Type is a WIT value type as the host sees it: built from a component's type
// information (introspection, host import signatures) or by hand (tests, the
// murmur helpers). It drives validation of Go values before they cross into
// wasmtime, so a mistyped or invalid value is a Go error, never an abort.
type Type struct {
	Kind     Kind
	Elem     *Type   // list, option, future, stream
	Fields   []Field // record
	Cases    []Case  // variant
	Names    []string
	Tuple    []*Type // tuple
	Ok, Err  *Type   // result (nil = no payload)
	Resource string  // own/borrow: the resource's name when known

	resKey string // own/borrow: "<iface>#<name>" of the resource's definition
}

// Field is a named record field.
type Field struct {
	Name string
	Type *Type
}

// Case is a variant case; Type is nil for a case without payload.
type Case struct {
	Name string
	Type *Type
}

// Param is a named function parameter.
type Param struct {
	Name string
	Type *Type
}

// FuncType is a component function's signature. Result is nil for a function
// without result (wasmtime 39 components have at most one).
type FuncType struct {
	Params []Param
	Result *Type
}

// String prints the type in WIT syntax (anonymous records, variants and enums
// are printed structurally: `record { a: u32 }`).
func (t *Type) String() string {
	var b strings.Builder
	t.write(&b)
	return b.String()
}

func (t *Type) write(b *strings.Builder) { t.writeN(b, nil, false) }

// writeN writes t, printing a composite type that equals one of names' keys
// (its structural text) by its name instead, unless def (t is the
// definition being printed).
func (t *Type) writeN(b *strings.Builder, names map[string]string, def bool) {
	if t == nil {
		b.WriteString("_")
		return
	}
	if names != nil && !def {
		switch t.Kind {
		case KindRecord, KindVariant, KindEnum, KindFlags:
			if n, ok := names[t.String()]; ok {
				b.WriteString(n)
				return
			}
		}
	}
	switch t.Kind {
	case KindList:
		b.WriteString("list<")
		t.Elem.writeN(b, names, false)
		b.WriteString(">")
	case KindOption:
		b.WriteString("option<")
		t.Elem.writeN(b, names, false)
		b.WriteString(">")
	case KindFuture, KindStream:
		b.WriteString(t.Kind.String())
		if t.Elem != nil {
			b.WriteString("<")
			t.Elem.writeN(b, names, false)
			b.WriteString(">")
		}
	case KindRecord:
		b.WriteString("record { ")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(f.Name)
			b.WriteString(": ")
			f.Type.writeN(b, names, false)
		}
		b.WriteString(" }")
	case KindTuple:
		b.WriteString("tuple<")
		for i, e := range t.Tuple {
			if i > 0 {
				b.WriteString(", ")
			}
			e.writeN(b, names, false)
		}
		b.WriteString(">")
	case KindVariant:
		b.WriteString("variant { ")
		for i, c := range t.Cases {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c.Name)
			if c.Type != nil {
				b.WriteString("(")
				c.Type.writeN(b, names, false)
				b.WriteString(")")
			}
		}
		b.WriteString(" }")
	case KindEnum, KindFlags:
		b.WriteString(t.Kind.String())
		b.WriteString(" { ")
		b.WriteString(strings.Join(t.Names, ", "))
		b.WriteString(" }")
	case KindResult:
		b.WriteString("result")
		if t.Ok != nil || t.Err != nil {
			b.WriteString("<")
			if t.Ok != nil {
				t.Ok.writeN(b, names, false)
			} else {
				b.WriteString("_")
			}
			if t.Err != nil {
				b.WriteString(", ")
				t.Err.writeN(b, names, false)
			}
			b.WriteString(">")
		}
	case KindOwn, KindBorrow:
		name := t.Resource
		if name == "" {
			name = "resource"
		}
		if t.Kind == KindOwn {
			b.WriteString(name)
		} else {
			b.WriteString("borrow<" + name + ">")
		}
	default:
		b.WriteString(t.Kind.String())
	}
}

// String prints the signature in WIT syntax: `func(name: string) -> string`.
func (f *FuncType) String() string {
	var b strings.Builder
	f.writeN(&b, nil)
	return b.String()
}

func (f *FuncType) writeN(b *strings.Builder, names map[string]string) {
	b.WriteString("func(")
	for i, p := range f.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.Name)
		b.WriteString(": ")
		p.Type.writeN(b, names, false)
	}
	b.WriteString(")")
	if f.Result != nil {
		b.WriteString(" -> ")
		f.Result.writeN(b, names, false)
	}
}

// tU64 is u64 (the clock functions' type).
var tU64 = &Type{Kind: KindU64}

var tString = &Type{Kind: KindString}
