//go:build wasip1

package guest

import (
	"runtime"
	"runtime/debug"
	"unsafe"
)

// Memory handed to the host lives in one of three places:
//
//   - initArena: before the Go runtime has a heap. The preview1 adapter allocates its
//     state through cabi_realloc from inside _initialize (the Go runtime's first WASI
//     call happens during scheduler start-up), when Go code must not allocate. Those
//     allocations are permanent, so a never-freeing bump allocator is right.
//   - callPins: after initialization, cabi_realloc (export parameters lifted by the
//     host) and the result area of an export come from the Go heap. Go's collector
//     does not move heap objects, so an address stays valid while the object is
//     referenced; the pins keep it referenced until the kit has copied the
//     parameters out, or until the host's post-return call for a result.
//   - importPins: cabi_import_realloc, used by the host while it lowers an import's
//     results (strings, lists), and the return areas of import calls. Released as
//     soon as the kit has decoded the results.
//
// Keeping cabi_realloc and cabi_import_realloc apart is what makes a Go reactor
// work at all: a single heap-allocating cabi_realloc is entered by the adapter
// before the heap exists and the runtime aborts.
//
// The collector is off whenever the host may call a realloc: between calls (the
// host lifts the next call's parameters before the export is entered) and during an
// import call that returns strings or lists. The component model forbids a
// component to call any import while the host is inside its realloc ("cannot leave
// component instance"), and a Go allocation that starts a collection would call
// the clock through WASI. debug.SetGCPercent(-1) also waits for a collection in
// progress to finish, so none is left running. The collector runs normally while
// the component's own code runs.
var (
	initArena  [128 << 10]byte
	arenaUsed  uintptr
	heapReady  bool
	callPins   = pinSet{}
	importPins = pinSet{}
)

// gcPercent is the collector setting restored while the component's code runs.
var gcPercent = 100

func init() {
	heapReady = true
	runtime.MemProfileRate = 0 // no heap profiling: keeps allocation free of side trips
	collectorOff()
}

// collectorOn restores the collector for the component's own code.
func collectorOn() { debug.SetGCPercent(gcPercent) }

// collectorOff stops the collector (remembering its setting) before control goes
// to the host.
func collectorOff() { gcPercent = debug.SetGCPercent(-1) }

type pinSet map[uint32][]byte

func (ps pinSet) alloc(size, align uint32) uint32 {
	if align == 0 {
		align = 1
	}
	b := make([]byte, uintptr(size)+uintptr(align))
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	p := (base + uintptr(align) - 1) &^ (uintptr(align) - 1)
	ps[uint32(p)] = b
	return uint32(p)
}

func (ps pinSet) release() { clear(ps) }

func arenaAlloc(size, align uint32) uint32 {
	if align == 0 {
		align = 1
	}
	base := uintptr(unsafe.Pointer(&initArena[0]))
	p := (base + arenaUsed + uintptr(align) - 1) &^ (uintptr(align) - 1)
	end := p + uintptr(size)
	if end > base+uintptr(len(initArena)) {
		// Out of arena before the heap exists: nothing sane is left to do.
		trap()
	}
	arenaUsed = end - base
	return uint32(p)
}

func realloc(ps pinSet, old, oldSize, align, size uint32) uint32 {
	var p uint32
	if !heapReady {
		p = arenaAlloc(size, align)
	} else {
		p = ps.alloc(size, align)
	}
	if old != 0 && oldSize > 0 {
		n := min(oldSize, size)
		copy(linear.bytes(p, n), linear.bytes(old, n))
	}
	return p
}

//go:wasmexport cabi_realloc
func cabiRealloc(old, oldSize, align, size uint32) uint32 {
	return realloc(callPins, old, oldSize, align, size)
}

//go:wasmexport cabi_import_realloc
func cabiImportRealloc(old, oldSize, align, size uint32) uint32 {
	return realloc(importPins, old, oldSize, align, size)
}

// linearMem is the component's own linear memory; allocations go to a pin set.
type linearMem struct{ pins pinSet }

var linear = linearMem{pins: callPins}

func (linearMem) bytes(ptr, n uint32) []byte {
	if n == 0 {
		return nil
	}
	if uint64(ptr)+uint64(n) > 1<<32 {
		panic(abiError("memory range out of bounds"))
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), uintptr(ptr))), n)
}

func (l linearMem) alloc(size, align uint32) uint32 { return l.pins.alloc(size, align) }

// importMem allocates return areas for import calls from importPins.
var importMem = linearMem{pins: importPins}

// ptrOf returns the address of s's bytes (0 for an empty string).
func ptrOf(s string) uint32 {
	if len(s) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.StringData(s))))
}

// trap ends the current call with a WebAssembly trap: a load beyond any memory a
// wasm32 instance can have. Go on wasm has no unreachable intrinsic and its own
// faults (nil dereference, index out of range) are Go panics that exit the process
// with status 2 instead of trapping, so this is the one way to give the host a trap.
func trap() {
	p := (*uint64)(unsafe.Add(unsafe.Pointer(nil), uintptr(0xFFFF_FFF8)))
	trapSink = *opaque(p)
	// Not reached: the load faults. The panic (rather than an endless loop) keeps
	// the store above observable, so the compiler cannot drop the load.
	panic("guest: the trapping load did not fault")
}

// trapSink and opaque keep the faulting load from being optimized away.
var trapSink uint64

//go:noinline
func opaque(p *uint64) *uint64 { return p }
