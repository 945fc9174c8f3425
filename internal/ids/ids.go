// Package ids makes and checks Murmur's identifiers: a prefix
// and the 32 lowercase hex digits of a UUIDv7. A UUIDv7 begins with its
// creation time in milliseconds, so ids of one kind sort by when they were
// made; trace.retain relies on that to find the oldest sessions without
// opening them.
package ids

import (
	"encoding/hex"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Prefixes of the id kinds.
const (
	Session    = "ses_"
	Delegation = "dlg_"
	Formation  = "frm_"
	Event      = "evt_"
	Task       = "tsk_"
	Context    = "ctx_"
	MemberCall = "mcl_"
)

// New returns prefix followed by the hex digits of a fresh UUIDv7.
func New(prefix string) string {
	u, err := uuid.NewV7()
	if err != nil {
		// NewV7 fails only when the system's random source does; a random
		// UUIDv4 is then better than no id (it still never collides).
		u = uuid.New()
	}
	var b [36]byte
	copy(b[:], prefix)
	hex.Encode(b[len(prefix):len(prefix)+32], u[:])
	return string(b[:len(prefix)+32])
}

// Valid reports whether s is prefix and 32 lowercase hex digits.
func Valid(prefix, s string) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != 32 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// Time returns the creation time a UUIDv7-based id carries, and false when s
// is not such an id.
func Time(prefix, s string) (time.Time, bool) {
	if !Valid(prefix, s) {
		return time.Time{}, false
	}
	rest := s[len(prefix):]
	if rest[12] != '7' { // version nibble
		return time.Time{}, false
	}
	var ms int64
	for i := 0; i < 12; i++ {
		c := rest[i]
		var v byte
		if c <= '9' {
			v = c - '0'
		} else {
			v = c - 'a' + 10
		}
		ms = ms<<4 | int64(v)
	}
	return time.UnixMilli(ms), true
}

// AtTime returns an id of the given kind whose embedded time is t; the rest is
// random. It exists so retention can be tested with sessions "made" in the past.
func AtTime(prefix string, t time.Time) string {
	id := New(prefix)
	ms := uint64(t.UnixMilli())
	var b [6]byte
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	return prefix + hex.EncodeToString(b[:]) + id[len(prefix)+12:]
}
