// Package peerfile is the peer file plane: mh1 handles (minted with a
// per-session key held in memory only), the door's GET /resources/peer/
// route that redeems them, and the two runtime tools, share-file and
// fetch-peer-file, by which one capsule hands another a single file
// (docs/peer-files.md).
package peerfile

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Handle form: Prefix + base64url(payload) + "." + base64url(MAC).
const (
	Prefix         = "mh1."
	MaxHandleBytes = 2048
	MaxPathBytes   = 1024
	macLabel       = "murmur-peer-handle-v1"
)

// Payload is what a handle carries, in this key order.
type Payload struct {
	V   int    `json:"v"`
	S   string `json:"s"`   // the minting session
	U   string `json:"u"`   // the minter's capsule URL
	P   string `json:"p"`   // the path relative to the export root
	Exp int64  `json:"exp"` // unix ms
	N   string `json:"n"`   // 32 hex random
}

var b64 = base64.RawURLEncoding

// mac is HMAC-SHA256(key, label ‖ 0x1f ‖ the payload's base64url text).
func mac(key []byte, payloadB64 string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(macLabel))
	h.Write([]byte{0x1f})
	h.Write([]byte(payloadB64))
	return h.Sum(nil)
}

// Mint makes the handle of p under key.
func Mint(key []byte, p Payload) (string, error) {
	js, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	pb := b64.EncodeToString(js)
	return Prefix + pb + "." + b64.EncodeToString(mac(key, pb)), nil
}

// ID is a handle's handle_id: the first 16 lowercase hex digits of the
// SHA-256 of the whole handle string. Lines and errors name it, never the
// handle.
func ID(h string) string {
	s := sha256.Sum256([]byte(h))
	return hex.EncodeToString(s[:8])
}

// Parse checks a handle's shape — Prefix, two base64url parts, at most
// MaxHandleBytes, a payload of exactly the six keys with v 1 and p at most
// MaxPathBytes — and returns its payload, its payload text and its MAC.
// It checks no MAC.
func Parse(h string) (Payload, string, []byte, bool) {
	var p Payload
	if len(h) > MaxHandleBytes || !strings.HasPrefix(h, Prefix) {
		return p, "", nil, false
	}
	pb, mb, ok := strings.Cut(h[len(Prefix):], ".")
	if !ok || pb == "" || mb == "" || strings.Contains(mb, ".") {
		return p, "", nil, false
	}
	js, err := b64.DecodeString(pb)
	if err != nil {
		return p, "", nil, false
	}
	m, err := b64.DecodeString(mb)
	if err != nil || len(m) != sha256.Size {
		return p, "", nil, false
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(js, &keys); err != nil || len(keys) != 6 {
		return p, "", nil, false
	}
	for _, k := range []string{"v", "s", "u", "p", "exp", "n"} {
		if _, ok := keys[k]; !ok {
			return p, "", nil, false
		}
	}
	d := json.NewDecoder(bytes.NewReader(js))
	d.DisallowUnknownFields()
	if err := d.Decode(&p); err != nil || p.V != 1 || len(p.P) > MaxPathBytes || p.U == "" || p.S == "" {
		return Payload{}, "", nil, false
	}
	return p, pb, m, true
}

// Verify reports whether a parsed handle's MAC is key's (constant time).
func Verify(key []byte, payloadB64 string, m []byte) bool {
	return hmac.Equal(mac(key, payloadB64), m)
}

// CheckPath refuses a share-file path: empty, absolute, holding a NUL, or
// with an empty, "." or ".." component. It returns the reason ("" when
// the path is fine).
func CheckPath(p string) string {
	switch {
	case p == "":
		return "the path is empty"
	case strings.HasPrefix(p, "/"):
		return "the path is absolute: give it relative to the shared folder"
	case strings.IndexByte(p, 0) >= 0:
		return "the path holds a NUL byte"
	case len(p) > MaxPathBytes:
		return "the path is longer than 1024 bytes"
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." {
			return "the path has an empty, '.' or '..' component"
		}
	}
	return ""
}

// LandingName is the name a fetched file gets in peer-in/ after its
// handle_id: the base name of p with every byte outside [A-Za-z0-9._-]
// made '_', a leading '.' made '_', cut to 100 bytes, "file" when empty.
func LandingName(p string) string {
	base := p
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		base = p[i+1:]
	}
	b := []byte(base)
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 0 && b[0] == '.' {
		b[0] = '_'
	}
	if len(b) > 100 {
		b = b[:100]
	}
	if len(b) == 0 {
		return "file"
	}
	return string(b)
}
