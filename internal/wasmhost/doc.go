// Package wasmhost runs WebAssembly components (WASI 0.2) through wasmtime's
// component C API — wasmtime 39, linked from the static library inside
// github.com/bytecodealliance/wasmtime-go/v39 — via cgo. It is the only
// package of Murmur with cgo. It knows no Murmur interface, record or
// policy (those are internal/wit's). Beside the engine it still holds Go's
// wasi:io and the wasi:http mechanism, which reach into a run's store; the
// HTTP/1.1 client they drive, with its connection pool, is the pure-Go
// wasihttp/h1, and the pool is the caller's (HTTPGrant.Conns): the engine
// owns no sockets. Everything else sees a small Go API:
//
//   - Engine (NewEngine): one per process. Cranelift, the component model,
//     an epoch ticker (every 10 ms) for deadlines, and a memory creator that
//     makes memory limits observable. Compile turns component bytes (binary
//     or WAT) into a Component, through an on-disk cache in the directory
//     the caller gives (Config.CacheDir; MAC-verified before wasmtime sees a
//     file).
//   - Component: immutable, shared by all runs; Imports/Exports describe it
//     with WIT-like types.
//   - Host: the Go functions a run grants, by interface and function name
//     (Define), and the wasi:http hook point (HTTP: the engine builds the
//     request, the caller's function decides it, over the caller's pool). Whatever a component
//     imports that the Host does not grant is linked anyway and fails when
//     called with "capability not granted: <iface>#<func>".
//   - Instance (Engine.Instantiate with a RunConfig: Limits, WASI, Host): one
//     store for one run. Call calls an export with Go values (see Value),
//     bounded by the deadline. Limits has no defaults: every field is given
//     by the caller, and a zero one is refused.
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
