package wasmhost

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// FuzzCompile feeds Compile hostile bytes — truncated and random components,
// core modules, sections declaring sizes far past the end, deeply nested
// text — and requires an E-RUN-100 error or a component that can be
// introspected and loaded back from the cache: never a process abort.
// Seeds live in testdata/fuzz/FuzzCompile; more are built here.
func FuzzCompile(f *testing.F) {
	src, err := os.ReadFile("testdata/basic.wat")
	if err != nil {
		f.Fatal(err)
	}
	bin, err := parseWAT(src)
	if err != nil {
		f.Fatal(err)
	}
	header := []byte("\x00asm\x0d\x00\x01\x00")
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	f.Add(bin)
	f.Add(bin[:len(bin)/2])
	f.Add(bin[:len(bin)-1])
	f.Add(header)
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	// A core module section, then a custom section, each declaring ~4 GiB.
	f.Add(cat(header, []byte{0x01, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x61}))
	f.Add(cat(header, []byte{0x00, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0x04, 'n', 'a', 'm', 'e'}))
	// A section length LEB that never ends.
	f.Add(cat(header, bytes.Repeat([]byte{0x80}, 32)))
	f.Add([]byte(strings.Repeat("(component ", 20000)))
	f.Add([]byte("(component (core module (func (export \"f\") " + strings.Repeat("(block ", 20000) + ")))"))
	f.Add([]byte("(component (core module (memory 65536 65536)) (core module (table 100000000 funcref)))"))
	// A module that gets a memory image, and one whose data is too sparse
	// for one (64 KiB at 0, one byte near 4 GiB: no 4 GiB image is built).
	f.Add([]byte(imageProbe(4, 0x5a, "\\01", 200000, "")))
	f.Add([]byte(`(component (core module (memory 65536) (data (i32.const 0) "` + strings.Repeat("\\01", 70000) + `") (data (i32.const 4294967290) "\\02")))`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := testEngine.Compile(data)
		if err != nil {
			if !strings.Contains(err.Error(), "E-RUN-100") {
				t.Fatalf("error without E-RUN-100: %v", err)
			}
			return
		}
		for _, it := range append(c.Imports(), c.Exports()...) {
			_ = it.String()
		}
		n := len(c.Exports())
		c.Close()
		c, err = testEngine.Compile(data)
		if err != nil {
			t.Fatalf("compiled once, then: %v", err)
		}
		defer c.Close()
		if !c.FromCache || len(c.Exports()) != n {
			t.Fatalf("second compile: from cache %v, %d exports (want %d)", c.FromCache, len(c.Exports()), n)
		}
	})
}
