// http-get-c: a freestanding C tool component (no libc, no WASI adapter, no
// language runtime) that times GETs from inside the guest, so the 1 KiB GET
// figure of docs/benchmarks.md can be shown without a guest runtime's own
// code between the wasi:http calls (BenchmarkHTTPGet1KiB/component-c).
//
// tool-input.data is "<url> <n>", or the JSON object a model's tool call
// passes, {"url": "<url>", "n": <n>} ("n" optional, 1; no escapes in the
// URL): it makes n GETs of url one after another.
// Each one is fields, outgoing-request (GET, scheme, authority, path),
// handle, the future's subscribe + block until get answers, status,
// consume, stream, blocking-read to the body's end, then every handle
// dropped in order; each is timed with monotonic-clock.now from before the
// request is built to the body's end. The result's data is the n durations
// in ns, space-separated, and its summary "bytes=<the bodies' total>",
// status passed; a failed request answers status
// failed with the error-code's case name (summary), a status other than 200
// "status <code>".
//
// Files: base.c/base.h are the C driver's (links to ../driver-anthropic-c:
// the bump allocator, cabi_realloc, buffers); this one. Build:
// ../../../scripts/build-c-component.sh with world http-get-c (wit/).
// Compiled with -DMURMUR_PROFILE the summary also carries, per kind of host
// call, each request's ns in it (" PROFILE kind=ns,ns,... clock=ns", the
// last a clock pair's own cost); the committed build has none of it.

#include "base.h"
#include "wasihttp.h"




enum { P_SETUP, P_HANDLE, P_WAIT, P_RESP, P_READ, P_END, P_DROP, P_KINDS };
#ifdef MURMUR_PROFILE
enum { PROF_MAX = 1000 };
static u64 prof_cur[P_KINDS];          // this request's ns per kind
static u64 prof_req[PROF_MAX][P_KINDS]; // each request's
#define PROF(k, stmt)                            \
	do {                                     \
		u64 t_ = clock_now();            \
		stmt;                            \
		prof_cur[k] += clock_now() - t_; \
	} while (0)
#else
#define PROF(k, stmt) \
	do {          \
		stmt; \
	} while (0)
#endif

// An 8-aligned return area for the imports.
static u64 area_[16];
#define RET ((u8 *)area_)
#define RET32(off) (*(u32 *)(RET + (off)))

// The failure reason, when a request has failed.
static buf reason;

static int fail(const char *what) {
	puts_(&reason, what);
	return 0;
}

static int http_error(u8 code) {
	return fail(http_error_name(code));
}

// The URL's parts, parsed once.
static u32 scheme;
static str authority, path;

static int parse_url(str u) {
	if (has_prefix(u.p, u.n, "http://")) scheme = 0, u.p += 7, u.n -= 7;
	else if (has_prefix(u.p, u.n, "https://")) scheme = 1, u.p += 8, u.n -= 8;
	else return fail("the URL is not http(s)");
	u32 slash = 0;
	while (slash < u.n && u.p[slash] != '/') slash++;
	authority = (str){u.p, slash};
	path = slash < u.n ? (str){u.p + slash, u.n - slash} : S("/");
	return 1;
}

enum { READ_CHUNK = 64 << 10 };

// get makes one GET and reads its body to the end: 1 with the body's length
// in *got, 0 when it failed (reason set).
static int get(u8 *rbuf, u32 *got) {
	u32 req;
	int bad;
	PROF(P_SETUP, req = request_new(fields_new());
	     bad = request_set_method(req, 0, "", 0) || request_set_scheme(req, 1, scheme, "", 0) ||
		   request_set_authority(req, 1, authority.p, authority.n) || request_set_path(req, 1, path.p, path.n));
	if (bad) {
		request_drop(req);
		return fail("HTTP-request-URI-invalid");
	}
	PROF(P_HANDLE, http_handle(req, 0, 0, RET));
	if (RET[0]) return http_error(RET[8]);
	u32 fut = RET32(8);
	PROF(P_WAIT, for (;;) {
		future_get(fut, RET);
		if (RET[0]) break;
		u32 p = future_subscribe(fut);
		pollable_block(p);
		pollable_drop(p);
	});
	if (RET[8]) {
		future_drop(fut);
		return fail("the response was already taken");
	}
	if (RET[16]) {
		u8 code = RET[24];
		future_drop(fut);
		return http_error(code);
	}
	u32 resp = RET32(24);
	u32 status;
	PROF(P_RESP, status = response_status(resp); response_consume(resp, RET));
	if (RET[0]) {
		response_drop(resp);
		future_drop(fut);
		return fail("the response has no body");
	}
	u32 ib = RET32(4);
	PROF(P_RESP, inbody_stream(ib, RET));
	if (RET[0]) {
		inbody_drop(ib);
		response_drop(resp);
		future_drop(fut);
		return fail("the response body stream is unavailable");
	}
	u32 s = RET32(4);
	int ok = 1;
	*got = 0;
	for (;;) {
		scratch = rbuf; // every read lands in the one buffer
		scratch_cap = READ_CHUNK;
#ifdef MURMUR_PROFILE
		u64 r0 = clock_now();
		input_blocking_read(s, READ_CHUNK, RET);
		prof_cur[RET[0] ? P_END : P_READ] += clock_now() - r0; // the read that meets the end apart
#else
		input_blocking_read(s, READ_CHUNK, RET);
#endif
		scratch = 0;
		if (RET[0]) { // stream-error: closed is the end, anything else a failure
			if (RET[4] == 0) {
				ioerror_drop(RET32(8));
				ok = fail("HTTP-response-incomplete");
			}
			break;
		}
		*got += RET32(8);
	}
	PROF(P_DROP, input_drop(s); inbody_drop(ib); response_drop(resp); future_drop(fut));
	if (ok && status != 200) {
		puts_(&reason, "status ");
		put_int(&reason, status);
		return 0;
	}
	return ok;
}

// tool-result's canonical layout: status u8 @0, summary option<string> @4,
// data @16, data-path @28, truncated @40, metadata list @44; 52 bytes.
static u32 result_[13];

static u32 *answer(int passed, str summary, str data) {
	u8 *r = (u8 *)result_;
	memset(r, 0, sizeof result_);
	r[0] = passed ? 0 : 1;
	if (summary.n) {
		r[4] = 1;
		*(u32 *)(r + 8) = (u32)summary.p;
		*(u32 *)(r + 12) = summary.n;
	}
	if (passed) {
		r[16] = 1;
		*(u32 *)(r + 20) = (u32)data.p;
		*(u32 *)(r + 24) = data.n;
	}
	*(u32 *)(r + 44) = 8; // an empty list: any aligned pointer
	return result_;
}

// json_value finds the value of key in a flat JSON object: its first byte
// and the bytes up to the object's end, or {0, 0} without it.
static str json_value(str obj, const char *key) {
	u32 kn = 0;
	while (key[kn]) kn++;
	for (u32 i = 0; i + kn + 2 <= obj.n; i++) {
		if (obj.p[i] != '"' || !has_prefix(obj.p + i + 1, obj.n - i - 1, key) || obj.p[i + 1 + kn] != '"') continue;
		u32 j = i + kn + 2;
		while (j < obj.n && (obj.p[j] == ' ' || obj.p[j] == '\t' || obj.p[j] == '\n' || obj.p[j] == '\r')) j++;
		if (j >= obj.n || obj.p[j] != ':') continue;
		j++;
		while (j < obj.n && (obj.p[j] == ' ' || obj.p[j] == '\t' || obj.p[j] == '\n' || obj.p[j] == '\r')) j++;
		return (str){obj.p + j, obj.n - j};
	}
	return (str){0, 0};
}

// parse_input reads "<url> <n>" or {"url": ..., "n": ...} into the URL's
// parts and *n; 0 with reason set when it cannot.
static int parse_input(str d, u32 *n) {
	static const char usage[] = "tool-input.data is not \"<url> <n>\" or {\"url\": \"<url>\", \"n\": <n>}";
	*n = 0;
	if (d.n && d.p[0] == '{') {
		str u = json_value(d, "url");
		if (!u.n || u.p[0] != '"') return fail(usage);
		u32 e = 1;
		while (e < u.n && u.p[e] != '"' && u.p[e] != '\\') e++;
		if (e >= u.n || u.p[e] != '"') return fail(usage);
		str v = json_value(d, "n");
		if (!v.n) *n = 1;
		for (u32 i = 0; i < v.n && v.p[i] >= '0' && v.p[i] <= '9'; i++) *n = *n * 10 + (u32)(v.p[i] - '0');
		if (v.n && (v.p[0] < '0' || v.p[0] > '9')) return fail(usage);
		return parse_url((str){u.p + 1, e - 1});
	}
	u32 sp = d.n;
	while (sp && d.p[sp - 1] != ' ') sp--;
	for (u32 i = sp; i < d.n; i++) {
		if (d.p[i] < '0' || d.p[i] > '9') return fail(usage);
		*n = *n * 10 + (u32)(d.p[i] - '0');
	}
	if (!sp || sp == d.n) return fail(usage);
	return parse_url((str){d.p, sp - 1});
}

EXPORT("murmur:tool/run@0.1.0#run")
u32 *run(u32 data_some, const char *data, u32 data_len, u32 log_some, const char *log, u32 log_len) {
	(void)log_some, (void)log, (void)log_len;
	u32 n;
	if (!data_some) fail("no tool-input.data");
	if (!data_some || !parse_input((str){data, data_len}, &n)) return answer(0, buf_str(&reason), S(""));
	u8 *rbuf = alloc(8, READ_CHUNK);
	buf out = {0};
	u64 total = 0;
	for (u32 i = 0; i < n; i++) {
		u32 got;
		u64 t0 = clock_now();
		if (!get(rbuf, &got)) return answer(0, buf_str(&reason), S(""));
		u64 t1 = clock_now();
		total += got;
#ifdef MURMUR_PROFILE
		if (i < PROF_MAX) memcpy(prof_req[i], prof_cur, sizeof prof_cur);
		memset(prof_cur, 0, sizeof prof_cur);
#endif
		if (i) putc_(&out, ' ');
		put_int(&out, (i64)(t1 - t0));
	}
	buf summary = {0};
	puts_(&summary, "bytes=");
	put_int(&summary, (i64)total);
#ifdef MURMUR_PROFILE
	static const char *names[P_KINDS] = {"setup", "handle", "wait", "resp", "read", "end", "drop"};
	puts_(&summary, " PROFILE");
	for (int k = 0; k < P_KINDS; k++) {
		putc_(&summary, ' ');
		puts_(&summary, names[k]);
		putc_(&summary, '=');
		for (u32 i = 0; i < n && i < PROF_MAX; i++) {
			if (i) putc_(&summary, ',');
			put_int(&summary, (i64)prof_req[i][k]);
		}
	}
	// A clock pair's own cost, for reading the rest.
	u64 c0 = clock_now(), c1 = clock_now();
	puts_(&summary, " clock=");
	put_int(&summary, (i64)(c1 - c0));
#endif
	return answer(1, buf_str(&summary), buf_str(&out));
}
