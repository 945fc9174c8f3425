package roost

import (
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/murmur-go/murmur/internal/roost/roostapi"
)

// The daemon's JSON hot path. Every request decodes a small flat object and
// every answer, credential and approval is a small fixed struct; reflection
// through encoding/json was a fifth of a request's CPU. Each function here
// handles only the plain case — strings of printable ASCII with nothing to
// escape — and reports false for anything else, which then takes
// encoding/json exactly as before: the fast path never decides a byte
// differently, it only skips the reflection when there is nothing to decide
// (fastjson_test.go holds both paths to the same bytes).

// scratch holds byte buffers for building an answer or a token: a stack
// array would escape through the io.Writer and hash.Hash interfaces it is
// handed to, costing an allocation of its whole size per request.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func getScratch() *[]byte { return scratch.Get().(*[]byte) }

func putScratch(b *[]byte, used []byte) {
	if cap(used) <= 16<<10 {
		*b = used[:0]
		scratch.Put(b)
	}
}

// plainByte reports whether c stands for itself inside a JSON string written
// by encoding/json (html: with its default HTML escaping of <, > and &).
func plainByte(c byte, html bool) bool {
	if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
		return false
	}
	return !html || (c != '<' && c != '>' && c != '&')
}

// appendString appends s quoted, or reports false when s holds a byte that
// is not plain. Valid UTF-8 past ASCII stands for itself too (the daemon's
// sentences hold dashes), except U+2028 and U+2029, which encoding/json
// escapes.
func appendString(b []byte, s string, html bool) ([]byte, bool) {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if !plainByte(c, html) {
				return b, false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
			return b, false
		}
		i += n
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// ---- token payloads (json.Marshal's bytes, HTML escaping on) ----------------

func appendCredentialPayload(b []byte, p credentialPayload) ([]byte, bool) {
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(p.V), 10)
	b = append(b, `,"s":`...)
	b, ok := appendString(b, p.S, true)
	return append(b, '}'), ok
}

func appendApprovalPayload(b []byte, p approvalPayload) ([]byte, bool) {
	ok := true
	str := func(key, s string) {
		b = append(b, key...)
		var k bool
		b, k = appendString(b, s, true)
		ok = ok && k
	}
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(p.V), 10)
	str(`,"s":`, p.S)
	str(`,"n":`, p.Name)
	str(`,"r":`, p.Version)
	str(`,"h":`, p.SHA256)
	b = append(b, `,"d":`...)
	b = strconv.AppendInt(b, int64(p.Depth), 10)
	b = append(b, `,"e":`...)
	b = strconv.AppendInt(b, p.Expires, 10)
	str(`,"x":`, p.Nonce)
	return append(b, '}'), ok
}

// scanner reads the fixed layout the append functions write.
type scanner struct {
	b  []byte
	ok bool
}

func (s *scanner) lit(l string) {
	if s.ok && len(s.b) >= len(l) && string(s.b[:len(l)]) == l {
		s.b = s.b[len(l):]
		return
	}
	s.ok = false
}

func (s *scanner) str() string { return string(s.rawStr()) }

// rawStr is str's bytes, still in the scanned buffer: a key compared and
// dropped needs no string of its own.
func (s *scanner) rawStr() []byte {
	if !s.ok || len(s.b) == 0 || s.b[0] != '"' {
		s.ok = false
		return nil
	}
	for i := 1; i < len(s.b); i++ {
		c := s.b[i]
		if c == '"' {
			v := s.b[1:i]
			s.b = s.b[i+1:]
			return v
		}
		if !plainByte(c, false) {
			break
		}
	}
	s.ok = false
	return nil
}

func (s *scanner) int() int64 {
	i := 0
	if i < len(s.b) && s.b[i] == '-' {
		i++
	}
	j := i
	for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' && j-i < 18 {
		j++
	}
	if !s.ok || j == i || j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
		s.ok = false
		return 0
	}
	n, err := strconv.ParseInt(string(s.b[:j]), 10, 64)
	if err != nil {
		s.ok = false
	}
	s.b = s.b[j:]
	return n
}

func (s *scanner) done() bool { return s.ok && len(s.b) == 0 }

func parseCredentialPayload(b []byte, p *credentialPayload) bool {
	s := scanner{b: b, ok: true}
	s.lit(`{"v":`)
	v := s.int()
	s.lit(`,"s":`)
	id := s.str()
	s.lit(`}`)
	if !s.done() {
		return false
	}
	*p = credentialPayload{V: int(v), S: id}
	return true
}

func parseApprovalPayload(b []byte, p *approvalPayload) bool {
	s := scanner{b: b, ok: true}
	var q approvalPayload
	s.lit(`{"v":`)
	q.V = int(s.int())
	s.lit(`,"s":`)
	q.S = s.str()
	s.lit(`,"n":`)
	q.Name = s.str()
	s.lit(`,"r":`)
	q.Version = s.str()
	s.lit(`,"h":`)
	q.SHA256 = s.str()
	s.lit(`,"d":`)
	q.Depth = int(s.int())
	s.lit(`,"e":`)
	q.Expires = s.int()
	s.lit(`,"x":`)
	q.Nonce = s.str()
	s.lit(`}`)
	if !s.done() {
		return false
	}
	*p = q
	return true
}

// ---- answers (an Encoder with SetEscapeHTML(false), newline trimmed) --------

// appendAnswer encodes the referee's answer types; ok is false for any other
// value or a string that is not plain.
func appendAnswer(b []byte, v any) ([]byte, bool) {
	ok := true
	str := func(key, s string) {
		b = append(b, key...)
		var k bool
		b, k = appendString(b, s, false)
		ok = ok && k
	}
	num := func(key string, n int64) {
		b = append(b, key...)
		b = strconv.AppendInt(b, n, 10)
	}
	switch v := v.(type) {
	case roostapi.StatusResponse:
		str(`{"status":`, v.Status)
		num(`,"depth_remaining":`, int64(v.DepthRemaining))
		num(`,"live_children":`, int64(v.LiveChildren))
		num(`,"live_capsules":`, int64(v.LiveCapsules))
	case roostapi.SpawnResponse:
		str(`{"approval":`, v.Approval)
		str(`,"name":`, v.Name)
		str(`,"version":`, v.Version)
		str(`,"sha256":`, v.SHA256)
		num(`,"expires_at_ms":`, v.ExpiresAtMS)
	case roostapi.RegisterResponse:
		str(`{"credential":`, v.Credential)
	case struct{}:
		b = append(b, '{')
	default:
		return b, false
	}
	return append(b, '}'), ok
}

// appendError is the body of a refusal, {"error": "<msg>"}: the key and the
// space after its colon as the daemon has always written them.
func appendError(b []byte, msg string) ([]byte, bool) {
	b = append(b, `{"error": `...)
	b, ok := appendString(b, msg, false)
	return append(b, '}'), ok
}

// ---- request bodies ------------------------------------------------------------

// parseFlatFields fills fields from body when body is one JSON object whose
// every key and value is a plain string, with JSON whitespace between tokens;
// a key given twice keeps its last value, as encoding/json does. Anything else
// (escapes, non-ASCII, numbers, null, nesting, bad syntax) reports false and
// is left to readJSON's full decoding, which also words the refusal. Only
// the values of named fields become strings.
func parseFlatFields(body []byte, fields []bodyField) bool {
	s := scanner{b: body, ok: true}
	ws := func() {
		for len(s.b) > 0 && (s.b[0] == ' ' || s.b[0] == '\t' || s.b[0] == '\n' || s.b[0] == '\r') {
			s.b = s.b[1:]
		}
	}
	ws()
	s.lit("{")
	ws()
	if s.ok && len(s.b) > 0 && s.b[0] == '}' {
		s.b = s.b[1:]
		ws()
		return s.done()
	}
	type kv struct{ k, v []byte }
	var pairs [8]kv
	n := 0
	for s.ok {
		ws()
		k := s.rawStr()
		ws()
		s.lit(":")
		ws()
		v := s.rawStr()
		ws()
		if !s.ok || n == len(pairs) {
			return false
		}
		pairs[n] = kv{k, v}
		n++
		if len(s.b) > 0 && s.b[0] == ',' {
			s.b = s.b[1:]
			continue
		}
		s.lit("}")
		break
	}
	ws()
	if !s.done() {
		return false
	}
	for _, p := range pairs[:n] {
		for _, f := range fields {
			if string(p.k) == f.key {
				*f.dst = string(p.v)
			}
		}
	}
	return true
}
