// Package wasmhost runs WebAssembly components (WASI 0.2) through wasmtime's
// component C API — wasmtime 39, linked from the static library inside
// github.com/bytecodealliance/wasmtime-go/v39 — via cgo. It is the only
// package of Murmur with cgo; everything else sees a small Go API:
//
//   - Engine (NewEngine): one per process. Cranelift, the component model,
//     an epoch ticker (every 10 ms) for deadlines, and a memory creator that
//     makes memory limits observable. Compile turns component bytes (binary
//     or WAT) into a Component, through an on-disk cache
//     (~/.murmur/compiled/, MAC-verified before wasmtime sees a file).
//   - Component: immutable, shared by all runs; Imports/Exports describe it
//     with WIT-like types.
//   - Host: the Go functions a run grants, by interface and function name
//     (Define), plus typed helpers for the murmur interfaces of contracts §9
//     (ToolRegistry, ArtifactManager, MessageSend, Task, TextChunks) and a
//     deny-only wasi:http (HTTP). Whatever a component imports that the Host
//     does not grant is linked anyway and fails when called with
//     "capability not granted: <iface>#<func>".
//   - Instance (Engine.Instantiate with a RunConfig: Limits, WASI, Host): one
//     store for one run. Call / CallCapsuleRun / CallToolRun call exports
//     with Go values (see Value), each bounded by the deadline.
//
// A call that does not return normally ends with a typed error, which the
// runtime maps onto the spec's endings: *TrapError (trapped),
// *DeadlineError (deadline_exceeded; Waiting and Call for the call_deadline
// line), *ResourceLimitError (resource_limit), plus *ExitError and
// *CancelledError. After such an ending the instance is dead: use a fresh
// one per run.
//
// See docs/wasmhost.md for the reference and RATIONALE.md in this directory
// for why it is built this way.
package wasmhost
