package wasmhost

import (
	"sync"

	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp/h1"
)

// spoolOnly marks the components tests run on the spool path although
// the callers' rule (callerIO) would give them Go's wasi:io.
var spoolOnly sync.Map

// SpoolOnly keeps c's runs in the tests on the spool path (callerIO).
func SpoolOnly(c *Component) { spoolOnly.Store(c, true) }

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
