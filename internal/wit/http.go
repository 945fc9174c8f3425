package wit

import (
	"context"
	"errors"
	"log/slog"

	"github.com/murmur-go/murmur/internal/wasmhost"
)

// HTTPPolicy decides an outgoing wasi:http request: nil allows it, an error
// denies it (the guest gets HTTP-request-denied; the error is logged). The
// engine only carries the request to the policy (wasmhost.Host.HTTP); what
// Murmur allows is decided here and by the caller.
type HTTPPolicy func(ctx context.Context, req wasmhost.HTTPRequest) error

// ErrHTTPDenied is the policy answer of DenyAllHTTP.
var ErrHTTPDenied = errors.New("outbound HTTP is not granted")

// DenyAllHTTP denies every request: Murmur's wasi:http until real egress
// through capabilities.network.allow exists.
func DenyAllHTTP(context.Context, wasmhost.HTTPRequest) error { return ErrHTTPDenied }

// GrantHTTP grants wasi:http on h, deciding each request with policy (nil:
// DenyAllHTTP). log receives one line per request (nil: slog.Default()). A
// request the policy allows is still answered internal-error: the engine
// has no egress yet.
func GrantHTTP(h *wasmhost.Host, policy HTTPPolicy, log *slog.Logger) {
	if policy == nil {
		policy = DenyAllHTTP
	}
	if log == nil {
		log = slog.Default()
	}
	h.HTTP(func(ctx context.Context, req wasmhost.HTTPRequest) error {
		err := policy(ctx, req)
		if err != nil {
			log.Info("wasi:http request denied", "method", req.Method, "url", req.URL(), "reason", err.Error())
			return err
		}
		log.Info("wasi:http request allowed by policy but egress is not implemented", "method", req.Method, "url", req.URL())
		return nil
	})
}
