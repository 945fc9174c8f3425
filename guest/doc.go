// Package guest is the Go kit for writing Murmur script capsules and WASM tools.
//
// A component built with this kit is a standard Go wasip1 reactor
// (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared) whose murmur imports and
// exports are bridged by hand-written canonical-ABI glue in this package, then wrapped
// as a component for one of the worlds in the repository's wit/ directory by
// scripts/build-component.sh. No code generator is involved: the murmur 0.1 interfaces
// are small and fixed, so the glue is written once here and tested on the host.
//
// A script capsule registers its run function from an init function (a reactor never
// calls main):
//
//	func init() { guest.Capsule(run) }
//	func main() {}
//
//	func run() error {
//		task, err := guest.ReadTask()
//		...
//		res, err := guest.Invoke("echo-tool", guest.ToolInput{Data: guest.Some(task)})
//		...
//		return os.WriteFile("out/result.txt", []byte(*res.Data), 0o644)
//	}
//
// A tool registers a function from ToolInput to ToolResult with Tool.
//
// How a run ends, as the host sees it: returning nil is a normal return; returning an
// error prints "capsule: <error>" on stderr and exits with WASI exit status 1; a panic
// prints "panic: <value>" and a stack on stderr, then ends the call with a genuine
// WebAssembly trap (an out-of-bounds load), so hosts report it as trapped.
//
// HTTP is in two packages of the kit: guest/httpcore, a small client over
// wasi:http without net/http (for components that start often, such as
// drivers), and guest/wasihttp, a net/http RoundTripper built on it.
//
// The package compiles on every platform so that its types and layout code can be
// tested on the host; the functions that cross into the host (Invoke, Send, the
// artifact-manager calls, RequestInput, EmitChunk) exist only in wasip1 builds.
package guest
