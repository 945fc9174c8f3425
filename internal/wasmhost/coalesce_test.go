package wasmhost

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// dataSegments counts the data segments of every core module of a
// component binary.
func dataSegments(t *testing.T, b []byte) int {
	t.Helper()
	secs, err := readSections(b)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range secs {
		switch {
		case s.id == 1:
			ms, err := readSections(s.body)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				if m.id == secData {
					segs, ok := readData(m.body)
					if !ok {
						t.Fatal("unreadable data section")
					}
					n += len(segs)
				}
			}
		case s.id == 4:
			n += dataSegments(t, s.body)
		}
	}
	return n
}

// TestCoalesceGoKit: the Go-kit component's ~32,000 segments become a
// handful, and the coalesced component still instantiates and answers.
func TestCoalesceGoKit(t *testing.T) {
	raw, err := os.ReadFile(goKitTool)
	if err != nil {
		t.Fatal(err)
	}
	got := coalesceData(raw)
	before, after := dataSegments(t, raw), dataSegments(t, got)
	if before < 1000 || after > before/100 {
		t.Fatalf("data segments %d -> %d", before, after)
	}
	t.Logf("data segments %d -> %d", before, after)
	if again := coalesceData(got); len(again) != len(got) {
		t.Fatal("coalescing twice changed the component again")
	}
}

// TestCoalescedMemoryIsTheSame: a module's memory after instantiation is
// byte for byte what its segments wrote, for layouts the merge must keep
// apart (overlaps, a segment before an earlier one, gaps past the limit)
// and ones it joins.
func TestCoalescedMemoryIsTheSame(t *testing.T) {
	layouts := []struct {
		name   string
		segs   []string // (data (i32.const off) "...")
		merged bool
	}{
		{"adjacent and small gaps", []string{`(i32.const 16) "ab"`, `(i32.const 18) "cd"`, `(i32.const 40) "ef"`, `(i32.const 100) "gh"`}, true},
		{"overlap keeps the later bytes", []string{`(i32.const 16) "aaaa"`, `(i32.const 18) "bb"`, `(i32.const 30) "cc"`}, true},
		{"a segment below an earlier one", []string{`(i32.const 100) "zz"`, `(i32.const 10) "yy"`, `(i32.const 104) "xx"`}, false},
		{"gap wider than the limit", []string{`(i32.const 0) "a"`, fmt.Sprintf(`(i32.const %d) "b"`, 2+coalesceGap)}, false},
		{"a gap over earlier data", []string{`(i32.const 50) "q"`, `(i32.const 0) "a"`, `(i32.const 60) "b"`}, false},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			var data strings.Builder
			for _, s := range l.segs {
				fmt.Fprintf(&data, "(data %s)\n", s)
			}
			mod := `(module (memory (export "m") 1) ` + data.String() +
				`(func (export "peek") (param i32) (result i32) (i32.load8_u (local.get 0))))`
			wat := `(component (core module $M ` + strings.TrimPrefix(mod, "(module") + `
  (core instance $i (instantiate $M))
  (func (export "peek") (param "at" u32) (result u32) (canon lift (core func $i "peek"))))`
			raw := watToComponent(t, wat)
			co := coalesceData(raw)
			if merged := dataSegments(t, co) < dataSegments(t, raw); merged != l.merged {
				t.Fatalf("merged = %v, want %v", merged, l.merged)
			}
			a, b := peekAll(t, raw), peekAll(t, co)
			if a != b {
				t.Fatalf("memory differs:\n%q\n%q", a, b)
			}
		})
	}
}

func watToComponent(t *testing.T, wat string) []byte {
	t.Helper()
	b, err := parseWAT([]byte(wat))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func peekAll(t *testing.T, wasm []byte) string {
	t.Helper()
	e := testEngine
	c, err := e.Compile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	i, err := instantiateFull(e, bg, c, RunConfig{Limits: Limits{MemoryBytes: 1 << 20, Deadline: 10 * time.Second}})
	if err != nil {
		return "instantiate: " + err.Error()
	}
	defer i.Close()
	var sb strings.Builder
	for at := range uint32(200) {
		v, err := i.Call(bg, "", "peek", at)
		if err != nil {
			t.Fatal(err)
		}
		sb.WriteByte(byte(v.(uint32)))
	}
	return sb.String()
}

// FuzzCoalesceData: any bytes come back unchanged or rewritten, never a
// panic (Compile runs it on hostile input before wasmtime sees it).
func FuzzCoalesceData(f *testing.F) {
	for _, wat := range []string{
		`(component (core module (memory 1) (data (i32.const 0) "a") (data (i32.const 3) "b")))`,
		`(component (core module (import "a" "m" (memory 1)) (data (i32.const 0) "a") (data (i32.const 3) "b")))`,
		`(component (core module (import "a" "f" (func)) (import "a" "g" (global i32)) (import "a" "t" (table 1 funcref)) (memory 1) (data (i32.const 0) "a") (data (i32.const 2) "b")))`,
	} {
		b, err := parseWAT([]byte(wat))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := coalesceData(b)
		if len(out) == 0 && len(b) > 0 {
			t.Fatal("empty output")
		}
	})
}

// TestCoalesceLeavesWhatItCannotProve: an imported memory (not known to be
// zero), a data count section (code may name segments by index) and a
// passive segment keep their modules as they are.
func TestCoalesceLeavesWhatItCannotProve(t *testing.T) {
	for _, wat := range []string{
		`(component (core module (import "a" "m" (memory 1)) (data (i32.const 0) "a") (data (i32.const 3) "b")))`,
		`(component (core module (memory 1) (data (i32.const 0) "a") (data (i32.const 3) "b") (func (data.drop 0))))`,
		`(component (core module (memory 1) (data (i32.const 0) "a") (data (i32.const 3) "b") (data "p")))`,
	} {
		b, err := parseWAT([]byte(wat))
		if err != nil {
			t.Fatal(err)
		}
		if out := coalesceData(b); string(out) != string(b) {
			t.Errorf("rewritten: %s", wat)
		}
	}
	// The same module with its own memory is rewritten.
	b, _ := parseWAT([]byte(`(component (core module (memory 1) (data (i32.const 0) "a") (data (i32.const 3) "b")))`))
	if out := coalesceData(b); string(out) == string(b) {
		t.Error("a coalescible module was left as it is")
	}
}
