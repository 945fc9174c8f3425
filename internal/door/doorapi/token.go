package doorapi

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
)

// OperatorTokenPrefix begins a door's operator token.
const OperatorTokenPrefix = "mdt1."

// operatorTokenBytes is how many random bytes an operator token carries.
const operatorTokenBytes = 32

// NewOperatorToken makes an operator token (docs/formations.md, door
// authentication): mdt1. and base64url (no padding) of 32 random bytes.
// Opaque: the door compares it in constant time. A session's own runtime
// makes one at launch; a parent's runtime makes a delegated child's and
// hands it in the child's approval line. Never log it: it goes to the door's
// running record (0600), the approval line and Authorization headers only.
func NewOperatorToken() (string, error) {
	var b [operatorTokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return OperatorTokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// IsOperatorToken reports whether s has an operator token's form: mdt1.
// and the base64url (no padding) of exactly 32 bytes, in its canonical
// spelling. A token of any other form was not made by NewOperatorToken.
func IsOperatorToken(s string) bool {
	enc, ok := strings.CutPrefix(s, OperatorTokenPrefix)
	if !ok || len(enc) != base64.RawURLEncoding.EncodedLen(operatorTokenBytes) {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	return err == nil && len(b) == operatorTokenBytes
}
