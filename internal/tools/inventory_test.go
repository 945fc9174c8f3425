package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
)

type stub struct{ name, kind string }

func (s stub) Name() string                        { return s.name }
func (s stub) Kind() string                        { return s.kind }
func (s stub) Description() string                 { return "d" }
func (s stub) Schema() json.RawMessage             { return DefaultSchema }
func (s stub) Call(context.Context, *Call) Outcome { return Outcome{} }

func TestLookup(t *testing.T) {
	inv := NewInventory("local/cap")
	for _, n := range []string{"local/echo", "acme/lint", "other/lint"} {
		if err := inv.Add(stub{n, KindWASM}); err != nil {
			t.Fatal(err)
		}
	}
	if err := inv.Add(stub{"local/echo", KindWASM}); diag.Code(err) != "E-MAN-009" {
		t.Errorf("duplicate: %v", err)
	}
	tests := []struct {
		name, want, code, msg string
	}{
		{"local/echo", "local/echo", "", ""},
		{"echo", "local/echo", "", ""},
		{"acme/lint", "acme/lint", "", ""},
		{"lint", "", "E-RUN-062", "ambiguous: acme/lint, other/lint"},
		{"nope", "", "E-RUN-062", "not declared: the tools local/cap declares under artifacts: are local/echo, acme/lint, other/lint"},
		{"other/echo", "", "E-RUN-062", "not declared"},
		{"delegate-task", "", "E-RUN-062", "not declared"},
		{strings.Repeat("x", 1000), "", "E-RUN-062", "…"},
	}
	for _, tc := range tests {
		e, err := inv.Lookup(tc.name)
		if diag.Code(err) != tc.code || (err == nil && e.Name() != tc.want) || (err != nil && !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("Lookup(%.20q) = %v, %v; want %s %s %q", tc.name, e, err, tc.want, tc.code, tc.msg)
		}
	}
	if names := inv.Entries(); len(names) != 3 || names[0].Name() != "local/echo" {
		t.Errorf("entries %v", names)
	}
}

func TestClipKeepsUTF8(t *testing.T) {
	s := strings.Repeat("a", 255) + "é" + "tail"
	got := Clip(s)
	if !strings.HasSuffix(got, "…") || strings.Contains(got, "\xc3…") {
		t.Errorf("clip %q", got[250:])
	}
}
