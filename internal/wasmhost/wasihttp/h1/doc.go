// Package h1 is the HTTP/1.1 client side of Murmur's wasi:http: the exchange
// a calling thread drives itself (Exchange: the request written, the head
// read with a short spin, a reused connection's closing replayed by
// net/http's rule), over connections it reads and writes with poll(2) and
// read(2)/write(2), no goroutine in between (Conn), the pool that keeps them
// idle between exchanges and runs (Pool, handed to a run by its caller), the
// dialer that connects only to the addresses a name resolved to once
// (Resolve, Dial, and NewTransport for net/http's Transport), the checks on
// what a guest controls in a request (ValidAuthority, ValidPath, …), and the
// mapping of a failure onto a wasi:http error-code (Classify).
//
// It is pure Go, with no cgo and no engine: internal/wasmhost/wasihttp drives
// it from a guest's host calls, and its tests run on httptest servers. It is the
// only package of the engine's tree that dials (internal/archtest). Why the
// exchange is done on the calling thread, and what it saves, is in
// internal/wasmhost/wasihttp/RATIONALE.md ("The exchange on the guest's thread").
package h1
