package main

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON reader and writer for the few shapes this driver handles: the
// normalized request, the stream's events and the normalized response.
// encoding/json builds its per-type caches by reflection on first use, and
// in a component every turn is a first use (a fresh instance): reading one
// request and writing one response with it was a third of a turn.

// reader reads one JSON text. The first error stops it: every later call
// returns a zero value, and err says what was wrong where.
type reader struct {
	b   []byte
	i   int
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = &syntaxError{msg: what, off: r.i}
	}
}

type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string { return e.msg + " at offset " + strconv.Itoa(e.off) }

func (r *reader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// peek is the next value's first byte (0 at the end or after an error).
func (r *reader) peek() byte {
	r.ws()
	if r.err != nil || r.i >= len(r.b) {
		return 0
	}
	return r.b[r.i]
}

// end checks that nothing but white space follows the value read.
func (r *reader) end() {
	if r.ws(); r.err == nil && r.i < len(r.b) {
		r.fail("data after the JSON value")
	}
}

// object reads an object, calling field with each key; field must read the
// key's value (skip when it is of no interest). A null is an empty object.
func (r *reader) object(field func(key string)) {
	switch r.peek() {
	case 'n':
		r.literal("null")
		return
	case '{':
		r.i++
	default:
		r.fail("want an object")
		return
	}
	if r.peek() == '}' {
		r.i++
		return
	}
	for r.err == nil {
		if r.peek() != '"' {
			r.fail("want an object key")
			return
		}
		k := r.str()
		if r.peek() != ':' {
			r.fail("want ':' after an object key")
			return
		}
		r.i++
		field(k)
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return
		default:
			r.fail("want ',' or '}' in an object")
		}
	}
}

// array reads an array, calling elem to read each element. A null is an
// empty array.
func (r *reader) array(elem func()) {
	switch r.peek() {
	case 'n':
		r.literal("null")
		return
	case '[':
		r.i++
	default:
		r.fail("want an array")
		return
	}
	if r.peek() == ']' {
		r.i++
		return
	}
	for r.err == nil {
		elem()
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return
		default:
			r.fail("want ',' or ']' in an array")
		}
	}
}

func (r *reader) literal(lit string) {
	if string(r.b[r.i:min(len(r.b), r.i+len(lit))]) != lit {
		r.fail("want " + lit)
		return
	}
	r.i += len(lit)
}

// str reads a string (a null is ""). Invalid UTF-8 and unpaired surrogates
// become U+FFFD, as encoding/json makes them.
func (r *reader) str() string {
	switch r.peek() {
	case 'n':
		r.literal("null")
		return ""
	case '"':
	default:
		r.fail("want a string")
		return ""
	}
	r.i++
	start := r.i
	// The common case: no escapes, valid UTF-8; one copy.
	for r.i < len(r.b) {
		c := r.b[r.i]
		if c == '"' {
			s := string(r.b[start:r.i])
			r.i++
			if !utf8.ValidString(s) {
				s = string([]rune(s)) // each invalid byte a U+FFFD
			}
			return s
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			r.fail("a control character in a string")
			return ""
		}
		r.i++
	}
	out := []byte(string(r.b[start:r.i]))
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			s := string(out)
			if !utf8.ValidString(s) {
				s = string([]rune(s)) // each invalid byte a U+FFFD
			}
			return s
		case c < 0x20:
			r.fail("a control character in a string")
			return ""
		case c != '\\':
			out = append(out, c)
			r.i++
			continue
		}
		if r.i+1 >= len(r.b) {
			break
		}
		e := r.b[r.i+1]
		r.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			c1, ok := r.hex4()
			if !ok {
				return ""
			}
			if utf16.IsSurrogate(c1) {
				// A pair is \uD8xx\uDCxx; anything else is one U+FFFD.
				if r.i+1 < len(r.b) && r.b[r.i] == '\\' && r.b[r.i+1] == 'u' {
					save := r.i
					r.i += 2
					c2, ok := r.hex4()
					if !ok {
						return ""
					}
					if d := utf16.DecodeRune(c1, c2); d != utf8.RuneError {
						out = utf8.AppendRune(out, d)
						continue
					}
					r.i = save
				}
				c1 = utf8.RuneError
			}
			out = utf8.AppendRune(out, c1)
		default:
			r.i -= 2
			r.fail("an invalid escape in a string")
			return ""
		}
	}
	r.fail("an unterminated string")
	return ""
}

func (r *reader) hex4() (rune, bool) {
	if r.i+4 > len(r.b) {
		r.fail("a short \\u escape")
		return 0, false
	}
	var v rune
	for _, c := range r.b[r.i : r.i+4] {
		v <<= 4
		switch {
		case '0' <= c && c <= '9':
			v |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			v |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			v |= rune(c - 'A' + 10)
		default:
			r.fail("an invalid \\u escape")
			return 0, false
		}
	}
	r.i += 4
	return v, true
}

// number reads a number's text.
func (r *reader) number() string {
	if c := r.peek(); c != '-' && (c < '0' || c > '9') {
		r.fail("want a number")
		return ""
	}
	start := r.i
	if r.b[r.i] == '-' {
		r.i++
	}
	digits := func() int {
		n := 0
		for r.i < len(r.b) && '0' <= r.b[r.i] && r.b[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	if r.i < len(r.b) && r.b[r.i] == '0' {
		r.i++
	} else if digits() == 0 {
		r.fail("want a number")
		return ""
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if digits() == 0 {
			r.fail("want a digit after '.'")
			return ""
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			r.fail("want a digit in an exponent")
			return ""
		}
	}
	return string(r.b[start:r.i])
}

// int reads an integer (a null is 0).
func (r *reader) int() int64 {
	if r.peek() == 'n' {
		r.literal("null")
		return 0
	}
	s := r.number()
	if r.err != nil {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		r.fail("want an integer")
	}
	return n
}

// skip reads a value of any kind and returns its text as it was written.
func (r *reader) skip() []byte {
	c := r.peek()
	start := r.i
	switch {
	case c == '{':
		r.object(func(string) { r.skip() })
	case c == '[':
		r.array(func() { r.skip() })
	case c == '"':
		r.str()
	case c == 't':
		r.literal("true")
	case c == 'f':
		r.literal("false")
	case c == 'n':
		r.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		r.number()
	default:
		r.fail("want a JSON value")
	}
	if r.err != nil {
		return nil
	}
	return r.b[start:r.i]
}

// writer appends JSON to a byte slice.
type writer struct{ b []byte }

func (w *writer) raw(s string) { w.b = append(w.b, s...) }

// key writes ,"k": (the comma unless first).
func (w *writer) key(k string, first bool) {
	if !first {
		w.b = append(w.b, ',')
	}
	w.str(k)
	w.b = append(w.b, ':')
}

// str writes s quoted: '"', '\\' and control characters escaped, invalid
// UTF-8 as U+FFFD.
func (w *writer) str(s string) {
	const hex = "0123456789abcdef"
	w.b = append(w.b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			w.b = append(w.b, s[start:i]...)
			switch c {
			case '"', '\\':
				w.b = append(w.b, '\\', c)
			case '\n':
				w.b = append(w.b, '\\', 'n')
			case '\r':
				w.b = append(w.b, '\\', 'r')
			case '\t':
				w.b = append(w.b, '\\', 't')
			default:
				w.b = append(w.b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		if r, size := utf8.DecodeRuneInString(s[i:]); r == utf8.RuneError && size == 1 {
			w.b = append(w.b, s[start:i]...)
			w.b = append(w.b, `\ufffd`...)
			i++
			start = i
			continue
		} else {
			i += size
		}
	}
	w.b = append(w.b, s[start:]...)
	w.b = append(w.b, '"')
}

func (w *writer) int(n int64) { w.b = strconv.AppendInt(w.b, n, 10) }
