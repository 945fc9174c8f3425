package wasihttp

import "github.com/murmur-go/murmur/internal/wasmhost"

// SetSyncExchanges turns the exchange on the guest's thread on or off
// (off: every request goes through the transport), for the exchange
// matrix; it answers a function that restores it.
func SetSyncExchanges(on bool) (restore func()) {
	old := syncExchanges
	syncExchanges = on
	return func() { syncExchanges = old }
}

// SharedEngine is the engine the package's tests share.
func SharedEngine() *wasmhost.Engine { return testEngine }
