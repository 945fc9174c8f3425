package wasmhost

import (
	"context"

	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp/h1"
)

// codeOf maps a request's failure to the wasi:http error-code a guest
// library expects (h1.Classify), as a value of the guest's variant.
func codeOf(ctx context.Context, err error) Value { return codeValue(h1.Classify(ctx, err)) }

// codeValue lowers an h1.Code into the error-code variant.
func codeValue(c h1.Code) Value {
	switch c.Case {
	case "internal-error":
		return internalError(c.Internal)
	case "DNS-error":
		return Variant{Case: c.Case, Value: Record{{"rcode", Some(c.Rcode)}, {"info-code", None}}}
	case "TLS-alert-received":
		return Variant{Case: c.Case, Value: Record{{"alert-id", Some(c.AlertID)}, {"alert-message", Some(c.AlertMessage)}}}
	}
	return errCode(c.Case)
}
