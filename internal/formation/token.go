package formation

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/murmur-go/murmur/internal/ids"
)

// A formation token lets one member call one other: mft1.<payload>.<sig>,
// both parts base64url without padding; the payload is exactly
// {"formation":"frm_…","from":"<member>","to":"<member>"}. The launcher
// signs with the formation's Ed25519 key, held in its memory only; doors
// hold the public key. No expiry: the key dies with the launcher.
const (
	TokenPrefix = "mft1."
	tokenTag    = "mft1"
	tokenDomain = "murmur-formation-token-v1"
)

var b64 = base64.RawURLEncoding.Strict()

// signed is the bytes a token's signature covers: the domain, the tag and
// the payload's base64url text, separated by 0x1f.
func signed(payloadB64 string) []byte {
	b := make([]byte, 0, len(tokenDomain)+len(tokenTag)+2+len(payloadB64))
	b = append(b, tokenDomain...)
	b = append(b, 0x1f)
	b = append(b, tokenTag...)
	b = append(b, 0x1f)
	return append(b, payloadB64...)
}

type tokenPayload struct {
	Formation string `json:"formation"`
	From      string `json:"from"`
	To        string `json:"to"`
}

// MintToken signs the token for the edge from → to of formation frm.
func MintToken(priv ed25519.PrivateKey, frm, from, to string) string {
	payload, _ := json.Marshal(tokenPayload{frm, from, to}) // names are plain ASCII: no escapes
	p := b64.EncodeToString(payload)
	sig := ed25519.Sign(priv, signed(p))
	return TokenPrefix + p + "." + b64.EncodeToString(sig)
}

// IsFormationToken reports whether a bearer token is meant as a formation
// token (its tag), whatever else it holds.
func IsFormationToken(tok string) bool { return strings.HasPrefix(tok, TokenPrefix) }

// Verdict is the outcome of verifying a formation token at a door.
type Verdict int

const (
	// TokenValid: the token was issued in this formation to call this member.
	TokenValid Verdict = iota
	// TokenInvalid: 401 invalid_token, one answer for every failure before
	// the audience.
	TokenInvalid
	// TokenNotPermitted: 403 not_permitted, a valid token for another member.
	TokenNotPermitted
)

// VerifyToken checks tok at the door of member me in formation frm, in the
// order: tag, a door in a formation (pub non-nil), three parts that decode
// with a 64-byte signature, the signature, the payload's exact shape, its
// formation, its audience. from is the calling member when the signature
// and payload held (TokenValid or TokenNotPermitted).
func VerifyToken(pub ed25519.PublicKey, frm, me, tok string) (from string, v Verdict) {
	rest, ok := strings.CutPrefix(tok, TokenPrefix)
	if !ok || len(pub) != ed25519.PublicKeySize {
		return "", TokenInvalid
	}
	dot := strings.IndexByte(rest, '.')
	if dot < 0 || strings.IndexByte(rest[dot+1:], '.') >= 0 {
		return "", TokenInvalid
	}
	p64, s64 := rest[:dot], rest[dot+1:]
	payload, err := b64.DecodeString(p64)
	if err != nil {
		return "", TokenInvalid
	}
	sig, err := b64.DecodeString(s64)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return "", TokenInvalid
	}
	if !ed25519.Verify(pub, signed(p64), sig) {
		return "", TokenInvalid
	}
	p, ok := parsePayload(payload)
	if !ok || p.Formation != frm {
		return "", TokenInvalid
	}
	if p.To != me {
		return p.From, TokenNotPermitted
	}
	return p.From, TokenValid
}

// parsePayload accepts exactly three string keys, both names member names
// and the formation a formation id.
func parsePayload(b []byte) (tokenPayload, bool) {
	var raw map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(b))
	if d.Decode(&raw) != nil || d.More() || len(raw) != 3 {
		return tokenPayload{}, false
	}
	var p tokenPayload
	for k, dst := range map[string]*string{"formation": &p.Formation, "from": &p.From, "to": &p.To} {
		v, ok := raw[k]
		if !ok || len(v) == 0 || v[0] != '"' || json.Unmarshal(v, dst) != nil {
			return tokenPayload{}, false
		}
	}
	if !ids.Valid(ids.Formation, p.Formation) || !ValidMemberName(p.From) || !ValidMemberName(p.To) {
		return tokenPayload{}, false
	}
	return p, true
}
