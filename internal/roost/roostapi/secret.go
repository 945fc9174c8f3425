package roostapi

import (
	"fmt"
	"io"
	"log/slog"
)

const redacted = "[redacted]"

// secret holds a token behind a pointer. At the top level fmt and slog meet
// the Format and LogValue methods; nested in a struct that is printed with
// %v, the pointer prints as an address, so the token's text never reaches a
// log through either path.
type secret struct{ tok *string }

func newSecret(tok string) secret { return secret{&tok} }

// Reveal returns the token's text, for the one place that must send or hand
// it on (a request header, a child's launch). Never log it.
func (s secret) Reveal() string {
	if s.tok == nil {
		return ""
	}
	return *s.tok
}

// IsZero reports whether no token is held (as opposed to an empty one).
func (s secret) IsZero() bool { return s.tok == nil }

// Format prints "[redacted]" under every verb.
func (s secret) Format(f fmt.State, _ rune) { io.WriteString(f, redacted) }

// LogValue logs "[redacted]".
func (s secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalText writes "[redacted]", so encoding/json and friends cannot leak
// the token either; the wire types carry tokens as plain strings.
func (s secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// Credential is the token POST /register minted for a session (msc1.…). It
// authorises that session's POST /spawn and POST /deregister while the
// session is running.
type Credential struct{ secret }

// CredentialOf wraps a credential's text, e.g. one read back from a file the
// runtime keeps.
func CredentialOf(tok string) Credential { return Credential{newSecret(tok)} }

// Approval is the token POST /spawn granted (msa1.…): one launch of one
// artifact, within 60 seconds. The parent's runtime hands it to the child,
// whose runtime presents it at POST /register.
type Approval struct{ secret }

// ApprovalOf wraps an approval's text, e.g. the one a child was launched
// with. The zero Approval is no approval (the top-level path); ApprovalOf("")
// is an empty one, which the daemon refuses.
func ApprovalOf(tok string) Approval { return Approval{newSecret(tok)} }
