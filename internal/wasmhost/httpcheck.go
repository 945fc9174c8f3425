package wasmhost

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	"golang.org/x/net/http/httpguts"
)

// The guest controls header names and values, methods, authorities and
// paths; each is checked here before it reaches net/http (which would
// otherwise refuse late, or panic on some inputs), so the guest gets the
// error-code or header-error its library expects.

var errEOF = io.EOF

func validFieldName(s string) bool { return httpguts.ValidHeaderFieldName(s) }

func validFieldValue(s string) bool { return httpguts.ValidHeaderFieldValue(s) }

// forbiddenField: connection management is the host's, and the target is
// the request's authority, never a header.
func forbiddenField(name string) bool {
	switch strings.ToLower(name) {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host", "http2-settings", "te":
		return true
	}
	return false
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !httpguts.IsTokenRune(rune(s[i])) {
			return false
		}
	}
	return true
}

func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')
		if !ok {
			return false
		}
	}
	return true
}

// validAuthority: host[:port] with no userinfo; the host a DNS name or an
// IP literal.
func validAuthority(s string) bool {
	if strings.ContainsAny(s, "@/?#\\ \t\r\n") || len(s) > 255+6 {
		return false
	}
	host, port := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(s, "[") || strings.Count(s, ":") > 0 {
		return false
	}
	if port != "" {
		n := 0
		for _, c := range port {
			if c < '0' || c > '9' {
				return false
			}
			n = n*10 + int(c-'0')
			if n > 65535 {
				return false
			}
		}
		if n == 0 {
			return false
		}
	}
	if strings.HasPrefix(s, "[") {
		// Brackets hold an IPv6 literal and nothing else ("[0]:" passed
		// before the fuzzer found it; url.Parse refuses it).
		ip := net.ParseIP(host)
		return ip != nil && strings.Contains(host, ":")
	}
	if net.ParseIP(host) != nil {
		return true
	}
	if host == "" {
		return false
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// validPath: an origin-form path with an optional query.
func validPath(s string) bool {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.ContainsRune(s, '#') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	_, err := url.ParseRequestURI(s)
	return err == nil
}

// codeOf maps a request's failure to the wasi:http error-code a guest
// library expects.
func codeOf(ctx context.Context, err error) Value {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(err, errConnectTimeout) || errors.Is(cause, errConnectTimeout):
		return errCode("connection-timeout")
	case errors.Is(cause, errFirstByteTimeout):
		return errCode("connection-read-timeout")
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(cause, context.DeadlineExceeded):
		return errCode("HTTP-response-timeout")
	case errors.Is(err, context.Canceled):
		return internalError("murmur: the request was cancelled")
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsTimeout {
			return errCode("DNS-timeout")
		}
		return Variant{Case: "DNS-error", Value: Record{{"rcode", Some(dnsRcode(dns))}, {"info-code", None}}}
	}
	var cert *tls.CertificateVerificationError
	var unk x509.UnknownAuthorityError
	var host x509.HostnameError
	var inv x509.CertificateInvalidError
	if errors.As(err, &cert) || errors.As(err, &unk) || errors.As(err, &host) || errors.As(err, &inv) {
		return errCode("TLS-certificate-error")
	}
	var alert tls.AlertError
	if errors.As(err, &alert) {
		return Variant{Case: "TLS-alert-received", Value: Record{{"alert-id", Some(uint8(alert))}, {"alert-message", Some(alert.Error())}}}
	}
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) || strings.Contains(err.Error(), "tls: ") {
		return errCode("TLS-protocol-error")
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return errCode("connection-refused")
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return errCode("connection-terminated")
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return errCode("destination-unavailable")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errCode("HTTP-response-incomplete")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errCode("connection-timeout")
	}
	if errors.Is(err, io.EOF) {
		return errCode("connection-terminated")
	}
	return Variant{Case: "HTTP-protocol-error"}
}

func dnsRcode(d *net.DNSError) string {
	if d.IsNotFound {
		return "NXDOMAIN"
	}
	return d.Err
}
