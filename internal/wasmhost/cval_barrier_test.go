package wasmhost

import (
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// TestLowerIgnoresStaleCMemory lowers option, result and variant payload
// pointers into C memory full of stale bytes, as wasmtime hands it out
// (valrecord/vallist/valtuple _new_uninit, a host call's results), while
// collections run back to back. The stale bytes are the GC's clobbered-pointer
// pattern, which the runtime refuses to see in a pointer slot: a store that
// went through the GC write barrier would shade the old word and the process
// would die with "found bad pointer in Go heap" (in the field: a stale Go heap
// address left by malloc's previous user, then a marked free object).
func TestLowerIgnoresStaleCMemory(t *testing.T) {
	// A pointer-rich live heap keeps each mark phase (write barrier on) long.
	live := make([]*[2]int, 1<<19)
	for i := range live {
		live[i] = new([2]int)
	}
	stop := make(chan struct{})
	gcDone := make(chan struct{})
	go func() {
		defer close(gcDone)
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	defer func() { close(stop); <-gcDone; runtime.KeepAlive(live) }()

	cases := []struct {
		typ *Type
		v   Value
	}{
		{&Type{Kind: KindOption, Elem: tString}, None},
		{&Type{Kind: KindOption, Elem: tU64}, Some(uint64(7))},
		{&Type{Kind: KindResult, Ok: tU64}, Result{Value: uint64(7)}},
		{&Type{Kind: KindResult}, Result{IsErr: true}},
		{&Type{Kind: KindVariant, Cases: []Case{{Name: "a"}, {Name: "b", Type: tU64}}}, Variant{Case: "b", Value: uint64(7)}},
	}
	stale := strings.Repeat("\xad\xde", int(unsafe.Sizeof(cval{}))/2) // 0xdeaddead... little-endian
	for range 20000 {
		for _, c := range cases {
			// A wasmtime-allocated buffer of one value's size, full of stale bytes.
			var buf [1]cval
			lower(stale, tString, &buf[0])
			dst := (*cval)(*(*unsafe.Pointer)(unsafe.Add(of(&buf[0]), unsafe.Sizeof(uintptr(0)))))
			lower(c.v, c.typ, dst)
			if got := lift(dst, nil); !Equal(got, c.v) {
				t.Fatalf("lowered %v, lifted %v", c.v, got)
			}
			deleteVals(unsafe.Slice(dst, 1))
			deleteVals(buf[:])
		}
	}
}
