// base.c: memory (a bump allocator, cabi_realloc), strings and buffers.

#include "base.h"

// clang may call these for struct copies and loops; bulk memory (-mbulk-memory)
// makes the builtins single instructions.
void *memcpy(void *d, const void *s, size_t n) { return __builtin_memcpy(d, s, n); }
void *memmove(void *d, const void *s, size_t n) { return __builtin_memmove(d, s, n); }
void *memset(void *d, int c, size_t n) { return __builtin_memset(d, c, n); }

// ---- memory: a bump allocator over memory.grow ----

extern u8 __heap_base;
static u32 heap_top, heap_end;

void *alloc(u32 align, u32 n) {
	if (!heap_top) heap_top = heap_end = (u32)&__heap_base;
	u32 p = (heap_top + align - 1) & ~(align - 1);
	if (p + n < p) __builtin_trap();
	if (p + n > heap_end) {
		u32 pages = (p + n - heap_end + 65535) >> 16;
		if (__builtin_wasm_memory_grow(0, pages) == (size_t)-1) __builtin_trap(); // out of memory
		heap_end += pages << 16;
	}
	heap_top = p + n;
	return (void *)p;
}

// scratch, when set, is where the next realloc of at most scratch_cap bytes
// lands: the stream's read buffer, reused for every read instead of a new
// allocation each time.
u8 *scratch;
u32 scratch_cap;

EXPORT("cabi_realloc") void *cabi_realloc(void *old, u32 old_size, u32 align, u32 new_size) {
	if (!old && scratch && new_size <= scratch_cap && align <= 8) {
		void *p = scratch;
		scratch = 0;
		return p;
	}
	if (old && new_size <= old_size) return old;
	void *p = alloc(align ? align : 1, new_size);
	if (old && old_size) memcpy(p, old, old_size);
	return p;
}

// ---- strings and buffers ----

u32 cstrlen(const char *s) {
	u32 n = 0;
	while (s[n]) n++;
	return n;
}

str S(const char *s) { return (str){s, cstrlen(s)}; }

int str_eq(str a, const char *b) {
	u32 n = cstrlen(b);
	if (a.n != n) return 0;
	for (u32 i = 0; i < n; i++)
		if (a.p[i] != b[i]) return 0;
	return 1;
}

int has_prefix(const char *p, u32 n, const char *pre) {
	u32 k = cstrlen(pre);
	if (n < k) return 0;
	for (u32 i = 0; i < k; i++)
		if (p[i] != pre[i]) return 0;
	return 1;
}

static void buf_grow(buf *b, u32 more) {
	if (b->n + more <= b->cap) return;
	u32 cap = b->cap ? b->cap * 2 : 64;
	while (cap < b->n + more) cap *= 2;
	char *p = alloc(1, cap);
	if (b->n) memcpy(p, b->p, b->n);
	b->p = p;
	b->cap = cap;
}

void put(buf *b, const char *s, u32 n) {
	buf_grow(b, n);
	memcpy(b->p + b->n, s, n);
	b->n += n;
}
void puts_(buf *b, const char *s) { put(b, s, cstrlen(s)); }
void putc_(buf *b, char c) {
	buf_grow(b, 1);
	b->p[b->n++] = c;
}
void put_str(buf *b, str s) { put(b, s.p, s.n); }
str buf_str(buf *b) { return (str){b->p, b->n}; }

void put_int(buf *b, i64 v) {
	char t[24];
	int k = 0;
	u64 u = v < 0 ? (u64)0 - (u64)v : (u64)v;
	do {
		t[k++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0) putc_(b, '-');
	while (k) putc_(b, t[--k]);
}
