package wasmhost

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"
)

// The guest's memory read by the host: wasi:http's fields functions take
// their values by canonical ABI pointer and length (see fieldsabi.go), and
// check each against the fields bound before a byte is copied
// (internal/wasmhost/wasihttp).

// guestRead copies n bytes at ptr of the run's memory; false when the range
// is outside it.
func (r *run) guestRead(ptr, n uint32) ([]byte, bool) {
	b := make([]byte, n)
	var p *C.uint8_t
	if n > 0 {
		p = (*C.uint8_t)(unsafe.Pointer(&b[0]))
	}
	if C.wh_run_read(r.c, C.uint32_t(ptr), C.uint32_t(n), p) != 0 {
		return nil, false
	}
	return b, true
}

// fieldPairsBatch is how many list elements are read from the guest at once.
const fieldPairsBatch = 1024

// guestElems calls each for the count elements of size bytes at ptr, read a
// batch at a time; it stops at the first false. False when the list lies
// outside the guest's memory.
func (r *run) guestElems(ptr, count, size uint32, each func(e []byte) bool) bool {
	for done := uint32(0); done < count; {
		k := min(count-done, fieldPairsBatch)
		b, ok := r.guestRead(ptr+done*size, k*size)
		if !ok {
			return false
		}
		for j := uint32(0); j < k; j++ {
			if !each(b[j*size : (j+1)*size]) {
				return true
			}
		}
		done += k
	}
	return true
}
