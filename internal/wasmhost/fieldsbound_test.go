package wasmhost

import (
	"bytes"
	"os"
	"testing"
)

// The rewrite reaches the declarations wit-component writes (the Go kit's
// capsule-http and the C driver-anthropic-c fixtures) and leaves a
// component that declares no fields setter as it is.
func TestFieldsABIRewrite(t *testing.T) {
	for _, tc := range []struct {
		path    string
		changed bool
	}{
		{"../../testdata/components/capsule-http/capsule-http.wasm", true},
		{"../../testdata/components/driver-anthropic-c/driver-anthropic-c.wasm", true},
		{"../../testdata/components/http-get-c/http-get-c.wasm", false}, // imports no fields setter
		{"../../testdata/components/tool-echo/tool-echo.wasm", false},
	} {
		wasm, err := os.ReadFile(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		out := boundFieldsABI(wasm)
		if changed := !bytes.Equal(out, wasm); changed != tc.changed {
			t.Errorf("%s: rewritten %v, want %v", tc.path, changed, tc.changed)
		}
	}
}
