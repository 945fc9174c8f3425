package wasmhost

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"unsafe"
)

// parseWAT converts WebAssembly text (a component or a core module) to its
// binary form with wasmtime's parser. Compile accepts text directly; this is
// for tests that need the binary (hashes, truncation).
func parseWAT(text []byte) ([]byte, error) {
	if len(text) == 0 {
		return nil, errors.New("wasmhost: empty WAT")
	}
	var out C.wasm_byte_vec_t
	if err := C.wasmtime_wat2wasm((*C.char)(unsafe.Pointer(&text[0])), C.size_t(len(text)), &out); err != nil {
		return nil, errors.New("wasmhost: " + firstLine(errorText(err)))
	}
	defer C.wasm_byte_vec_delete(&out)
	return C.GoBytes(unsafe.Pointer(out.data), C.int(out.size)), nil
}
