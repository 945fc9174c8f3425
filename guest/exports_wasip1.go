//go:build wasip1

package guest

import (
	"fmt"
	"os"
	"runtime/debug"
)

// The component's exports. Both are always present in the core module; the world a
// component is built for decides which one is lifted (the other is left unused).

//go:wasmexport murmur:capsule/run@0.1.0#run
func exportCapsuleRun() {
	callPins.release() // a capsule's run takes no parameters
	collectorOn()
	defer collectorOff()
	if capsuleFn == nil {
		fatal("guest: no capsule registered: call guest.Capsule(run) from an init function")
	}
	var err error
	guard(func() { err = capsuleFn() })
	if err != nil {
		fmt.Fprintf(os.Stderr, "capsule: %v\n", err)
		os.Exit(1)
	}
}

//go:wasmexport murmur:tool/run@0.1.0#run
func exportToolRun(dDisc, dPtr, dLen, lDisc, lPtr, lLen uint32) uint32 {
	var in ToolInput
	guard(func() { in = toolInputFromFlat(linear, dDisc, dPtr, dLen, lDisc, lPtr, lLen) })
	callPins.release() // parameters are copied out
	collectorOn()
	defer collectorOff()
	if toolFn == nil {
		fatal("guest: no tool registered: call guest.Tool(run) from an init function")
	}
	var out ToolResult
	guard(func() { out = toolFn(in) })
	var p uint32
	guard(func() { p = writeToolResult(linear, out) })
	return p // pinned in callPins until post-return
}

// postToolRun runs while the host may not be left: it must not allocate.
//
//go:wasmexport cabi_post_murmur:tool/run@0.1.0#run
func postToolRun(uint32) { callPins.release() }

// guard runs fn and turns a panic into a trap, after printing it as Go would.
func guard(fn func()) {
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(os.Stderr, "panic: %v\n\n%s", v, debug.Stack())
			trap()
		}
	}()
	fn()
}

func fatal(msg string) {
	fmt.Fprintln(os.Stderr, msg)
	trap()
}
