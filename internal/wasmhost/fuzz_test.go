package wasmhost

import (
	"fmt"
	"math"
	"testing"
	"unicode/utf8"
)

// FuzzValue drives the Go<->WIT value conversion with a type and a value
// both derived from the input: values that pass Check must survive lowering
// into wasmtime's representation and lifting back unchanged; values that
// fail it must be rejected with an error (never reach lower). Invalid UTF-8,
// surrogate chars, wrong kinds, unknown cases and duplicate flags are all
// generated.
func FuzzValue(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{12, 3, 'a', 'b', 'c'})
	f.Add([]byte{12, 2, 0xff, 0xfe})
	f.Add([]byte{11, 0xd8, 0x00, 0x01})
	f.Add([]byte{14, 3, 12, 1, 'x', 18, 1, 6, 1, 2, 3, 4, 0})
	f.Add([]byte{16, 3, 1, 12, 0, 1, 'q'})
	f.Add([]byte{19, 1, 12, 12, 1, 2, 'o', 'k'})
	f.Add([]byte{20, 4, 1, 2, 2, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{data: data}
		ty := g.typ(0)
		v := g.value(ty, 0)
		if err := Check(v, ty); err != nil {
			return
		}
		back := roundTrip(v, ty)
		if !Equal(normalize(v, ty), back) {
			t.Fatalf("type %s\nvalue %#v\nback  %#v", ty, v, back)
		}
	})
}

// roundTrip lowers v into a C value, lifts it back and frees the C value.
func roundTrip(v Value, t *Type) Value {
	var c [1]cval
	lower(v, t, &c[0])
	out := lift(&c[0], nil)
	deleteVals(c[:])
	return out
}

// normalize converts plain ints to the kind's Go type, as lift returns them.
func normalize(v Value, t *Type) Value {
	switch t.Kind {
	case KindS8, KindS16, KindS32, KindS64, KindU8, KindU16, KindU32, KindU64:
		bits, _ := intBits(v, t.Kind)
		switch t.Kind {
		case KindS8:
			return int8(bits)
		case KindS16:
			return int16(bits)
		case KindS32:
			return int32(bits)
		case KindS64:
			return int64(bits)
		case KindU8:
			return uint8(bits)
		case KindU16:
			return uint16(bits)
		case KindU32:
			return uint32(bits)
		default:
			return bits
		}
	case KindList:
		l := v.(List)
		if t.Elem.Kind == KindU8 && len(l) > 0 {
			out := make(Bytes, len(l))
			for i := range l {
				out[i] = normalize(l[i], t.Elem).(uint8)
			}
			return out
		}
		out := make(List, len(l))
		for i := range l {
			out[i] = normalize(l[i], t.Elem)
		}
		return out
	case KindTuple:
		l := v.(Tuple)
		out := make(Tuple, len(l))
		for i := range l {
			out[i] = normalize(l[i], t.Tuple[i])
		}
		return out
	case KindRecord:
		r := v.(Record)
		out := make(Record, len(r))
		for i := range r {
			out[i] = FieldValue{r[i].Name, normalize(r[i].Value, t.Fields[i].Type)}
		}
		return out
	case KindVariant:
		va := v.(Variant)
		if c := caseOf(t, va.Case); c.Type != nil {
			va.Value = normalize(va.Value, c.Type)
		}
		return va
	case KindOption:
		o := v.(Option)
		if o.Some {
			o.Value = normalize(o.Value, t.Elem)
		}
		return o
	case KindResult:
		r := v.(Result)
		side := t.Ok
		if r.IsErr {
			side = t.Err
		}
		if side != nil {
			r.Value = normalize(r.Value, side)
		}
		return r
	}
	return v
}

type gen struct {
	data []byte
	pos  int
}

func (g *gen) next() byte {
	if g.pos >= len(g.data) {
		return 0
	}
	b := g.data[g.pos]
	g.pos++
	return b
}

func (g *gen) u64() uint64 {
	var x uint64
	for range 8 {
		x = x<<8 | uint64(g.next())
	}
	return x
}

func (g *gen) typ(depth int) *Type {
	k := Kind(g.next() % 21)
	if depth > 4 && k >= KindList {
		k = KindString
	}
	t := &Type{Kind: k}
	switch k {
	case KindList, KindOption:
		t.Elem = g.typ(depth + 1)
	case KindRecord:
		for i := range int(g.next() % 4) {
			t.Fields = append(t.Fields, Field{fmt.Sprintf("f%d", i), g.typ(depth + 1)})
		}
	case KindTuple:
		for range int(g.next() % 3) {
			t.Tuple = append(t.Tuple, g.typ(depth+1))
		}
	case KindVariant:
		for i := range 1 + int(g.next()%3) {
			c := Case{Name: fmt.Sprintf("c%d", i)}
			if g.next()%2 == 1 {
				c.Type = g.typ(depth + 1)
			}
			t.Cases = append(t.Cases, c)
		}
	case KindEnum, KindFlags:
		for i := range 1 + int(g.next()%4) {
			t.Names = append(t.Names, fmt.Sprintf("n%d", i))
		}
	case KindResult:
		if g.next()%2 == 1 {
			t.Ok = g.typ(depth + 1)
		}
		if g.next()%2 == 1 {
			t.Err = g.typ(depth + 1)
		}
	}
	return t
}

func (g *gen) str() string {
	n := int(g.next() % 8)
	b := make([]byte, 0, n)
	for range n {
		b = append(b, g.next())
	}
	return string(b) // may be invalid UTF-8 on purpose
}

func (g *gen) value(t *Type, depth int) Value {
	if g.next() == 0xee { // occasionally the wrong kind entirely
		return g.value(g.typ(5), depth+1)
	}
	switch t.Kind {
	case KindBool:
		return g.next()%2 == 1
	case KindS8:
		return int8(g.next())
	case KindS16:
		return int16(g.u64())
	case KindS32:
		if g.next()%4 == 0 {
			return int(int32(g.u64()))
		}
		return int32(g.u64())
	case KindS64:
		return int64(g.u64())
	case KindU8:
		return g.next()
	case KindU16:
		return uint16(g.u64())
	case KindU32:
		if g.next()%4 == 0 {
			return int(g.u64() >> 40)
		}
		return uint32(g.u64())
	case KindU64:
		return g.u64()
	case KindF32:
		return math.Float32frombits(uint32(g.u64()))
	case KindF64:
		return math.Float64frombits(g.u64())
	case KindChar:
		r := rune(g.next())<<16 | rune(g.next())<<8 | rune(g.next())
		if g.next()%2 == 0 && !utf8.ValidRune(r) {
			r = 'x'
		}
		return Char(r)
	case KindString:
		return g.str()
	case KindList:
		n := int(g.next() % 4)
		l := make(List, n)
		for i := range l {
			l[i] = g.value(t.Elem, depth+1)
		}
		return l
	case KindTuple:
		l := make(Tuple, len(t.Tuple))
		for i := range l {
			l[i] = g.value(t.Tuple[i], depth+1)
		}
		return l
	case KindRecord:
		r := make(Record, len(t.Fields))
		for i, f := range t.Fields {
			r[i] = FieldValue{f.Name, g.value(f.Type, depth+1)}
		}
		return r
	case KindVariant:
		i := int(g.next()) % (len(t.Cases) + 1) // one past the end: unknown case
		if i == len(t.Cases) {
			return Variant{Case: "unknown"}
		}
		c := t.Cases[i]
		if c.Type == nil {
			return Variant{Case: c.Name}
		}
		return Variant{Case: c.Name, Value: g.value(c.Type, depth+1)}
	case KindEnum:
		i := int(g.next()) % (len(t.Names) + 1)
		if i == len(t.Names) {
			return Enum("unknown")
		}
		return Enum(t.Names[i])
	case KindFlags:
		var fl Flags
		for _, n := range t.Names {
			switch g.next() % 4 {
			case 1:
				fl = append(fl, n)
			case 2:
				fl = append(fl, n, n) // duplicate
			}
		}
		return fl
	case KindOption:
		if g.next()%2 == 0 {
			return None
		}
		return Some(g.value(t.Elem, depth+1))
	case KindResult:
		isErr := g.next()%2 == 1
		side := t.Ok
		if isErr {
			side = t.Err
		}
		r := Result{IsErr: isErr}
		if side != nil {
			r.Value = g.value(side, depth+1)
		}
		return r
	}
	return nil
}
