package guest

// The functions a component registers from an init function. The exported
// murmur:capsule/run and murmur:tool/run entry points (wasip1 builds) call them.
var (
	capsuleFn func() error
	toolFn    func(ToolInput) ToolResult
)

// Capsule registers the script capsule's run function. Call it from an init function:
// a reactor component never runs main. run is called once per session; see the
// package documentation for how its return and panics reach the host.
func Capsule(run func() error) {
	if run == nil {
		panic("guest.Capsule: nil run function")
	}
	capsuleFn = run
}

// Tool registers a tool's (or driver's) run function. Call it from an init function.
// The host may call it many times on one instance.
func Tool(run func(ToolInput) ToolResult) {
	if run == nil {
		panic("guest.Tool: nil run function")
	}
	toolFn = run
}
