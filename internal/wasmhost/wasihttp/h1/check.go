package h1

import (
	"net"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// The guest controls header names and values, methods, authorities and
// paths; each is checked here before it reaches net/http (which would
// otherwise refuse late, or panic on some inputs), so the guest gets the
// error-code or header-error its library expects.

// ValidFieldName reports whether s is a header name net/http can write.
func ValidFieldName(s string) bool { return httpguts.ValidHeaderFieldName(s) }

// ValidFieldValue reports whether s is a header value net/http can write.
func ValidFieldValue(s string) bool { return httpguts.ValidHeaderFieldValue(s) }

// ForbiddenField reports whether a guest may not set the header name:
// connection management is the host's, and the target is
// the request's authority, never a header.
func ForbiddenField(name string) bool {
	switch strings.ToLower(name) {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host", "http2-settings", "te":
		return true
	}
	return false
}

// ValidToken reports whether s is an HTTP token (a method).
func ValidToken(s string) bool {
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

// ValidScheme reports whether s is a URI scheme.
func ValidScheme(s string) bool {
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

// ValidAuthority reports whether s is host[:port] with no userinfo, the
// host a DNS name or an IP literal.
func ValidAuthority(s string) bool {
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

// ValidPath reports whether s is an origin-form path with an optional query.
func ValidPath(s string) bool {
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
