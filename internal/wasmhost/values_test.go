package wasmhost

import (
	"context"
	"strings"
	"testing"
)

// TestHostReturnsMalformedValues hands wasmtime, through a real component's
// imports, the values its C API aborts the process on (invalid UTF-8,
// surrogate chars), nested ones, and values of the wrong kind: each must end
// the call as a trap naming the problem, and well-formed ones must pass.
func TestHostReturnsMalformedValues(t *testing.T) {
	cases := []struct {
		name, fn string
		ret      Value
		want     string // "" = the call succeeds
		result   Value
	}{
		{"good char", "char", Char('é'), "", Char('é')},
		{"surrogate char", "char", Char(0xD800), "not a Unicode scalar value", nil},
		{"char past U+10FFFF", "char", Char(0x110000), "not a Unicode scalar value", nil},
		{"rune for char", "char", 'x', "invalid value", nil},
		{"good string", "string", "héllo", "", uint32(6)},
		{"invalid utf-8", "string", "ok\xff", "not valid UTF-8", nil},
		{"lone surrogate utf-8", "string", "\xed\xa0\x80", "not valid UTF-8", nil},
		{"int for string", "string", uint32(7), "invalid value", nil},
		{"nil for string", "string", nil, "invalid value", nil},
		{"good list", "list", List{Some("a"), None, Some("b")}, "", uint32(3)},
		{"invalid utf-8 in list", "list", List{Some("a"), Some("\xc3\x28")}, "not valid UTF-8", nil},
		{"string for option", "list", List{"a"}, "invalid value", nil},
		{"tuple for list", "list", Tuple{Some("a")}, "invalid value", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := NewHost()
			h.Define("murmur:test/values", "get-"+c.fn, func(ctx context.Context, a []Value) (Value, error) {
				return c.ret, nil
			})
			i := instantiate(t, "values.wat", RunConfig{Host: h})
			v, err := i.Call(bg, "", c.fn)
			if c.want == "" {
				if err != nil || !Equal(v, c.result) {
					t.Fatalf("got %#v, %v; want %#v", v, err, c.result)
				}
				return
			}
			te := asTrap(t, err)
			if !strings.Contains(te.Message, c.want) || !strings.Contains(te.Message, "murmur:test/values@0.1.0#get-"+c.fn) {
				t.Fatalf("trap %q, want it to contain %q and name the import", te.Message, c.want)
			}
		})
	}
}
