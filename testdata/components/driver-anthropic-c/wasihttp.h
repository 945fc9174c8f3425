// wasihttp.h: the wasi:http@0.2.12 and wasi:io@0.2.12 imports of the C
// components, in the canonical ABI's core signatures (results over one value
// through a return-area pointer), and the error-code case names. Shared by
// driver-anthropic-c and http-get-c (a link there); a declaration a component
// does not call is not imported.
#ifndef WASIHTTP_H
#define WASIHTTP_H

#include "base.h"

#define HTTP "wasi:http/types@0.2.12"
#define IO "wasi:io/streams@0.2.12"

IMPORT(HTTP, "[constructor]fields") u32 fields_new(void);
IMPORT(HTTP, "[method]fields.append") void fields_append(u32 f, const char *k, u32 kn, const char *v, u32 vn, u8 *ret);
IMPORT(HTTP, "[constructor]outgoing-request") u32 request_new(u32 headers);
IMPORT(HTTP, "[method]outgoing-request.set-method") u32 request_set_method(u32 r, u32 disc, const char *p, u32 n);
IMPORT(HTTP, "[method]outgoing-request.set-scheme") u32 request_set_scheme(u32 r, u32 some, u32 disc, const char *p, u32 n);
IMPORT(HTTP, "[method]outgoing-request.set-authority") u32 request_set_authority(u32 r, u32 some, const char *p, u32 n);
IMPORT(HTTP, "[method]outgoing-request.set-path-with-query") u32 request_set_path(u32 r, u32 some, const char *p, u32 n);
IMPORT(HTTP, "[method]outgoing-request.body") void request_body(u32 r, u8 *ret);
IMPORT(HTTP, "[resource-drop]outgoing-request") void request_drop(u32 r);
IMPORT(HTTP, "[method]outgoing-body.write") void outbody_write(u32 b, u8 *ret);
IMPORT(HTTP, "[static]outgoing-body.finish") void outbody_finish(u32 b, u32 some, u32 trailers, u8 *ret);
IMPORT("wasi:http/outgoing-handler@0.2.12", "handle") void http_handle(u32 r, u32 some, u32 opts, u8 *ret);
IMPORT(HTTP, "[method]future-incoming-response.subscribe") u32 future_subscribe(u32 f);
IMPORT(HTTP, "[method]future-incoming-response.get") void future_get(u32 f, u8 *ret);
IMPORT(HTTP, "[resource-drop]future-incoming-response") void future_drop(u32 f);
IMPORT(HTTP, "[method]incoming-response.status") u32 response_status(u32 r);
IMPORT(HTTP, "[method]incoming-response.consume") void response_consume(u32 r, u8 *ret);
IMPORT(HTTP, "[resource-drop]incoming-response") void response_drop(u32 r);
IMPORT(HTTP, "[method]incoming-body.stream") void inbody_stream(u32 b, u8 *ret);
IMPORT(HTTP, "[resource-drop]incoming-body") void inbody_drop(u32 b);
IMPORT("wasi:io/poll@0.2.12", "[method]pollable.block") void pollable_block(u32 p);
IMPORT("wasi:io/poll@0.2.12", "[resource-drop]pollable") void pollable_drop(u32 p);
IMPORT(IO, "[method]input-stream.read") void input_read(u32 s, u64 n, u8 *ret);
IMPORT(IO, "[method]input-stream.subscribe") u32 input_subscribe(u32 s);
IMPORT(IO, "[resource-drop]input-stream") void input_drop(u32 s);
IMPORT(IO, "[method]output-stream.check-write") void output_check_write(u32 s, u8 *ret);
IMPORT(IO, "[method]output-stream.write") void output_write(u32 s, const char *p, u32 n, u8 *ret);
IMPORT(IO, "[method]output-stream.blocking-flush") void output_flush(u32 s, u8 *ret);
IMPORT(IO, "[resource-drop]output-stream") void output_drop(u32 s);
IMPORT("wasi:io/error@0.2.12", "[resource-drop]error") void ioerror_drop(u32 e);
IMPORT("wasi:clocks/monotonic-clock@0.2.12", "now") u64 clock_now(void);
IMPORT(IO, "[method]input-stream.blocking-read") void input_blocking_read(u32 s, u64 n, u8 *ret);

// http_error_name is the case name of error-code discriminant code
// ("error-code" past the cases of 0.2.12).
const char *http_error_name(u8 code);

#endif
