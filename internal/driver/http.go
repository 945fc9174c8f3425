package driver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// ErrRedirect is the cause of a call whose endpoint answered with a redirect:
// redirects are never followed, so the key cannot travel to another host.
var ErrRedirect = errors.New("the endpoint answered with a redirect, which is not followed (the key goes to the configured endpoint only)")

// HTTPClient returns the client the provider built-ins send with: no proxy
// (Proxy nil, so HTTP_PROXY and the like are never consulted), no redirects,
// and no timeout of its own (the call's context bounds each call).
func HTTPClient() *http.Client {
	t := &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport: t,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return ErrRedirect
		},
	}
}

// StatusError builds the error of a call the provider answered with an error
// status after the retries; cause carries the provider's own message.
func StatusError(driver, keyVariable string, status int, cause error) *Error {
	switch {
	case status == http.StatusUnauthorized:
		return KeyRefused(driver, keyVariable, cause)
	case status == http.StatusTooManyRequests:
		return &Error{Kind: KindRateLimited, Driver: driver, Status: status,
			Message: "the provider is rate limiting (HTTP 429) and still was after the retries", Err: cause}
	case status >= 500:
		return &Error{Kind: KindProvider, Driver: driver, Status: status,
			Message: fmt.Sprintf("the provider failed (HTTP %d) and still did after the retries", status), Err: cause}
	default:
		return &Error{Kind: KindProvider, Driver: driver, Status: status,
			Message: fmt.Sprintf("the provider refused the request (HTTP %d)", status), Err: cause}
	}
}

// TransportError builds the error of a call that failed without an error
// status: a redirect, a stream cut short, an answer that is not JSON, or no
// connection at all. A provider driver passes what its SDK returned.
func TransportError(driver string, err error) *Error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, ErrRedirect):
		return &Error{Kind: KindProvider, Driver: driver, Message: "the endpoint redirected", Err: ErrRedirect}
	case errors.As(err, &syn), errors.As(err, &typ):
		return &Error{Kind: KindMalformed, Driver: driver, Message: "the provider's answer is not its JSON protocol", Err: err}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Kind: KindIncomplete, Driver: driver, Message: "the provider's answer was cut short", Err: err}
	default:
		return &Error{Kind: KindUnreachable, Driver: driver, Message: "the provider could not be reached", Err: err}
	}
}
