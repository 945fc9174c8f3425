package wasihttp

import (
	"context"

	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp/h1"
)

// codeOf maps a request's failure to the wasi:http error-code a guest
// library expects (h1.Classify), as a value of the guest's variant.
func codeOf(ctx context.Context, err error) wasmhost.Value { return codeValue(h1.Classify(ctx, err)) }

// codeValue lowers an h1.Code into the error-code variant.
func codeValue(c h1.Code) wasmhost.Value {
	switch c.Case {
	case "internal-error":
		return internalError(c.Internal)
	case "DNS-error":
		return wasmhost.Variant{Case: c.Case, Value: wasmhost.Record{{Name: "rcode", Value: wasmhost.Some(c.Rcode)}, {Name: "info-code", Value: wasmhost.None}}}
	case "TLS-alert-received":
		return wasmhost.Variant{Case: c.Case, Value: wasmhost.Record{{Name: "alert-id", Value: wasmhost.Some(c.AlertID)}, {Name: "alert-message", Value: wasmhost.Some(c.AlertMessage)}}}
	}
	return errCode(c.Case)
}
