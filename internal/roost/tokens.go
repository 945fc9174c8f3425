package roost

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"hash"
	"strings"
	"sync"
)

// Token prefixes (docs/roost.md "Tokens").
const (
	credentialPrefix = "msc1."
	approvalPrefix   = "msa1."
)

// maxTokenLen bounds what is decoded at all; a real token is a few hundred
// bytes. It must hold every token the daemon mints: a credential carries the
// session id a runtime chose, so /register refuses an id whose credential
// would exceed maxCredentialLen, and an approval is that parent id plus the
// artifact's coordinates (a name is at most 127 bytes, a version one path
// component of the registry), which the margin covers.
const (
	maxTokenLen      = 16 << 10
	maxCredentialLen = 12 << 10
)

var (
	b64       = base64.RawURLEncoding
	b64Strict = b64.Strict()
)

// credentialPayload names the session a credential was minted for. Field
// order is fixed by the struct, so the token begins `msc1.eyJ2IjoxLCJz`, as
// the specification's example does.
type credentialPayload struct {
	V int    `json:"v"`
	S string `json:"s"`
}

// approvalPayload names the granting session, the artifact, the child's
// sealed depth budget, the expiry and a nonce.
type approvalPayload struct {
	V       int    `json:"v"`
	S       string `json:"s"` // granting session
	Name    string `json:"n"` // artifact full name
	Version string `json:"r"` // artifact version
	SHA256  string `json:"h"` // artifact content hash
	Depth   int    `json:"d"` // the child's depth budget
	Expires int64  `json:"e"` // unix ms
	Nonce   string `json:"x"` // identifies the approval's in-memory record
}

// minter MACs tokens of one kind with a 32-byte key made at start-up and held
// only in memory, so a restart invalidates every token at once.
type minter struct {
	prefix string
	pool   sync.Pool // hash.Hash (HMAC-SHA256 keyed)
}

func newMinter(prefix string) (*minter, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	m := &minter{prefix: prefix}
	m.pool.New = func() any { return hmac.New(sha256.New, key) }
	return m, nil
}

// mac appends the MAC of signed to dst.
func (m *minter) mac(dst, signed []byte) []byte {
	h := m.pool.Get().(hash.Hash)
	h.Reset()
	h.Write(signed)
	dst = h.Sum(dst)
	m.pool.Put(h)
	return dst
}

// mint encodes payload (json.Marshal's bytes: fastjson.go writes the plain
// cases of the two payload types without reflection) and MACs it.
func (m *minter) mint(payload any) (string, error) {
	sb := getScratch()
	defer func() { putScratch(sb, (*sb)[:0]) }()
	body, ok := (*sb)[:0], false
	switch p := payload.(type) {
	case credentialPayload:
		body, ok = appendCredentialPayload(body, p)
	case approvalPayload:
		body, ok = appendApprovalPayload(body, p)
	}
	if !ok {
		var err error
		if body, err = json.Marshal(payload); err != nil {
			return "", err
		}
	}
	// The token is built after the body in the same buffer.
	tok := append(body, m.prefix...)
	tok = b64.AppendEncode(tok, body)
	signed := tok[len(body):]
	var sum [sha256.Size]byte
	mac := m.mac(sum[:0], signed)
	tok = append(tok, '.')
	tok = b64.AppendEncode(tok, mac)
	*sb = tok
	return string(tok[len(body):]), nil
}

var errToken = errors.New("token does not verify")

// open verifies a token of this minter's kind and decodes its payload into v.
// The MAC is compared in constant time, before the payload is parsed.
func (m *minter) open(tok string, v any) error {
	if len(tok) > maxTokenLen || !strings.HasPrefix(tok, m.prefix) || !tokenAlphabet(tok[len(m.prefix):]) {
		return errToken
	}
	dot := strings.LastIndexByte(tok, '.')
	if dot <= len(m.prefix) {
		return errToken
	}
	if sig := tok[dot+1:]; len(sig) != b64.EncodedLen(sha256.Size) {
		return errToken
	}
	sb := getScratch()
	defer func() { putScratch(sb, (*sb)[:0]) }()
	buf := append((*sb)[:0], tok...)
	*sb = buf
	var got [sha256.Size]byte
	if n, err := b64Strict.Decode(got[:], buf[dot+1:]); err != nil || n != sha256.Size {
		return errToken
	}
	var sum [sha256.Size]byte
	if !hmac.Equal(got[:], m.mac(sum[:0], buf[:dot])) {
		return errToken
	}
	enc := buf[len(m.prefix):dot]
	body, err := b64Strict.AppendDecode(buf[len(buf):], enc)
	if err != nil {
		return errToken
	}
	*sb = body[:0] // keep the larger of the two backing arrays
	// The MAC verified, so the body is bytes this minter wrote: the plain
	// layout is read without reflection, anything else as before.
	switch p := v.(type) {
	case *credentialPayload:
		if parseCredentialPayload(body, p) {
			return nil
		}
	case *approvalPayload:
		if parseApprovalPayload(body, p) {
			return nil
		}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errToken
	}
	return nil
}

// tokenAlphabet reports whether s holds only base64url characters and dots.
// The base64 decoder skips '\r' and '\n' even in strict mode, so without
// this check a token with line breaks inserted would open as the original:
// one token has exactly one accepted spelling.
func tokenAlphabet(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// newNonce is 16 random bytes, base64url.
func newNonce() string {
	b := make([]byte, 16)
	rand.Read(b)
	return b64.EncodeToString(b)
}
