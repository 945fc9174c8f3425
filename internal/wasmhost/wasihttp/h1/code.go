package h1

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// Code is a wasi:http error-code, by case name, with the payload of the
// cases that carry one; the engine lowers it into the guest's variant.
type Code struct {
	Case string
	// Internal is internal-error's text (Case "internal-error").
	Internal string
	// Rcode is DNS-error's rcode (Case "DNS-error").
	Rcode string
	// AlertID and AlertMessage are TLS-alert-received's.
	AlertID      uint8
	AlertMessage string
}

// Cancelled is the code of an exchange given up by its run or its guest.
var Cancelled = Code{Case: "internal-error", Internal: "murmur: the request was cancelled"}

// Classify maps a request's failure (err, under ctx) to the wasi:http
// error-code a guest library expects.
func Classify(ctx context.Context, err error) Code {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(err, ErrConnectTimeout) || errors.Is(cause, ErrConnectTimeout):
		return Code{Case: "connection-timeout"}
	case errors.Is(cause, ErrFirstByteTimeout):
		return Code{Case: "connection-read-timeout"}
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(cause, context.DeadlineExceeded):
		return Code{Case: "HTTP-response-timeout"}
	case errors.Is(err, context.Canceled):
		return Cancelled
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsTimeout {
			return Code{Case: "DNS-timeout"}
		}
		return Code{Case: "DNS-error", Rcode: dnsRcode(dns)}
	}
	var cert *tls.CertificateVerificationError
	var unk x509.UnknownAuthorityError
	var host x509.HostnameError
	var inv x509.CertificateInvalidError
	if errors.As(err, &cert) || errors.As(err, &unk) || errors.As(err, &host) || errors.As(err, &inv) {
		return Code{Case: "TLS-certificate-error"}
	}
	var alert tls.AlertError
	if errors.As(err, &alert) {
		return Code{Case: "TLS-alert-received", AlertID: uint8(alert), AlertMessage: alert.Error()}
	}
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) || strings.Contains(err.Error(), "tls: ") {
		return Code{Case: "TLS-protocol-error"}
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return Code{Case: "connection-refused"}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return Code{Case: "connection-terminated"}
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return Code{Case: "destination-unavailable"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Code{Case: "HTTP-response-incomplete"}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return Code{Case: "connection-timeout"}
	}
	if errors.Is(err, io.EOF) {
		return Code{Case: "connection-terminated"}
	}
	return Code{Case: "HTTP-protocol-error"}
}

func dnsRcode(d *net.DNSError) string {
	if d.IsNotFound {
		return "NXDOMAIN"
	}
	return d.Err
}
