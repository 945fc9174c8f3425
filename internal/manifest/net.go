package manifest

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// NetEntry is one capabilities.network.allow or peer_fetch.allow entry.
// The forms are https://host[:port], http://host[:port], a bare host and a
// bare host:port. Hosts are kept in lower case (DNS names are case-insensitive),
// IPv6 literals without their brackets.
type NetEntry struct {
	Scheme string // "" bare, "http", "https"
	Host   string
	Port   int // 0 = none written
}

// String renders the entry in the form it was written (normalised case).
func (e NetEntry) String() string {
	h := e.Host
	if strings.IndexByte(h, ':') >= 0 {
		h = "[" + h + "]"
	}
	if e.Port != 0 {
		h += ":" + strconv.Itoa(e.Port)
	}
	if e.Scheme != "" {
		return e.Scheme + "://" + h
	}
	return h
}

// EffectivePort is the written port, or the scheme's default for a
// scheme://host entry, or 0 for a bare host (every port).
func (e NetEntry) EffectivePort() int {
	if e.Port != 0 {
		return e.Port
	}
	switch e.Scheme {
	case "https":
		return 443
	case "http":
		return 80
	}
	return 0
}

// ParseNetEntry parses one network entry. A path, query, fragment, userinfo,
// another scheme, a wildcard or a port outside 1..65535 is an error: the
// grant names hosts, and anything more would suggest a precision the egress
// filter does not have.
func ParseNetEntry(s string) (NetEntry, error) {
	var e NetEntry
	rest := s
	if i := strings.Index(rest, "://"); i >= 0 {
		sch := strings.ToLower(rest[:i])
		if sch != "http" && sch != "https" {
			return e, fmt.Errorf("%q: scheme %q is not allowed (use https://host[:port], http://host[:port], host or host:port)", s, rest[:i])
		}
		e.Scheme = sch
		rest = rest[i+3:]
	}
	if rest == "" {
		return e, fmt.Errorf("%q: no host", s)
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		what := map[byte]string{'/': "a path", '?': "a query", '#': "a fragment"}[rest[i]]
		return e, fmt.Errorf("%q has %s; an entry names a host and optionally a port, nothing more", s, what)
	}
	if strings.IndexByte(rest, '@') >= 0 {
		return e, fmt.Errorf("%q has user information; an entry names a host and optionally a port, nothing more", s)
	}
	host, port := rest, ""
	if strings.HasPrefix(rest, "[") {
		j := strings.IndexByte(rest, ']')
		if j < 0 {
			return e, fmt.Errorf("%q: unclosed '[' in an IPv6 address", s)
		}
		host = rest[1:j]
		after := rest[j+1:]
		if after != "" {
			if after[0] != ':' {
				return e, fmt.Errorf("%q: unexpected text after the IPv6 address", s)
			}
			port = after[1:]
			if port == "" {
				return e, fmt.Errorf("%q: empty port", s)
			}
		}
		if !validIPv6(host) {
			return e, fmt.Errorf("%q: %q is not an IPv6 address", s, host)
		}
	} else {
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			host, port = rest[:i], rest[i+1:]
			if port == "" {
				return e, fmt.Errorf("%q: empty port", s)
			}
		}
		if !validHost(host) {
			return e, fmt.Errorf("%q: %q is not a host name or address", s, host)
		}
	}
	if port != "" {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 || port[0] == '+' || port[0] == '-' {
			return e, fmt.Errorf("%q: port %q is not a number from 1 to 65535", s, port)
		}
		e.Port = p
	}
	// DNS names compare case-insensitively, and "example.com." is the same
	// host as "example.com": normalise both so coverage compares like with like.
	e.Host = strings.TrimSuffix(strings.ToLower(host), ".")
	return e, nil
}

// validHost accepts DNS names and IPv4 literals: labels of letters, digits,
// '-' and '_' separated by single dots. No wildcards: a host entry covers that
// host only, never its subdomains.
func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	h = strings.TrimSuffix(h, ".")
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			default:
				return false
			}
		}
	}
	return true
}

func validIPv6(h string) bool {
	if h == "" || strings.Count(h, ":") < 2 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F', c == ':', c == '.':
		default:
			return false
		}
	}
	return true
}

// NetCovers reports whether the parent entry covers the child entry
// (the spawn envelope's network axis, docs/roost.md): hosts must be equal
// (never subdomains); a bare host covers
// both schemes and every port; a bare host:port covers that port on both
// schemes; scheme://host[:port] covers only that exact form, a missing port
// being the scheme's default.
func NetCovers(parent, child NetEntry) bool {
	if parent.Host != child.Host {
		return false
	}
	switch {
	case parent.Scheme == "" && parent.Port == 0:
		return true
	case parent.Scheme == "":
		return child.EffectivePort() == parent.Port
	default:
		return child.Scheme == parent.Scheme && child.EffectivePort() == parent.EffectivePort()
	}
}

// NetListCovers reports whether some entry of parents covers child. Entries
// that do not parse cover nothing and are covered by nothing.
func NetListCovers(parents []string, child string) bool {
	c, err := ParseNetEntry(child)
	if err != nil {
		return false
	}
	for _, p := range parents {
		if pe, err := ParseNetEntry(p); err == nil && NetCovers(pe, c) {
			return true
		}
	}
	return false
}

// InstallCovers reports whether an install grant pattern covers a child
// name or pattern (the spawn envelope's install axis, docs/roost.md): "*"
// covers everything, "p*" every name and
// pattern beginning with "p", an exact name only itself.
func InstallCovers(parentPattern, child string) bool {
	if strings.HasSuffix(parentPattern, "*") {
		return strings.HasPrefix(child, strings.TrimSuffix(parentPattern, "*"))
	}
	return parentPattern == child
}

// ScopeCovers reports whether a parent filesystem scope covers a child scope
// (nil = undeclared). An undeclared parent holds the whole work folder and
// covers anything; a declared parent covers a child scope equal to it or
// beneath it by path components, and never an undeclared child.
func ScopeCovers(parent *string, child *string) bool {
	if parent == nil {
		return true
	}
	if child == nil {
		return false
	}
	p, c := path.Clean(*parent), path.Clean(*child)
	if p == "." || p == c {
		return true
	}
	return strings.HasPrefix(c, p+"/")
}

// CleanScope validates and cleans a filesystem.scope value: it must be
// relative and stay inside the work folder after cleaning.
func CleanScope(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("the scope is empty; omit the key to grant the whole work folder, or name a folder inside it")
	}
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, `\`) || (len(s) >= 2 && s[1] == ':') {
		return "", fmt.Errorf("%q is absolute; the scope is a path inside the work folder", s)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "", fmt.Errorf("%q contains a NUL byte", s)
	}
	c := path.Clean(s)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%q leaves the work folder", s)
	}
	return c, nil
}
