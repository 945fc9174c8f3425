package wasm

import "github.com/murmur-go/murmur/internal/wasmhost"

// UseRunKind makes turns run as kind until the returned func restores it.
func UseRunKind(kind wasmhost.RunKind) (restore func()) {
	old := runKind
	runKind = kind
	return func() { runKind = old }
}
