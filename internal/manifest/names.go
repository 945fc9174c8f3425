package manifest

import (
	"fmt"
	"strings"
)

// DefaultScope is the scope a bare manifest name is given: "hello" is
// local/hello.
const DefaultScope = "local"

// validSegment reports whether s is one scope or name: [a-z0-9][a-z0-9-]{0,62}.
func validSegment(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0:
		default:
			return false
		}
	}
	return true
}

// ValidSegment reports whether s is a valid scope, bare name or state store
// name: [a-z0-9][a-z0-9-]{0,62}.
func ValidSegment(s string) bool { return validSegment(s) }

// IsFullName reports whether s is exactly <scope>/<name> with both parts valid.
func IsFullName(s string) bool {
	i := strings.IndexByte(s, '/')
	if i < 0 {
		return false
	}
	return validSegment(s[:i]) && validSegment(s[i+1:])
}

// NormalizeName turns a manifest name into a full name: a bare "worker" becomes
// "local/worker", a full name is kept, anything else is an error (plain, no
// position: the parser adds the file position itself).
func NormalizeName(s string) (string, error) {
	if IsFullName(s) {
		return s, nil
	}
	if validSegment(s) {
		return DefaultScope + "/" + s, nil
	}
	return "", fmt.Errorf("%q is not a valid name: scope and name each must match [a-z0-9][a-z0-9-]{0,62}", s)
}

// ReservedVersion reports whether v is one of the versions that resolve to
// nothing (latest, stable, edge: no store resolves them), which no manifest
// may declare.
func ReservedVersion(v string) bool {
	switch v {
	case "latest", "stable", "edge":
		return true
	}
	return false
}

// validEnvName reports whether s is a portable environment variable name.
func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// ValidEnvName reports whether s is a valid environment variable name
// ([A-Za-z_][A-Za-z0-9_]*), the shape env.allow entries must have.
func ValidEnvName(s string) bool { return validEnvName(s) }

// EnvRef reports whether s is exactly a "${NAME}" reference, and returns NAME.
func EnvRef(s string) (name string, ok bool) {
	if len(s) < 4 || !strings.HasPrefix(s, "${") || !strings.HasSuffix(s, "}") {
		return "", false
	}
	name = s[2 : len(s)-1]
	if !validEnvName(name) {
		return "", false
	}
	return name, true
}
