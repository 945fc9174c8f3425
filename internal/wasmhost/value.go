package wasmhost

import (
	"fmt"
	"math"
	"unicode/utf8"
)

// Value is a WIT value in Go. The representation of each WIT type:
//
//	bool, s8..s64, u8..u64   bool, int8..int64, uint8..uint64 (a plain int is accepted when in range)
//	f32, f64                  float32, float64
//	char                      Char
//	string                    string (must be valid UTF-8)
//	list<T>                   List; list<u8> from a guest is Bytes (one
//	                          copy, not a boxed value per byte), and a host
//	                          may answer either
//	record                    Record (fields in declaration order, names must match)
//	tuple<...>                Tuple
//	variant                   Variant
//	enum                      Enum
//	option<T>                 Option
//	result<T, E>              Result
//	flags                     Flags
//	own<R>, borrow<R>         *Resource (from a guest or the runtime), or
//	                          HostResource (a new handle to a resource the host
//	                          defines, returned by a host function)
//
// Values coming from a guest always use exactly these types; values going to a
// guest are checked against the WIT type first (Check), so nothing invalid —
// bad UTF-8, a surrogate char, an unknown case — ever reaches wasmtime.
type Value = any

// Char is a WIT char: a Unicode scalar value.
type Char rune

// List is a WIT list.
type List []Value

// Bytes is a WIT list<u8>, as lifted from a guest: a 64 MiB header value
// is 64 MiB here rather than 64 M boxed values (1 GiB of interface words).
type Bytes []byte

// Tuple is a WIT tuple.
type Tuple []Value

// Record is a WIT record: its fields in declaration order.
type Record []FieldValue

// FieldValue is one field of a Record.
type FieldValue struct {
	Name  string
	Value Value
}

// Get returns the value of the named field, or nil.
func (r Record) Get(name string) Value {
	for _, f := range r {
		if f.Name == name {
			return f.Value
		}
	}
	return nil
}

// Variant is a WIT variant value; Value is nil for a case without payload.
type Variant struct {
	Case  string
	Value Value
}

// Enum is a WIT enum value: the case name.
type Enum string

// Option is a WIT option; Value is meaningful only when Some is true.
type Option struct {
	Some  bool
	Value Value
}

// Some returns option some(v).
func Some(v Value) Option { return Option{Some: true, Value: v} }

// None is option none.
var None = Option{}

// Result is a WIT result; Value is nil when the taken side has no payload.
type Result struct {
	IsErr bool
	Value Value
}

// Ok returns result ok(v) (v nil for a payload-less ok).
func Ok(v Value) Result { return Result{Value: v} }

// Err returns result err(v) (v nil for a payload-less err).
func Err(v Value) Result { return Result{IsErr: true, Value: v} }

// Flags is a WIT flags value: the names of the flags that are set.
type Flags []string

// maxDepth bounds nesting so hostile or fuzzed types cannot exhaust the stack.
const maxDepth = 100

// Check reports whether v is a valid Go value for t. Every value the host
// hands to wasmtime passes through it first.
func Check(v Value, t *Type) error { return check(v, t, 0) }

func check(v Value, t *Type, depth int) error {
	if t == nil {
		return fmt.Errorf("no type for value %T", v)
	}
	if depth > maxDepth {
		return fmt.Errorf("value nested deeper than %d", maxDepth)
	}
	bad := func() error { return fmt.Errorf("want %s, got %T", t.Kind, v) }
	switch t.Kind {
	case KindBool:
		if _, ok := v.(bool); !ok {
			return bad()
		}
	case KindS8, KindS16, KindS32, KindS64, KindU8, KindU16, KindU32, KindU64:
		if _, ok := intBits(v, t.Kind); !ok {
			return bad()
		}
	case KindF32:
		if _, ok := v.(float32); !ok {
			return bad()
		}
	case KindF64:
		if _, ok := v.(float64); !ok {
			return bad()
		}
	case KindChar:
		c, ok := v.(Char)
		if !ok {
			return bad()
		}
		if !utf8.ValidRune(rune(c)) {
			return fmt.Errorf("char %#x is not a Unicode scalar value", rune(c))
		}
	case KindString:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		if !utf8.ValidString(s) {
			return fmt.Errorf("string is not valid UTF-8")
		}
	case KindList:
		if _, ok := v.(Bytes); ok && t.Elem != nil && t.Elem.Kind == KindU8 {
			return nil
		}
		l, ok := v.(List)
		if !ok {
			return bad()
		}
		for i, e := range l {
			if err := check(e, t.Elem, depth+1); err != nil {
				return fmt.Errorf("list[%d]: %w", i, err)
			}
		}
	case KindTuple:
		tu, ok := v.(Tuple)
		if !ok {
			return bad()
		}
		if len(tu) != len(t.Tuple) {
			return fmt.Errorf("tuple of %d, want %d", len(tu), len(t.Tuple))
		}
		for i, e := range tu {
			if err := check(e, t.Tuple[i], depth+1); err != nil {
				return fmt.Errorf("tuple.%d: %w", i, err)
			}
		}
	case KindRecord:
		r, ok := v.(Record)
		if !ok {
			return bad()
		}
		if len(r) != len(t.Fields) {
			return fmt.Errorf("record of %d fields, want %d", len(r), len(t.Fields))
		}
		for i, f := range r {
			if f.Name != t.Fields[i].Name {
				return fmt.Errorf("record field %d is %q, want %q", i, f.Name, t.Fields[i].Name)
			}
			if err := check(f.Value, t.Fields[i].Type, depth+1); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
		}
	case KindVariant:
		va, ok := v.(Variant)
		if !ok {
			return bad()
		}
		c := caseOf(t, va.Case)
		if c == nil {
			return fmt.Errorf("variant has no case %q", va.Case)
		}
		if c.Type == nil {
			if va.Value != nil {
				return fmt.Errorf("variant case %q takes no payload", va.Case)
			}
		} else if err := check(va.Value, c.Type, depth+1); err != nil {
			return fmt.Errorf("%s: %w", va.Case, err)
		}
	case KindEnum:
		e, ok := v.(Enum)
		if !ok {
			return bad()
		}
		if indexOf(t.Names, string(e)) < 0 {
			return fmt.Errorf("enum has no case %q", string(e))
		}
	case KindOption:
		o, ok := v.(Option)
		if !ok {
			return bad()
		}
		if o.Some {
			if err := check(o.Value, t.Elem, depth+1); err != nil {
				return fmt.Errorf("some: %w", err)
			}
		}
	case KindResult:
		r, ok := v.(Result)
		if !ok {
			return bad()
		}
		side, name := t.Ok, "ok"
		if r.IsErr {
			side, name = t.Err, "err"
		}
		if side == nil {
			if r.Value != nil {
				return fmt.Errorf("result %s takes no payload", name)
			}
		} else if err := check(r.Value, side, depth+1); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	case KindFlags:
		f, ok := v.(Flags)
		if !ok {
			return bad()
		}
		seen := make(map[string]bool, len(f))
		for _, n := range f {
			if indexOf(t.Names, n) < 0 {
				return fmt.Errorf("flags have no flag %q", n)
			}
			if seen[n] {
				return fmt.Errorf("flag %q given twice", n)
			}
			seen[n] = true
		}
	case KindOwn, KindBorrow:
		if _, ok := v.(HostResource); ok {
			return nil // resolved against the import's resource when lowered
		}
		r, ok := v.(*Resource)
		if !ok || r == nil {
			return bad()
		}
		if r.closed() {
			return fmt.Errorf("resource handle already released")
		}
	default:
		return fmt.Errorf("values of kind %s are not supported by the host", t.Kind)
	}
	return nil
}

func caseOf(t *Type, name string) *Case {
	for i := range t.Cases {
		if t.Cases[i].Name == name {
			return &t.Cases[i]
		}
	}
	return nil
}

func indexOf(names []string, n string) int {
	for i, x := range names {
		if x == n {
			return i
		}
	}
	return -1
}

// intBits returns the two's-complement bits of an integer value of kind k.
func intBits(v Value, k Kind) (uint64, bool) {
	var i int64
	var u uint64
	signed := true
	switch x := v.(type) {
	case int8:
		if k != KindS8 {
			return 0, false
		}
		return uint64(x), true
	case int16:
		if k != KindS16 {
			return 0, false
		}
		return uint64(x), true
	case int32:
		if k != KindS32 {
			return 0, false
		}
		return uint64(x), true
	case int64:
		if k != KindS64 {
			return 0, false
		}
		return uint64(x), true
	case uint8:
		if k != KindU8 {
			return 0, false
		}
		return uint64(x), true
	case uint16:
		if k != KindU16 {
			return 0, false
		}
		return uint64(x), true
	case uint32:
		if k != KindU32 {
			return 0, false
		}
		return uint64(x), true
	case uint64:
		if k != KindU64 {
			return 0, false
		}
		return x, true
	case int:
		i = int64(x)
		if x < 0 {
			signed = true
		} else {
			u = uint64(x)
			signed = false
		}
	default:
		return 0, false
	}
	// A plain int: accept it when it fits the kind.
	lo, hi := int64(0), uint64(0)
	switch k {
	case KindS8:
		lo, hi = math.MinInt8, math.MaxInt8
	case KindS16:
		lo, hi = math.MinInt16, math.MaxInt16
	case KindS32:
		lo, hi = math.MinInt32, math.MaxInt32
	case KindS64:
		lo, hi = math.MinInt64, math.MaxInt64
	case KindU8:
		hi = math.MaxUint8
	case KindU16:
		hi = math.MaxUint16
	case KindU32:
		hi = math.MaxUint32
	case KindU64:
		hi = math.MaxUint64
	}
	if signed {
		if i < lo {
			return 0, false
		}
		return uint64(i), true
	}
	if u > hi {
		return 0, false
	}
	return u, true
}

// Equal reports whether two values are deeply equal (NaNs compare equal to
// themselves bit for bit; resources by identity).
func Equal(a, b Value) bool {
	switch x := a.(type) {
	case float32:
		y, ok := b.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case Bytes:
		return Equal(x.list(), b)
	case List:
		if y, ok := b.(Bytes); ok {
			b = y.list()
		}
		y, ok := b.(List)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case Tuple:
		y, ok := b.(Tuple)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case Record:
		y, ok := b.(Record)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i].Name != y[i].Name || !Equal(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	case Flags:
		y, ok := b.(Flags)
		if !ok || len(x) != len(y) {
			return false
		}
		set := map[string]bool{}
		for _, n := range x {
			set[n] = true
		}
		for _, n := range y {
			if !set[n] {
				return false
			}
		}
		return true
	case Variant:
		y, ok := b.(Variant)
		return ok && x.Case == y.Case && Equal(x.Value, y.Value)
	case Option:
		y, ok := b.(Option)
		return ok && x.Some == y.Some && (!x.Some || Equal(x.Value, y.Value))
	case Result:
		y, ok := b.(Result)
		return ok && x.IsErr == y.IsErr && Equal(x.Value, y.Value)
	default:
		return a == b
	}
}

// BytesOf is a list<u8> value's bytes, whichever way it was lifted (Bytes,
// or a List of uint8); anything else is empty.
func BytesOf(v Value) string {
	if b, ok := v.(Bytes); ok {
		return string(b)
	}
	l, _ := v.(List)
	b := make([]byte, 0, len(l))
	for _, x := range l {
		u, _ := x.(uint8)
		b = append(b, u)
	}
	return string(b)
}

func (b Bytes) list() List {
	l := make(List, len(b))
	for i, c := range b {
		l[i] = c
	}
	return l
}
