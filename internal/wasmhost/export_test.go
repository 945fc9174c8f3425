package wasmhost

import "github.com/murmur-go/murmur/internal/wasmhost/wasihttp/h1"

// SpoolOnly keeps c's wasi:http bodies on the spool even where Go would
// answer its wasi:io (Component.goIO), for tests of the spool path.
func SpoolOnly(c *Component) { c.spoolOnly = true }

// SetSyncExchanges turns the exchange on the guest's thread on or off
// (off: every request goes through the transport), for the exchange
// matrix; it answers a function that restores it.
func SetSyncExchanges(on bool) (restore func()) {
	old := syncExchanges
	syncExchanges = on
	return func() { syncExchanges = old }
}

// SharedEngine is the engine the package's tests share.
func SharedEngine() *Engine { return testEngine }

// DefaultPoolCloseIdle closes the idle connections runs keep by default.
func DefaultPoolCloseIdle() { h1.DefaultPool.CloseIdle() }
