package wasihttp

import (
	"strings"

	"github.com/murmur-go/murmur/internal/wasmhost"
)

// ProviderName is the name wasi:http registers under with the engine
// (wasmhost.Register, wasmhost.Host.Provide).
const ProviderName = "wasi:http"

func init() { wasmhost.Register(ProviderName, provider{}) }

// provider is Go's wasi:http as the engine's Provider.
type provider struct{}

// Provides: wasi:http/types and wasi:http/outgoing-handler, at whatever
// version the component imports (the types are taken from its own
// imports; what is not 0.2-shaped fails when called).
func (provider) Provides(instance string) bool {
	iface, _, _ := strings.Cut(instance, "@")
	return iface == "wasi:http/types" || iface == "wasi:http/outgoing-handler"
}

func (provider) Func(iface, fn string, _ *wasmhost.FuncType) wasmhost.ProviderFunc {
	return funcFor(iface, fn)
}

// Open makes the run's wasi:http state: a run whose wasi:io is Go's gets
// its bodies live (in memory and on the socket); the others a spool
// directory, the run's last preopen, where the engine streams body files.
func (provider) Open(v *wasmhost.Run, w wasmhost.WASI) (wasmhost.WASI, error) {
	g, _ := v.Config().(*Grant)
	if g == nil {
		return w, nil
	}
	h, err := newHTTPRun(g, v.GoIO())
	if err != nil {
		return w, err
	}
	h.run = &run{Run: v, http: h}
	v.SetState(h)
	if !h.live {
		// Last: the engine's stream helper opens through the last preopen.
		w.Preopens = append(append([]wasmhost.Preopen(nil), w.Preopens...),
			wasmhost.Preopen{HostDir: h.spool.dir, GuestPath: spoolGuestPath, ForStreams: true})
	}
	return w, nil
}

// spoolGuestPath is where the spool directory appears to the guest.
const spoolGuestPath = "/.murmur-http"

// run is what the wasi:http functions see of a run: the engine's view and
// the run's wasi:http state.
type run struct {
	*wasmhost.Run
	http *httpRun
}

// Close ends the run's wasi:http state with the run (the engine calls it
// once the store is gone).
func (h *httpRun) Close() error {
	h.close()
	return nil
}
