// Package wasihttp is Go's wasi:http for the engine (internal/wasmhost):
// wasi:http/types and wasi:http/outgoing-handler answered in Go for the
// runs whose Host grants it (Enable), registered as an engine provider
// when the package is imported. The caller decides what is allowed
// (Grant.Decide) and hands in the connection pool (Grant.Conns); the
// exchanges themselves are internal/wasmhost/wasihttp/h1's, and response
// bodies reach the guest through the spool (files of a per-run directory
// the engine streams) or, in a run whose wasi:io is Go's, as Go streams
// (RATIONALE.md).
package wasihttp
