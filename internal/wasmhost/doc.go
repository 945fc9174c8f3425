// Package wasmhost runs WebAssembly components (WASI 0.2) through wasmtime's
// component C API — wasmtime 39, linked from the static library inside
// github.com/bytecodealliance/wasmtime-go/v39 — via cgo. It is the only
// package of Murmur with cgo. It knows no Murmur interface, record or
// policy (those are internal/wit's). Host interfaces answered in Go are
// plugged in as providers (Provider, Register): Go's wasi:io is the
// package wasiio, Go's wasi:http the package wasihttp (over the pure-Go
// HTTP/1.1 client wasihttp/h1, with the caller's connection pool). The
// engine imports no HTTP stack and owns no sockets. Everything else sees a
// small Go API:
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
//     (Define), and the providers it grants with their configuration
//     (Provide; wasihttp.Enable grants wasi:http). Whatever a component
//     imports that the Host does not grant is linked anyway and fails when
//     called with "capability not granted: <iface>#<func>".
//   - Provider (Register): a host interface answered in Go: Go's wasi:io
//     (internal/wasmhost/wasiio, for runs with RunConfig.GoIO) and Go's
//     wasi:http (internal/wasmhost/wasihttp, for runs whose Host grants
//     it). It names the instances it answers, gives each function's Go
//     answer, and keeps per-run state; it sees the run through Run (its
//     table of host objects, the call's deadline and context, the
//     deadline-aware waits on Pollables, the guest's memory, and wasip2
//     streams over files of its stream directory), and the Go streams and
//     pollables it hands out (InputStream, OutputStream, Pollable) are the
//     engine's, so that other providers' objects can wait with them.
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
