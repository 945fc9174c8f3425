// json.c: a small JSON reader (any field order and whitespace, unknown values
// skipped, strings unescaped to UTF-8) and the string writer.

#include "base.h"

static const char hex[] = "0123456789abcdef";

// put_json writes s as a JSON string, quotes included: ", \ and control
// characters escaped.
void put_json(buf *b, str s) {
	putc_(b, '"');
	for (u32 i = 0; i < s.n; i++) {
		u8 c = (u8)s.p[i];
		switch (c) {
		case '"': puts_(b, "\\\""); break;
		case '\\': puts_(b, "\\\\"); break;
		case '\n': puts_(b, "\\n"); break;
		case '\r': puts_(b, "\\r"); break;
		case '\t': puts_(b, "\\t"); break;
		default:
			if (c < 0x20) {
				puts_(b, "\\u00");
				putc_(b, hex[c >> 4]);
				putc_(b, hex[c & 15]);
			} else {
				putc_(b, (char)c);
			}
		}
	}
	putc_(b, '"');
}

// ---- the reader ----

void ws(jr *j) {
	while (j->p < j->e && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static int fail(jr *j, const char *why) {
	if (!j->err) j->err = why;
	j->p = j->e;
	return 0;
}

int peek(jr *j) {
	ws(j);
	return j->p < j->e ? (u8)*j->p : -1;
}

static int eat(jr *j, char c) {
	if (peek(j) != c) return fail(j, "unexpected character");
	j->p++;
	return 1;
}

static int lit(jr *j, const char *w) {
	u32 n = cstrlen(w);
	if ((u32)(j->e - j->p) < n || !has_prefix(j->p, n, w)) return fail(j, "bad literal");
	j->p += n;
	return 1;
}

static int hexval(int c) {
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

static int hex4(jr *j, u32 *v) {
	if (j->e - j->p < 4) return fail(j, "short \\u escape");
	u32 x = 0;
	for (int i = 0; i < 4; i++) {
		int h = hexval((u8)j->p[i]);
		if (h < 0) return fail(j, "bad \\u escape");
		x = x << 4 | (u32)h;
	}
	j->p += 4;
	*v = x;
	return 1;
}

static void put_utf8(buf *b, u32 r) {
	if (r < 0x80) {
		putc_(b, (char)r);
	} else if (r < 0x800) {
		putc_(b, (char)(0xC0 | r >> 6));
		putc_(b, (char)(0x80 | (r & 0x3F)));
	} else if (r < 0x10000) {
		putc_(b, (char)(0xE0 | r >> 12));
		putc_(b, (char)(0x80 | (r >> 6 & 0x3F)));
		putc_(b, (char)(0x80 | (r & 0x3F)));
	} else {
		putc_(b, (char)(0xF0 | r >> 18));
		putc_(b, (char)(0x80 | (r >> 12 & 0x3F)));
		putc_(b, (char)(0x80 | (r >> 6 & 0x3F)));
		putc_(b, (char)(0x80 | (r & 0x3F)));
	}
}

// utf8_len answers the length of the valid UTF-8 sequence at p (n bytes
// left), 0 when none starts there.
static u32 utf8_len(const u8 *p, u32 n) {
	u8 c = p[0];
	if (c < 0x80) return 1;
	u32 k;
	u8 lo = 0x80, hi = 0xBF;
	if (c >= 0xC2 && c <= 0xDF) k = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		k = 3;
		if (c == 0xE0) lo = 0xA0;
		if (c == 0xED) hi = 0x9F; // no surrogates
	} else if (c >= 0xF0 && c <= 0xF4) {
		k = 4;
		if (c == 0xF0) lo = 0x90;
		if (c == 0xF4) hi = 0x8F;
	} else return 0;
	if (n < k || p[1] < lo || p[1] > hi) return 0;
	for (u32 i = 2; i < k; i++)
		if (p[i] < 0x80 || p[i] > 0xBF) return 0;
	return k;
}

// put_utf8_valid copies p, each byte that starts no valid UTF-8 sequence
// replaced by U+FFFD: every string the driver hands the host is UTF-8, as
// the component model requires.
void put_utf8_valid(buf *b, const char *p, u32 n) {
	for (u32 i = 0; i < n;) {
		u32 k = utf8_len((const u8 *)p + i, n - i);
		if (k) put(b, p + i, k), i += k;
		else put(b, "\xEF\xBF\xBD", 3), i++;
	}
}

// string reads a JSON string into out (unescaped, UTF-8; \uXXXX with
// surrogate pairs; a lone surrogate becomes U+FFFD, as Go's decoder does).
// out may be 0 to only skip it.
static int string(jr *j, buf *out) {
	if (!eat(j, '"')) return 0;
	while (j->p < j->e) {
		u8 c = (u8)*j->p++;
		if (c == '"') return 1;
		if (c < 0x20) return fail(j, "control character in a string");
		if (c >= 0x80) {
			const char *at = j->p - 1;
			u32 k = utf8_len((const u8 *)at, (u32)(j->e - at));
			if (out) put_utf8_valid(out, at, k ? k : 1);
			j->p = at + (k ? k : 1);
			continue;
		}
		if (c != '\\') {
			if (out) putc_(out, (char)c);
			continue;
		}
		if (j->p >= j->e) break;
		c = (u8)*j->p++;
		char o;
		switch (c) {
		case '"': o = '"'; break;
		case '\\': o = '\\'; break;
		case '/': o = '/'; break;
		case 'b': o = '\b'; break;
		case 'f': o = '\f'; break;
		case 'n': o = '\n'; break;
		case 'r': o = '\r'; break;
		case 't': o = '\t'; break;
		case 'u': {
			u32 r;
			if (!hex4(j, &r)) return 0;
			if (r >= 0xD800 && r < 0xDC00) {
				u32 lo;
				if (j->e - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u') {
					const char *save = j->p;
					j->p += 2;
					if (!hex4(j, &lo)) return 0;
					if (lo >= 0xDC00 && lo < 0xE000) {
						r = 0x10000 + ((r - 0xD800) << 10) + (lo - 0xDC00);
					} else {
						r = 0xFFFD;
						j->p = save; // the second escape is a character of its own
					}
				} else {
					r = 0xFFFD;
				}
			} else if (r >= 0xDC00 && r < 0xE000) {
				r = 0xFFFD;
			}
			if (out) put_utf8(out, r);
			continue;
		}
		default: return fail(j, "bad escape in a string");
		}
		if (out) putc_(out, o);
	}
	return fail(j, "unterminated string");
}

static int number(jr *j, i64 *v, int *integral) {
	ws(j);
	int neg = 0, digits = 0;
	i64 x = 0;
	*integral = 1;
	if (j->p < j->e && *j->p == '-') neg = 1, j->p++;
	int big = 0; // beyond int64: fine to skip, not to read
	while (j->p < j->e && *j->p >= '0' && *j->p <= '9') {
		int d = *j->p++ - '0';
		if (x > (0x7FFFFFFFFFFFFFFFLL - d) / 10) big = 1;
		else x = x * 10 + d;
		digits++;
	}
	if (big && v) return fail(j, "number out of range");
	if (!digits) return fail(j, "bad number");
	if (j->p < j->e && *j->p == '.') {
		*integral = 0;
		j->p++;
		int d = 0;
		while (j->p < j->e && *j->p >= '0' && *j->p <= '9') j->p++, d++;
		if (!d) return fail(j, "bad number");
	}
	if (j->p < j->e && (*j->p == 'e' || *j->p == 'E')) {
		*integral = 0;
		j->p++;
		if (j->p < j->e && (*j->p == '+' || *j->p == '-')) j->p++;
		int d = 0;
		while (j->p < j->e && *j->p >= '0' && *j->p <= '9') j->p++, d++;
		if (!d) return fail(j, "bad number");
	}
	if (v) *v = neg ? -x : x;
	return 1;
}

int skip(jr *j);

// members walks an object: each call reads the next key into key (and the
// colon) and answers 1, or answers 0 at the closing brace or on an error.
// first starts at 1 and is kept by the caller.
int member(jr *j, int *first, buf *key) {
	if (j->err) return 0;
	if (*first) {
		*first = 0;
		if (!eat(j, '{')) return 0;
		if (peek(j) == '}') {
			j->p++;
			return 0;
		}
	} else {
		int c = peek(j);
		if (c == '}') {
			j->p++;
			return 0;
		}
		if (!eat(j, ',')) return 0;
	}
	key->n = 0;
	if (!string(j, key) || !eat(j, ':')) return 0;
	return 1;
}

// element walks an array the same way: 1 when a value follows.
int element(jr *j, int *first) {
	if (j->err) return 0;
	if (*first) {
		*first = 0;
		if (!eat(j, '[')) return 0;
		if (peek(j) == ']') {
			j->p++;
			return 0;
		}
		return 1;
	}
	int c = peek(j);
	if (c == ']') {
		j->p++;
		return 0;
	}
	return eat(j, ',');
}

int skip(jr *j) {
	int c = peek(j);
	switch (c) {
	case '"': return string(j, 0);
	case '{': {
		if (++j->depth > 200) return fail(j, "nested too deeply");
		int first = 1;
		buf k = {0};
		while (member(j, &first, &k)) skip(j);
		j->depth--;
		return !j->err;
	}
	case '[': {
		if (++j->depth > 200) return fail(j, "nested too deeply");
		int first = 1;
		while (element(j, &first)) skip(j);
		j->depth--;
		return !j->err;
	}
	case 't': return lit(j, "true");
	case 'f': return lit(j, "false");
	case 'n': return lit(j, "null");
	default: {
		int integral;
		return number(j, 0, &integral);
	}
	}
}

int is_null(jr *j) {
	if (peek(j) == 'n') {
		lit(j, "null");
		return 1;
	}
	return 0;
}

// get_str reads a string (or null: empty) into a fresh str.
str get_str(jr *j) {
	buf b = {0};
	if (!is_null(j)) string(j, &b);
	return buf_str(&b);
}

i64 get_int(jr *j) {
	i64 v = 0;
	int integral;
	if (is_null(j)) return 0;
	if (number(j, &v, &integral) && !integral) fail(j, "not an integer");
	return v;
}

// get_raw answers the span of the next value as it is (null: empty).
str get_raw(jr *j) {
	if (is_null(j)) return (str){0, 0};
	ws(j);
	const char *s = j->p;
	skip(j);
	return (str){s, (u32)(j->p - s)};
}

// whole answers whether s is exactly one JSON value.
int whole(str s) {
	jr j = {s.p, s.p + s.n, 0, 0};
	skip(&j);
	ws(&j);
	return !j.err && j.p == j.e;
}
