// Package httpcore is the Go guest kit's small HTTP client over
// wasi:http@0.2.12, without net/http: a request is a method, a URL, header
// fields in order and a body; a response is a status, header fields and a
// body to read. The host answers it within the component's grant (a
// capsule's or tool's capabilities.network.allow, a driver's gateway
// endpoint) and follows no redirect.
//
//	resp, err := httpcore.Do("POST", endpoint+"/v1/messages",
//		[][2]string{{"content-type", "application/json"}}, body)
//	if err != nil {
//		return err // a *httpcore.Error when the host refused or failed it
//	}
//	defer resp.Body.Close()
//
// It is for components that start often and do little (a driver runs a fresh
// instance every turn): every package a component imports is initialised
// when it is instantiated, and net/http with crypto/tls is most of a
// component's size and start. guest/wasihttp's net/http RoundTripper is
// built on this package; use that one where code expects net/http.
//
// Header names are sent as given (wasi:http fields are case-insensitive;
// the host may refuse a name or value that is not valid HTTP). The
// package's types compile on every platform; Send and Do exist only in
// wasip1 builds.
package httpcore

import (
	"errors"
	"io"
	"strconv"
	"strings"
)

// Request is one outgoing request.
type Request struct {
	// Method is the method ("" is GET).
	Method string
	// Scheme is "http" or "https" (another is sent as given).
	Scheme string
	// Authority is host[:port].
	Authority string
	// Path is the path with its query ("" is "/").
	Path string
	// Header is the request's header fields, sent in order.
	Header [][2]string
	// Body is read to its end and sent; nil sends none.
	Body io.Reader
	// ContentLength > 0 is sent as content-length (and Body must give
	// exactly that many bytes); otherwise a body is sent chunked.
	ContentLength int64
	// Trailer, when set, is called once the body is written; the fields it
	// returns are sent as the request's trailers (a field the host refuses
	// is left out: the body has been sent by then).
	Trailer func() [][2]string
}

// NewRequest is a request for method to url (scheme://authority[/path][?query];
// a fragment is not sent) with header; set Body and ContentLength to send one.
func NewRequest(method, url string, header [][2]string) (*Request, error) {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok || scheme == "" {
		return nil, errors.New("httpcore: " + strconv.Quote(url) + " is not an absolute URL (scheme://host/path)")
	}
	rest, _, _ = strings.Cut(rest, "#")
	authority, path := rest, "/"
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, path = rest[:i], rest[i:]
		if path[0] == '?' {
			path = "/" + path
		}
	}
	if authority == "" {
		return nil, errors.New("httpcore: " + strconv.Quote(url) + " has no host")
	}
	return &Request{Method: method, Scheme: strings.ToLower(scheme), Authority: authority, Path: path, Header: header}, nil
}

// Response is a response whose status and headers are in; its body is read
// from Body, which the caller closes.
type Response struct {
	// Status is the status code.
	Status int
	// Header is the response's header fields as the host gave them
	// (lower-case names), in order.
	Header [][2]string
	// ContentLength is the declared content-length, -1 when none is.
	ContentLength int64
	// Body is the response body (an io.ReadCloser and io.WriterTo).
	Body *Body

	trailer [][2]string
}

// Body is a response body read from its input-stream; at the end it
// finishes the body and reads the trailers (or the error that ended it).
type Body struct {
	resp, body, stream uint32
	r                  *Response
	pending            []byte
	done               bool
	err                error
	// left is what the declared content-length still promises (-1: none
	// declared). Reaching 0 finishes the body without the read that would
	// only report the stream closed (a host round trip per response).
	left int64
	// closed: a read ahead found the stream closed; the next fill
	// finishes the body.
	closed bool
	// full: the last blocking read gave all it was asked for.
	full bool
}

// Get is the first value of the header field name (case-insensitive).
func (r *Response) Get(name string) (string, bool) { return get(r.Header, name) }

// Trailer is the response's trailer fields: none until Body has been read
// to its end.
func (r *Response) Trailer() [][2]string { return r.trailer }

func get(fields [][2]string, name string) (string, bool) {
	for _, f := range fields {
		if strings.EqualFold(f[0], name) {
			return f[1], true
		}
	}
	return "", false
}

// Error is a request the host answered with a wasi:http error-code, such as
// HTTP-request-denied (the grant does not cover the URL) or
// HTTP-response-body-size.
type Error struct{ Code string }

func (e *Error) Error() string { return "wasi:http: " + e.Code }

// errorCodes are wasi:http/types error-code's cases, in WIT order.
var errorCodes = [...]string{"DNS-timeout", "DNS-error", "destination-not-found", "destination-unavailable",
	"destination-IP-prohibited", "destination-IP-unroutable", "connection-refused", "connection-terminated",
	"connection-timeout", "connection-read-timeout", "connection-write-timeout", "connection-limit-reached",
	"TLS-protocol-error", "TLS-certificate-error", "TLS-alert-received", "HTTP-request-denied",
	"HTTP-request-length-required", "HTTP-request-body-size", "HTTP-request-method-invalid",
	"HTTP-request-URI-invalid", "HTTP-request-URI-too-long", "HTTP-request-header-section-size",
	"HTTP-request-header-size", "HTTP-request-trailer-section-size", "HTTP-request-trailer-size",
	"HTTP-response-incomplete", "HTTP-response-header-section-size", "HTTP-response-header-size",
	"HTTP-response-body-size", "HTTP-response-trailer-section-size", "HTTP-response-trailer-size",
	"HTTP-response-transfer-coding", "HTTP-response-content-coding", "HTTP-response-timeout",
	"HTTP-upgrade-failed", "HTTP-protocol-error", "loop-detected", "configuration-error", "internal-error"}

func errorCode(c uint8) *Error {
	if int(c) < len(errorCodes) {
		return &Error{Code: errorCodes[c]}
	}
	return &Error{Code: "error-code " + strconv.Itoa(int(c))}
}

// methods are wasi:http/types method's cases before other(string), in WIT order.
var methods = [...]string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}

// methodCase is m's method discriminant: a named case, or other (9).
func methodCase(m string) uint32 {
	for i, x := range methods {
		if x == m {
			return uint32(i)
		}
	}
	return uint32(len(methods))
}

// schemeCase is s's scheme discriminant: HTTP, HTTPS or other (2).
func schemeCase(s string) uint32 {
	switch s {
	case "http":
		return 0
	case "https":
		return 1
	}
	return 2
}

// (At the end of the file, so that the wasip1 build's line numbers, and so
// the committed components, do not move.)
//lint:file-ignore U1000 Body's fields are used by the wasip1 build (httpcore_wasip1.go), which staticcheck on the host does not see
