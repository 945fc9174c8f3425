package wit

import (
	"strings"

	"github.com/murmur-go/murmur/internal/wasmhost"
	// Go's wasi:io, registered with the engine for the runs GoIO gives it.
	_ "github.com/murmur-go/murmur/internal/wasmhost/wasiio"
)

// GoIO is Murmur's rule for who answers a capsule's, tool's or hook's
// wasi:io (it goes with the wasi:http grant, GrantHTTP): Go (wasmhost.RunConfig.GoIO) when its component uses wasi:http
// and imports no wasi:filesystem, wasmtime's wasip2 otherwise. Such a
// component can reach neither its work folder nor the engine's spool, so
// nothing in its run needs wasmtime's file streams: its response bodies
// are read from the socket as they arrive, where a body through the spool
// costs a round trip to a thread of wasmtime's blocking pool for every read
// that meets its end (internal/wasmhost/wasihttp/RATIONALE.md, "Bodies: the spool,
// or Go's wasi:io"). A component with a filesystem keeps the spool, whose
// bulk throughput Go's streams do not match. A driver's run gets Go's
// wasi:io unless its artifact has a state store (internal/driver/wasm).
func GoIO(c *wasmhost.Component) bool {
	http, fs := false, false
	for _, it := range c.Imports() {
		switch {
		case strings.HasPrefix(it.Name, "wasi:http/"):
			http = true
		case strings.HasPrefix(it.Name, "wasi:filesystem/"):
			fs = true
		}
	}
	return http && !fs
}

// ChooseIO sets rc.GoIO by GoIO for c, dropping the preopens a run with
// Go's wasi:io has no filesystem to open (they are out of the component's
// reach: it imports no wasi:filesystem).
func ChooseIO(c *wasmhost.Component, rc *wasmhost.RunConfig) {
	if GoIO(c) {
		rc.GoIO = true
		rc.WASI.Preopens = nil
	}
}
