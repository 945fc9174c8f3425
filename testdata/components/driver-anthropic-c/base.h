// base.h: what the C driver's files share — integer types, the import and
// export attributes, strings and growable buffers over a bump allocator
// (base.c), and a small JSON reader and writer (json.c).
#ifndef DRIVER_BASE_H
#define DRIVER_BASE_H

typedef unsigned char u8;
typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;
typedef long long i64;
typedef unsigned long size_t;

#define IMPORT(mod, name) __attribute__((import_module(mod), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))

// A string: bytes and a length, not NUL-terminated.
typedef struct {
	const char *p;
	u32 n;
} str;

// A growable byte buffer in the arena.
typedef struct {
	char *p;
	u32 n, cap;
} buf;

// ---- base.c ----

void *memcpy(void *d, const void *s, size_t n);
void *memset(void *d, int c, size_t n);

// alloc answers n bytes at align; it traps only when memory cannot grow.
void *alloc(u32 align, u32 n);
// scratch, when set, is where the next cabi_realloc of at most scratch_cap
// bytes lands (and scratch is cleared).
extern u8 *scratch;
extern u32 scratch_cap;

u32 cstrlen(const char *s);
str S(const char *s);
int str_eq(str a, const char *b);
int has_prefix(const char *p, u32 n, const char *pre);
void put(buf *b, const char *s, u32 n);
void puts_(buf *b, const char *s);
void putc_(buf *b, char c);
void put_str(buf *b, str s);
str buf_str(buf *b);
void put_int(buf *b, i64 v);

// ---- json.c ----

// A cursor over one JSON text. Every reader sets err (and stops moving) on
// malformed input; callers check it once at the end of a value.
typedef struct {
	const char *p, *e;
	const char *err;
	int depth;
} jr;

void ws(jr *j);
int peek(jr *j);
// member walks an object: each call reads the next key into key (and the
// colon) and answers 1, or answers 0 at the closing brace or on an error;
// *first starts at 1. element walks an array the same way.
int member(jr *j, int *first, buf *key);
int element(jr *j, int *first);
int skip(jr *j);
int is_null(jr *j);
str get_str(jr *j);
i64 get_int(jr *j);
str get_raw(jr *j);
int whole(str s);
void put_json(buf *b, str s);
void put_utf8_valid(buf *b, const char *p, u32 n);

#endif
