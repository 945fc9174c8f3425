// Package wasmhost runs WebAssembly components through wasmtime's component
// C API (wasmtime 39, from github.com/bytecodealliance/wasmtime-go/v39) via
// cgo. It is the only package of Murmur with cgo.
//
// One Engine per process compiles components (with an on-disk cache) and
// advances the epoch used for deadlines. Each run is an Instance made by
// Engine.Instantiate from a Component and a RunConfig: limits, the WASI
// context and the Go host functions the run grants. Calls that do not return
// normally end with a typed error — *TrapError, *DeadlineError,
// *ResourceLimitError (see endings.go) — which the runtime maps onto the
// spec's endings. See docs/wasmhost.md and RATIONALE.md.
package wasmhost
