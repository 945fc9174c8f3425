package wit

import (
	"os"
	"testing"

	"github.com/murmur-go/murmur/internal/wasmhost"
)

// TestChooseIO: Go's wasi:io for a component that uses wasi:http and
// imports no wasi:filesystem (its preopens dropped), wasip2 for one that
// imports the filesystem or no wasi:http.
func TestChooseIO(t *testing.T) {
	eng, err := wasmhost.NewEngine(wasmhost.Config{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	for _, c := range []struct {
		path string
		want bool
	}{
		{"../../testdata/components/http-get-c/http-get-c.wasm", true}, // wasi:http, no filesystem
		{"../../testdata/components/driver-anthropic-c/driver-anthropic-c.wasm", true},
		{"../wasmhost/testdata/basic.wat", false},                                                                            // neither
		{`(component (import "wasi:http/types@0.2.0" (instance)) (import "wasi:filesystem/types@0.2.0" (instance)))`, false}, // both
		{`(component (import "wasi:http/types@0.2.0" (instance)))`, true},
	} {
		src := []byte(c.path)
		if c.path[0] != '(' {
			if src, err = os.ReadFile(c.path); err != nil {
				t.Fatal(err)
			}
		}
		comp, err := eng.Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		rc := wasmhost.RunConfig{WASI: wasmhost.WASI{Preopens: []wasmhost.Preopen{{HostDir: t.TempDir(), GuestPath: "/w"}}}}
		ChooseIO(comp, &rc)
		if rc.GoIO != c.want || (len(rc.WASI.Preopens) == 0) != c.want {
			t.Errorf("%s: GoIO %v with %d preopens, want GoIO %v (preopens dropped with it)", c.path, rc.GoIO, len(rc.WASI.Preopens), c.want)
		}
		comp.Close()
	}
}
