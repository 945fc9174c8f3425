package wasm

// UseGoIO makes turns run with Go's wasi:io (on) or wasip2 and the spool
// (off) until the returned func restores it.
func UseGoIO(on bool) (restore func()) {
	old := goIO
	goIO = on
	return func() { goIO = old }
}
