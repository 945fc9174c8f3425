//go:build wasip1

package guest

import (
	"os"
	"runtime/debug"
	"strconv"
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
		os.Stderr.WriteString("capsule: " + err.Error() + "\n")
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
			os.Stderr.WriteString("panic: " + panicText(v) + "\n\n" + string(debug.Stack()))
			trap()
		}
	}()
	fn()
}

func fatal(msg string) {
	os.Stderr.WriteString(msg + "\n")
	trap()
}

// panicText is a panic value as Go's %v writes the common ones (without fmt,
// which would link reflection into every component).
func panicText(v any) string {
	switch x := v.(type) {
	case error:
		return x.Error()
	case interface{ String() string }:
		return x.String()
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return "a panic value of a type the kit does not print"
}
