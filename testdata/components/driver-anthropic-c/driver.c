// driver-anthropic-c: a freestanding C driver component (contracts §14), no libc,
// no WASI adapter, no language runtime. It does what the Go-kit driver
// ../driver-anthropic-http does: each call of murmur:tool/run is one turn; it maps
// the normalized request JSON to an Anthropic Messages request, POSTs it with
// "stream": true to $MURMUR_INFERENCE_ENDPOINT/v1/messages over wasi:http@0.2.12
// with x-api-key $MURMUR_INFERENCE_API_KEY (a placeholder the host replaces on the
// gateway request only), relays each text delta through murmur:text/chunks as it
// arrives, and answers the normalized response JSON.
//
// Imports are declared in the canonical ABI's core signatures: parameters
// flattened; a result of more than one flat value is written by the host to a
// return area whose address is the last parameter. Memory is a bump allocator
// that never frees: every turn is a fresh instance. Bad input (request, events, a
// cut stream) answers status failed with a reason; only running out of memory traps.
//
// Files: base.h/base.c (memory, strings, buffers), json.c (the JSON reader and
// writer), this one (the driver). Build: ../../../scripts/build-c-component.sh
// (clang --target=wasm32, wasm-ld, then scripts/componentize.mjs against wit/
// world driver-c).

#include "base.h"
#include "wasihttp.h"


IMPORT("wasi:cli/environment@0.2.12", "get-environment") void env_get(u8 *ret);
IMPORT("murmur:text/chunks@0.1.0", "emit-chunk") void emit_chunk(const char *p, u32 n);


// A profiling build (-DMURMUR_PROFILE, world driver-c-profile) times the
// host calls by kind with wasi:clocks and emits the totals as a last chunk
// "PROFILE kind=ns/calls ..." (docs/benchmarks.md); the committed build has
// none of it.
enum { P_ENV, P_SETUP, P_WRITE, P_HANDLE, P_WAIT, P_RESP, P_READ, P_BLOCK, P_EMIT, P_DROP, P_TOTAL, P_CLOCK, P_KINDS };
#ifdef MURMUR_PROFILE
static u64 prof_ns[P_KINDS];
static u32 prof_n[P_KINDS];
#define PROF(k, stmt)                           \
	do {                                    \
		u64 t_ = clock_now();           \
		stmt;                           \
		prof_ns[k] += clock_now() - t_; \
		prof_n[k]++;                    \
	} while (0)
#else
#define PROF(k, stmt) \
	do {          \
		stmt; \
	} while (0)
#endif

// ---- the request ----

typedef struct {
	str type, text, id, name, input;
} block;

typedef struct {
	str role, tool_call_id;
	block *content;
	u32 ncontent;
} message;

typedef struct {
	str name, description, parameters;
} tool;

typedef struct {
	str model, system;
	i64 max_tokens;
	message *messages;
	u32 nmessages;
	tool *tools;
	u32 ntools;
} request;

// A growable array of fixed-size items in the arena.
static void *push(void *arr, u32 *n, u32 *cap, u32 size) {
	if (*n == *cap) {
		u32 c = *cap ? *cap * 2 : 4;
		void *p = alloc(8, c * size);
		if (*n) memcpy(p, arr, *n * size);
		arr = p;
		*cap = c;
	}
	memset((char *)arr + *n * size, 0, size);
	(*n)++;
	return arr;
}

static void parse_block(jr *j, block *b) {
	int first = 1;
	buf k = {0};
	if (is_null(j)) return;
	while (member(j, &first, &k)) {
		str key = buf_str(&k);
		if (str_eq(key, "type")) b->type = get_str(j);
		else if (str_eq(key, "text")) b->text = get_str(j);
		else if (str_eq(key, "id")) b->id = get_str(j);
		else if (str_eq(key, "name")) b->name = get_str(j);
		else if (str_eq(key, "input")) b->input = get_raw(j);
		else skip(j);
	}
}

static void parse_message(jr *j, message *m) {
	int first = 1;
	buf k = {0};
	if (is_null(j)) return;
	while (member(j, &first, &k)) {
		str key = buf_str(&k);
		if (str_eq(key, "role")) m->role = get_str(j);
		else if (str_eq(key, "tool_call_id")) m->tool_call_id = get_str(j);
		else if (str_eq(key, "content")) {
			u32 cap = 0;
			int f = 1;
			if (is_null(j)) continue;
			while (element(j, &f)) {
				m->content = push(m->content, &m->ncontent, &cap, sizeof(block));
				parse_block(j, &m->content[m->ncontent - 1]);
			}
		} else skip(j);
	}
}

static void parse_tool(jr *j, tool *t) {
	int first = 1;
	buf k = {0};
	if (is_null(j)) return;
	while (member(j, &first, &k)) {
		str key = buf_str(&k);
		if (str_eq(key, "name")) t->name = get_str(j);
		else if (str_eq(key, "description")) t->description = get_str(j);
		else if (str_eq(key, "parameters")) t->parameters = get_raw(j);
		else skip(j);
	}
}

static const char *parse_request(str in, request *r) {
	jr j = {in.p, in.p + in.n, 0, 0};
	int first = 1;
	buf k = {0};
	while (member(&j, &first, &k)) {
		str key = buf_str(&k);
		if (str_eq(key, "model")) r->model = get_str(&j);
		else if (str_eq(key, "system")) r->system = get_str(&j);
		else if (str_eq(key, "max_tokens")) r->max_tokens = get_int(&j);
		else if (str_eq(key, "messages")) {
			u32 cap = 0;
			int f = 1;
			if (is_null(&j)) continue;
			while (element(&j, &f)) {
				r->messages = push(r->messages, &r->nmessages, &cap, sizeof(message));
				parse_message(&j, &r->messages[r->nmessages - 1]);
			}
		} else if (str_eq(key, "tools")) {
			u32 cap = 0;
			int f = 1;
			if (is_null(&j)) continue;
			while (element(&j, &f)) {
				r->tools = push(r->tools, &r->ntools, &cap, sizeof(tool));
				parse_tool(&j, &r->tools[r->ntools - 1]);
			}
		} else skip(&j);
	}
	ws(&j);
	if (!j.err && j.p != j.e) j.err = "data after the request";
	return j.err;
}

// put_raw writes a raw JSON span, null when it is empty.
static void put_raw(buf *b, str s) {
	if (s.n) put_str(b, s);
	else puts_(b, "null");
}

// wire writes the Anthropic Messages body; keys in the Go-kit driver's order
// (Go marshals maps sorted).
static void wire(buf *b, request *r) {
	puts_(b, "{\"max_tokens\":");
	put_int(b, r->max_tokens);
	puts_(b, ",\"messages\":");
	if (!r->nmessages) puts_(b, "null");
	else putc_(b, '[');
	for (u32 i = 0; i < r->nmessages; i++) {
		message *m = &r->messages[i];
		int tool_role = str_eq(m->role, "tool");
		if (i) putc_(b, ',');
		puts_(b, "{\"content\":");
		if (!m->ncontent) puts_(b, "null");
		else putc_(b, '[');
		for (u32 k = 0; k < m->ncontent; k++) {
			block *c = &m->content[k];
			if (k) putc_(b, ',');
			if (tool_role) {
				puts_(b, "{\"content\":");
				put_json(b, c->text);
				puts_(b, ",\"tool_use_id\":");
				put_json(b, m->tool_call_id);
				puts_(b, ",\"type\":\"tool_result\"}");
			} else if (str_eq(c->type, "tool_call")) {
				puts_(b, "{\"id\":");
				put_json(b, c->id);
				puts_(b, ",\"input\":");
				put_raw(b, c->input);
				puts_(b, ",\"name\":");
				put_json(b, c->name);
				puts_(b, ",\"type\":\"tool_use\"}");
			} else {
				puts_(b, "{\"text\":");
				put_json(b, c->text);
				puts_(b, ",\"type\":\"text\"}");
			}
		}
		if (m->ncontent) putc_(b, ']');
		puts_(b, ",\"role\":");
		put_json(b, tool_role ? S("user") : m->role);
		putc_(b, '}');
	}
	if (r->nmessages) putc_(b, ']');
	puts_(b, ",\"model\":");
	put_json(b, r->model);
	puts_(b, ",\"stream\":true");
	if (r->system.n) {
		puts_(b, ",\"system\":");
		put_json(b, r->system);
	}
	if (r->ntools) {
		puts_(b, ",\"tools\":[");
		for (u32 i = 0; i < r->ntools; i++) {
			tool *t = &r->tools[i];
			if (i) putc_(b, ',');
			puts_(b, "{\"description\":");
			put_json(b, t->description);
			puts_(b, ",\"input_schema\":");
			put_raw(b, t->parameters);
			puts_(b, ",\"name\":");
			put_json(b, t->name);
			putc_(b, '}');
		}
		putc_(b, ']');
	}
	putc_(b, '}');
}

// ---- the environment ----

static str env_key, env_endpoint;

static void read_env(void) {
	u32 ret[2];
	env_get((u8 *)ret);
	u32 *ents = (u32 *)ret[0];
	for (u32 i = 0; i < ret[1]; i++) {
		str k = {(const char *)ents[4 * i], ents[4 * i + 1]};
		str v = {(const char *)ents[4 * i + 2], ents[4 * i + 3]};
		if (str_eq(k, "MURMUR_INFERENCE_ENDPOINT")) env_endpoint = v;
		else if (str_eq(k, "MURMUR_INFERENCE_API_KEY")) env_key = v;
	}
}

// ---- the turn's outcome ----

// The failure reason, when the turn has failed.
static buf reason;

static int failed(const char *what, str detail) {
	if (reason.n) return 0;
	puts_(&reason, what);
	if (detail.n) {
		puts_(&reason, ": ");
		put_str(&reason, detail);
	}
	return 0;
}

// ---- the response, assembled from the stream ----

typedef struct {
	block *blocks;
	u32 nblocks, cap;
	i64 input_tokens, output_tokens;
	const char *stop_reason;
	int open, stopped; // a content block is open; message_stop was seen
	u32 tool_calls;
	block cur;
	buf text, partial;
} response;

typedef struct {
	str type;
	i64 input_tokens;  // message.usage.input_tokens
	i64 output_tokens; // usage.output_tokens
	block content_block;
	str delta_type, delta_text, delta_partial, delta_stop;
	str error_message;
} event;

static void parse_usage(jr *j, i64 *val, const char *want) {
	int first = 1;
	buf k = {0};
	if (is_null(j)) return;
	while (member(j, &first, &k)) {
		if (str_eq(buf_str(&k), want)) *val = get_int(j);
		else skip(j);
	}
}

static const char *parse_event(str data, event *ev) {
	jr j = {data.p, data.p + data.n, 0, 0};
	int first = 1;
	buf k = {0};
	while (member(&j, &first, &k)) {
		str key = buf_str(&k);
		if (str_eq(key, "type")) ev->type = get_str(&j);
		else if (str_eq(key, "message")) {
			int f = 1;
			buf k2 = {0};
			if (is_null(&j)) continue;
			while (member(&j, &f, &k2)) {
				if (str_eq(buf_str(&k2), "usage")) parse_usage(&j, &ev->input_tokens, "input_tokens");
				else skip(&j);
			}
		} else if (str_eq(key, "content_block")) parse_block(&j, &ev->content_block);
		else if (str_eq(key, "delta")) {
			int f = 1;
			buf k2 = {0};
			if (is_null(&j)) continue;
			while (member(&j, &f, &k2)) {
				str d = buf_str(&k2);
				if (str_eq(d, "type")) ev->delta_type = get_str(&j);
				else if (str_eq(d, "text")) ev->delta_text = get_str(&j);
				else if (str_eq(d, "partial_json")) ev->delta_partial = get_str(&j);
				else if (str_eq(d, "stop_reason")) ev->delta_stop = get_str(&j);
				else skip(&j);
			}
		} else if (str_eq(key, "usage")) parse_usage(&j, &ev->output_tokens, "output_tokens");
		else if (str_eq(key, "error")) {
			int f = 1;
			buf k2 = {0};
			if (is_null(&j)) continue;
			while (member(&j, &f, &k2)) {
				if (str_eq(buf_str(&k2), "message")) ev->error_message = get_str(&j);
				else skip(&j);
			}
		} else skip(&j);
	}
	ws(&j);
	if (!j.err && j.p != j.e) j.err = "data after the event";
	return j.err;
}

// on_event applies one SSE data line; 0 when the turn has failed.
static int on_event(response *out, str data) {
	event ev = {0};
	const char *err = parse_event(data, &ev);
	if (err) return failed("a stream event is not JSON", S(err));
	if (str_eq(ev.type, "message_start")) {
		out->input_tokens = ev.input_tokens;
	} else if (str_eq(ev.type, "content_block_start")) {
		out->cur = ev.content_block;
		out->open = 1;
		out->text.n = 0;
		put_str(&out->text, ev.content_block.text);
		out->partial.n = 0;
	} else if (str_eq(ev.type, "content_block_delta")) {
		if (!out->open) return 1;
		if (str_eq(ev.delta_type, "text_delta")) {
			put_str(&out->text, ev.delta_text);
			if (ev.delta_text.n) PROF(P_EMIT, emit_chunk(ev.delta_text.p, ev.delta_text.n));
		} else if (str_eq(ev.delta_type, "input_json_delta")) {
			put_str(&out->partial, ev.delta_partial);
		}
	} else if (str_eq(ev.type, "content_block_stop")) {
		if (!out->open) return 1;
		out->blocks = push(out->blocks, &out->nblocks, &out->cap, sizeof(block));
		block *b = &out->blocks[out->nblocks - 1];
		if (str_eq(out->cur.type, "tool_use")) {
			str in = out->partial.n ? buf_str(&out->partial) : S("{}");
			if (!out->cur.name.n) return failed("a tool_use block without a name", out->cur.id);
			if (!whole(in)) return failed("the input of a tool call is not JSON", out->cur.id);
			out->tool_calls++;
			*b = (block){S("tool_call"), {0, 0}, out->cur.id, out->cur.name, in};
			out->partial = (buf){0};
		} else {
			*b = (block){S("text"), buf_str(&out->text), {0, 0}, {0, 0}, {0, 0}};
			out->text = (buf){0};
		}
		out->open = 0;
	} else if (str_eq(ev.type, "message_delta")) {
		out->output_tokens = ev.output_tokens;
		str s = ev.delta_stop;
		if (str_eq(s, "tool_use")) out->stop_reason = "tool_call";
		else if (str_eq(s, "max_tokens")) out->stop_reason = "max_tokens";
		else if (str_eq(s, "end_turn") || str_eq(s, "stop_sequence") || !s.n) out->stop_reason = "end_turn";
		else out->stop_reason = "error";
	} else if (str_eq(ev.type, "message_stop")) {
		out->stopped = 1;
	} else if (str_eq(ev.type, "error")) {
		return failed("provider stream error", ev.error_message);
	}
	return 1;
}

// on_line applies one line of the SSE stream (without its line ending).
static int on_line(response *out, const char *p, u32 n) {
	if (n && p[n - 1] == '\r') n--;
	if (!has_prefix(p, n, "data: ")) return 1;
	return on_event(out, (str){p + 6, n - 6});
}

static void put_response(buf *b, response *r) {
	puts_(b, "{\"stop_reason\":");
	put_json(b, S(r->stop_reason));
	puts_(b, ",\"content\":[");
	for (u32 i = 0; i < r->nblocks; i++) {
		block *c = &r->blocks[i];
		if (i) putc_(b, ',');
		puts_(b, "{\"type\":");
		put_json(b, c->type);
		if (c->text.n || str_eq(c->type, "text")) puts_(b, ",\"text\":"), put_json(b, c->text);
		if (c->id.n) puts_(b, ",\"id\":"), put_json(b, c->id);
		if (c->name.n) puts_(b, ",\"name\":"), put_json(b, c->name);
		if (c->input.n) puts_(b, ",\"input\":"), put_str(b, c->input);
		putc_(b, '}');
	}
	puts_(b, "],\"usage\":{\"input_tokens\":");
	put_int(b, r->input_tokens);
	puts_(b, ",\"output_tokens\":");
	put_int(b, r->output_tokens);
	puts_(b, "}}");
}

// ---- HTTP over wasi:http ----

// An 8-aligned return area for the imports.
static u64 area_[16];
#define RET ((u8 *)area_)
#define RET32(off) (*(u32 *)(RET + (off)))

static int header(u32 f, const char *k, str v) {
	fields_append(f, k, cstrlen(k), v.p, v.n, RET);
	if (RET[0]) return failed("wasi:http: cannot set the header", S(k));
	return 1;
}

// write_all writes the request body through its output-stream.
static int write_all(u32 ob, str body) {
	outbody_write(ob, RET);
	if (RET[0]) return failed("wasi:http: the request body stream is unavailable", S(""));
	u32 s = RET32(4);
	u32 off = 0;
	int ok = 1;
	u32 err_at = 4; // where the stream-error sits in the failed call's result
	while (ok && off < body.n) {
		output_check_write(s, RET);
		if (RET[0]) {
			ok = 0;
			err_at = 8; // result<u64, stream-error>: the payload is 8-aligned
			break;
		}
		u64 room = *(u64 *)(RET + 8);
		if (!room) {
			output_flush(s, RET);
			if (RET[0]) ok = 0;
			continue;
		}
		u32 k = body.n - off;
		if (room < k) k = (u32)room;
		output_write(s, body.p + off, k, RET);
		if (RET[0]) ok = 0;
		off += k;
	}
	if (ok) {
		output_flush(s, RET);
		if (RET[0]) ok = 0;
	}
	if (!ok && RET[err_at] == 0) ioerror_drop(RET32(err_at + 4));
	output_drop(s);
	if (!ok) return failed("wasi:http: writing the request body failed", S(""));
	return 1;
}

static int http_error(u8 code) {
	return failed("wasi:http", S(http_error_name(code)));
}

enum { READ_CHUNK = 16 << 10, ERROR_BODY = 4096 };

// read_some reads what the stream has, waiting for it when nothing has come
// yet: 1 with the bytes in *p/*n, 0 at the end, -1 when the read failed.
static int read_some(u32 s, u8 *rbuf, const char **p, u32 *n) {
	for (;;) {
		scratch = rbuf;
		scratch_cap = READ_CHUNK;
		PROF(P_READ, input_read(s, READ_CHUNK, RET));
		scratch = 0;
		if (RET[0]) {
			if (RET[4] == 0) {
				ioerror_drop(RET32(8));
				return -1;
			}
			return 0;
		}
		*p = (const char *)RET32(4);
		*n = RET32(8);
		if (*n) return 1;
		PROF(P_BLOCK, u32 poll = input_subscribe(s); pollable_block(poll); pollable_drop(poll));
	}
}

// call POSTs body and streams the answer into out; 0 when the turn failed.
static int call(str body, response *out) {
	str ep = env_endpoint;
	u32 scheme;
	if (has_prefix(ep.p, ep.n, "http://")) scheme = 0, ep.p += 7, ep.n -= 7;
	else if (has_prefix(ep.p, ep.n, "https://")) scheme = 1, ep.p += 8, ep.n -= 8;
	else return failed("MURMUR_INFERENCE_ENDPOINT is not an http(s) URL", env_endpoint);
	u32 slash = 0;
	while (slash < ep.n && ep.p[slash] != '/') slash++;
	str authority = {ep.p, slash};
	str base = {ep.p + slash, ep.n - slash};
	if (base.n && base.p[base.n - 1] == '/') base.n--;
	buf path = {0};
	put_str(&path, base);
	puts_(&path, "/v1/messages");
	buf clen = {0};
	put_int(&clen, body.n);

	u32 f, req;
	int bad;
	PROF(P_SETUP, f = fields_new();
	     bad = !header(f, "content-type", S("application/json")) || !header(f, "accept", S("text/event-stream")) ||
		   !header(f, "anthropic-version", S("2023-06-01")) || !header(f, "x-api-key", env_key) ||
		   !header(f, "content-length", buf_str(&clen)));
	if (bad) return 0;
	PROF(P_SETUP, req = request_new(f);
	     bad = request_set_method(req, 2, "POST", 4) || request_set_scheme(req, 1, scheme, "", 0) ||
		   request_set_authority(req, 1, authority.p, authority.n) || request_set_path(req, 1, path.p, path.n));
	if (bad) {
		request_drop(req);
		return failed("wasi:http: invalid request URL", env_endpoint);
	}
	PROF(P_SETUP, request_body(req, RET));
	if (RET[0]) {
		request_drop(req);
		return failed("wasi:http: the request has no body", S(""));
	}
	u32 ob = RET32(4);
	PROF(P_WRITE, bad = !write_all(ob, body));
	if (bad) {
		request_drop(req);
		return 0;
	}
	PROF(P_WRITE, outbody_finish(ob, 0, 0, RET));
	if (RET[0]) {
		request_drop(req);
		return http_error(RET[8]);
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
		return failed("wasi:http: the response was already taken", S(""));
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
		return failed("wasi:http: the response has no body", S(""));
	}
	u32 ib = RET32(4);
	PROF(P_RESP, inbody_stream(ib, RET));
	if (RET[0]) {
		inbody_drop(ib);
		response_drop(resp);
		future_drop(fut);
		return failed("wasi:http: the response body stream is unavailable", S(""));
	}
	u32 s = RET32(4);

	u8 *rbuf = alloc(8, READ_CHUNK);
	buf line = {0};
	const char *p;
	u32 n;
	int r, ok = 1;
	if (status != 200) {
		while (line.n < ERROR_BODY && (r = read_some(s, rbuf, &p, &n)) > 0)
			put(&line, p, n < ERROR_BODY - line.n ? n : ERROR_BODY - line.n);
		buf msg = {0};
		puts_(&msg, "provider answered ");
		put_int(&msg, status);
		putc_(&msg, 0);
		buf body = {0};
		put_utf8_valid(&body, line.p, line.n);
		ok = failed(msg.p, buf_str(&body));
	} else {
		while (ok && (r = read_some(s, rbuf, &p, &n)) > 0) {
			for (u32 i = 0; ok && i < n; i++) {
				u32 start = i;
				while (i < n && p[i] != '\n') i++;
				put(&line, p + start, i - start);
				if (i < n) { // a whole line
					ok = on_line(out, line.p, line.n);
					line.n = 0;
				}
			}
		}
		if (ok && r < 0) ok = failed("reading the provider's stream failed (the connection was cut?)", S(""));
		if (ok && line.n) ok = on_line(out, line.p, line.n);
		if (ok && !out->stopped) ok = failed("the provider's stream ended before message_stop", S(""));
		if (ok && !out->tool_calls && str_eq(S(out->stop_reason), "tool_call"))
			ok = failed("the provider stopped for tool_use without a tool_use block", S(""));
	}
	PROF(P_DROP, input_drop(s); inbody_drop(ib); response_drop(resp); future_drop(fut));
	return ok;
}

// ---- the export ----

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

EXPORT("murmur:tool/run@0.1.0#run")
u32 *run(u32 data_some, const char *data, u32 data_len, u32 log_some, const char *log, u32 log_len) {
	(void)log_some, (void)log, (void)log_len;
#ifdef MURMUR_PROFILE
	u64 t0 = clock_now();
#endif
	if (!data_some) return answer(0, S("no request"), S(""));
	request req = {0};
	const char *err = parse_request((str){data, data_len}, &req);
	if (err) {
		failed("the request is not JSON", S(err));
		return answer(0, buf_str(&reason), S(""));
	}
	PROF(P_ENV, read_env());
	buf body = {0};
	wire(&body, &req);
	response out = {0};
	out.stop_reason = "end_turn";
	int ok = call(buf_str(&body), &out);
#ifdef MURMUR_PROFILE
	PROF(P_CLOCK, (void)0);
	prof_ns[P_TOTAL] = clock_now() - t0;
	prof_n[P_TOTAL] = 1;
	static const char *names[P_KINDS] = {"env", "setup", "write", "handle", "wait", "resp", "read", "block", "emit", "drop", "total", "clock"};
	buf pr = {0};
	puts_(&pr, "PROFILE");
	for (int k = 0; k < P_KINDS; k++) {
		putc_(&pr, ' ');
		puts_(&pr, names[k]);
		putc_(&pr, '=');
		put_int(&pr, (i64)prof_ns[k]);
		putc_(&pr, '/');
		put_int(&pr, prof_n[k]);
	}
	emit_chunk(pr.p, pr.n);
#endif
	if (!ok) return answer(0, buf_str(&reason), S(""));
	buf res = {0};
	put_response(&res, &out);
	return answer(1, S(""), buf_str(&res));
}
