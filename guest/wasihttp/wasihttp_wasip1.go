//go:build wasip1

package wasihttp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"github.com/murmur-go/murmur/guest"
)

// Package wasihttp is the Go guest kit's HTTP client: a net/http
// RoundTripper over wasi:http@0.2.12, so a component makes requests as Go
// code does anywhere. It is a package of its own so that only components
// that make requests link net/http (about 2 MB of component).
//
// An HTTP client over wasi:http@0.2.12 (the host answers it within the
// capsule's or tool's capabilities.network.allow). Only the imports a
// component calls end up in it, so a component that never makes a request
// does not import wasi:http.

//go:wasmimport wasi:http/types@0.2.12 [constructor]fields
func rawNewFields() uint32

//go:wasmimport wasi:http/types@0.2.12 [method]fields.append
func rawFieldsAppend(f, namePtr, nameLen, valPtr, valLen, ret uint32)

//go:wasmimport wasi:http/types@0.2.12 [method]fields.entries
func rawFieldsEntries(f, ret uint32)

//go:wasmimport wasi:http/types@0.2.12 [resource-drop]fields
func rawDropFields(f uint32)

//go:wasmimport wasi:http/types@0.2.12 [constructor]outgoing-request
func rawNewRequest(headers uint32) uint32

//go:wasmimport wasi:http/types@0.2.12 [method]outgoing-request.set-method
func rawSetMethod(req, disc, ptr, n uint32) uint32

//go:wasmimport wasi:http/types@0.2.12 [method]outgoing-request.set-scheme
func rawSetScheme(req, some, disc, ptr, n uint32) uint32

//go:wasmimport wasi:http/types@0.2.12 [method]outgoing-request.set-authority
func rawSetAuthority(req, some, ptr, n uint32) uint32

//go:wasmimport wasi:http/types@0.2.12 [method]outgoing-request.set-path-with-query
func rawSetPath(req, some, ptr, n uint32) uint32

//go:wasmimport wasi:http/types@0.2.12 [method]outgoing-request.body
func rawRequestBody(req, ret uint32)

//go:wasmimport wasi:http/types@0.2.12 [resource-drop]outgoing-request
func rawDropRequest(req uint32)

//go:wasmimport wasi:http/types@0.2.12 [method]outgoing-body.write
func rawBodyWrite(body, ret uint32)

//go:wasmimport wasi:http/types@0.2.12 [static]outgoing-body.finish
func rawBodyFinish(body, some, trailers, ret uint32)

//go:wasmimport wasi:http/outgoing-handler@0.2.12 handle
func rawHandle(req, optSome, opt, ret uint32)

//go:wasmimport wasi:http/types@0.2.12 [method]future-incoming-response.subscribe
func rawFutureSubscribe(f uint32) uint32

//go:wasmimport wasi:http/types@0.2.12 [method]future-incoming-response.get
func rawFutureGet(f, ret uint32)

//go:wasmimport wasi:http/types@0.2.12 [resource-drop]future-incoming-response
func rawDropFuture(f uint32)

//go:wasmimport wasi:http/types@0.2.12 [method]incoming-response.status
func rawStatus(resp uint32) uint32

//go:wasmimport wasi:http/types@0.2.12 [method]incoming-response.headers
func rawResponseHeaders(resp uint32) uint32

//go:wasmimport wasi:http/types@0.2.12 [method]incoming-response.consume
func rawConsume(resp, ret uint32)

//go:wasmimport wasi:http/types@0.2.12 [resource-drop]incoming-response
func rawDropResponse(resp uint32)

//go:wasmimport wasi:http/types@0.2.12 [method]incoming-body.stream
func rawBodyStream(body, ret uint32)

//go:wasmimport wasi:http/types@0.2.12 [static]incoming-body.finish
func rawIncomingFinish(body uint32) uint32

//go:wasmimport wasi:http/types@0.2.12 [resource-drop]incoming-body
func rawDropIncomingBody(body uint32)

//go:wasmimport wasi:http/types@0.2.12 [method]future-trailers.subscribe
func rawTrailersSubscribe(f uint32) uint32

//go:wasmimport wasi:http/types@0.2.12 [method]future-trailers.get
func rawTrailersGet(f, ret uint32)

//go:wasmimport wasi:http/types@0.2.12 [resource-drop]future-trailers
func rawDropTrailers(f uint32)

//go:wasmimport wasi:io/poll@0.2.12 [method]pollable.block
func rawBlock(p uint32)

//go:wasmimport wasi:io/poll@0.2.12 [resource-drop]pollable
func rawDropPollable(p uint32)

//go:wasmimport wasi:io/streams@0.2.12 [method]input-stream.blocking-read
func rawBlockingRead(s uint32, n uint64, ret uint32)

//go:wasmimport wasi:io/streams@0.2.12 [method]input-stream.read
func rawRead(s uint32, n uint64, ret uint32)

//go:wasmimport wasi:io/streams@0.2.12 [resource-drop]input-stream
func rawDropInput(s uint32)

//go:wasmimport wasi:io/streams@0.2.12 [method]output-stream.check-write
func rawCheckWrite(s, ret uint32)

//go:wasmimport wasi:io/streams@0.2.12 [method]output-stream.write
func rawWrite(s, ptr, n, ret uint32)

//go:wasmimport wasi:io/streams@0.2.12 [method]output-stream.blocking-flush
func rawBlockingFlush(s, ret uint32)

//go:wasmimport wasi:io/streams@0.2.12 [resource-drop]output-stream
func rawDropOutput(s uint32)

//go:wasmimport wasi:io/error@0.2.12 [resource-drop]error
func rawDropIOError(e uint32)

// httpErrorCodes are wasi:http/types error-code's cases, in WIT order.
var httpErrorCodes = strings.Fields(`DNS-timeout DNS-error destination-not-found destination-unavailable
destination-IP-prohibited destination-IP-unroutable connection-refused connection-terminated
connection-timeout connection-read-timeout connection-write-timeout connection-limit-reached
TLS-protocol-error TLS-certificate-error TLS-alert-received HTTP-request-denied
HTTP-request-length-required HTTP-request-body-size HTTP-request-method-invalid
HTTP-request-URI-invalid HTTP-request-URI-too-long HTTP-request-header-section-size
HTTP-request-header-size HTTP-request-trailer-section-size HTTP-request-trailer-size
HTTP-response-incomplete HTTP-response-header-section-size HTTP-response-header-size
HTTP-response-body-size HTTP-response-trailer-section-size HTTP-response-trailer-size
HTTP-response-transfer-coding HTTP-response-content-coding HTTP-response-timeout
HTTP-upgrade-failed HTTP-protocol-error loop-detected configuration-error internal-error`)

// HTTPError is a request the host answered with a wasi:http error-code, such
// as HTTP-request-denied (the manifest's capabilities.network.allow does
// not cover the URL) or HTTP-response-body-size.
type Error struct{ Code string }

func (e *Error) Error() string { return "wasi:http: " + e.Code }

func errorCodeAt(p uint32) *Error {
	c := int(mem(p, 1)[0])
	if c < len(httpErrorCodes) {
		return &Error{Code: httpErrorCodes[c]}
	}
	return &Error{Code: "error-code " + strconv.Itoa(c)}
}

// HTTPTransport returns a net/http RoundTripper over wasi:http, so a
// component makes requests as Go code does anywhere:
//
//	c := &http.Client{Transport: wasihttp.Transport()}
//	resp, err := c.Get("https://api.example.com/v1/items")
//
// The host follows no redirects (http.Client does, each one a new request
// the grant must cover) and bounds every request by the component call.
// A refused request returns an *Error.
func Transport() http.RoundTripper { return transport{} }

type transport struct{}

// area is an 8-aligned return area on the Go heap, kept alive by the caller.
type area [8]uint64

func (a *area) ptr() uint32 { return uint32(uintptr(unsafe.Pointer(&a[0]))) }
func (a *area) b() []byte   { return unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), 64) }
func (a *area) u32(off int) uint32 {
	return binary.LittleEndian.Uint32(a.b()[off:])
}

func (transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	var ret area
	fields := rawNewFields()
	add := func(f uint32, k, v string) error {
		rawFieldsAppend(f, ptrOf(k), uint32(len(k)), ptrOf(v), uint32(len(v)), ret.ptr())
		runtime.KeepAlive(k)
		runtime.KeepAlive(v)
		if ret.b()[0] != 0 {
			return fmt.Errorf("wasi:http: header %q: %s", k, []string{"invalid-syntax", "forbidden", "immutable"}[ret.b()[1]%3])
		}
		return nil
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			if err := add(fields, strings.ToLower(k), v); err != nil {
				rawDropFields(fields)
				return nil, err
			}
		}
	}
	if req.ContentLength > 0 {
		add(fields, "content-length", strconv.FormatInt(req.ContentLength, 10))
	}
	r := rawNewRequest(fields)
	methods := []string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}
	m := req.Method
	if m == "" {
		m = "GET"
	}
	disc := uint32(len(methods))
	for i, x := range methods {
		if x == m {
			disc = uint32(i)
		}
	}
	fail := func(what string) (*http.Response, error) {
		rawDropRequest(r)
		return nil, errors.New("wasi:http: invalid " + what)
	}
	if rawSetMethod(r, disc, ptrOf(m), uint32(len(m))) != 0 {
		return fail("method " + m)
	}
	scheme := uint32(2)
	switch req.URL.Scheme {
	case "http":
		scheme = 0
	case "https":
		scheme = 1
	}
	s := req.URL.Scheme
	if rawSetScheme(r, 1, scheme, ptrOf(s), uint32(len(s))) != 0 {
		return fail("scheme " + s)
	}
	host := req.URL.Host
	if rawSetAuthority(r, 1, ptrOf(host), uint32(len(host))) != 0 {
		return fail("authority " + host)
	}
	path := req.URL.RequestURI()
	if rawSetPath(r, 1, ptrOf(path), uint32(len(path))) != 0 {
		return fail("path " + path)
	}
	runtime.KeepAlive(m)
	runtime.KeepAlive(s)
	runtime.KeepAlive(host)
	runtime.KeepAlive(path)

	rawRequestBody(r, ret.ptr())
	if ret.b()[0] != 0 {
		return fail("body")
	}
	ob := ret.u32(4)
	if req.Body != nil && req.Body != http.NoBody {
		if err := writeBody(ob, req.Body); err != nil {
			rawDropRequest(r)
			return nil, err
		}
	}
	trailers, some := uint32(0), uint32(0)
	if len(req.Trailer) > 0 {
		trailers, some = rawNewFields(), 1
		for k, vs := range req.Trailer {
			for _, v := range vs {
				add(trailers, strings.ToLower(k), v)
			}
		}
	}
	rawBodyFinish(ob, some, trailers, ret.ptr())
	if ret.b()[0] != 0 {
		rawDropRequest(r)
		return nil, errorCodeAt(ret.ptr() + 8)
	}
	rawHandle(r, 0, 0, ret.ptr())
	if ret.b()[0] != 0 {
		return nil, errorCodeAt(ret.ptr() + 8)
	}
	fut := ret.u32(8)
	defer rawDropFuture(fut)
	for {
		rawFutureGet(fut, ret.ptr())
		if ret.b()[0] != 0 {
			break
		}
		p := rawFutureSubscribe(fut)
		rawBlock(p)
		rawDropPollable(p)
	}
	if ret.b()[8] != 0 {
		return nil, errors.New("wasi:http: the response was already taken")
	}
	if ret.b()[16] != 0 {
		return nil, errorCodeAt(ret.ptr() + 24)
	}
	resp := ret.u32(24)
	out := &http.Response{
		Status:     "",
		StatusCode: int(rawStatus(resp)),
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        readFields(rawResponseHeaders(resp), true),
		Request:       req,
		ContentLength: -1,
		Trailer:       http.Header{},
	}
	out.Status = strconv.Itoa(out.StatusCode) + " " + http.StatusText(out.StatusCode)
	if n, err := strconv.ParseInt(out.Header.Get("Content-Length"), 10, 64); err == nil {
		out.ContentLength = n
	}
	rawConsume(resp, ret.ptr())
	if ret.b()[0] != 0 {
		rawDropResponse(resp)
		return nil, errors.New("wasi:http: the response body was already taken")
	}
	body := ret.u32(4)
	rawBodyStream(body, ret.ptr())
	if ret.b()[0] != 0 {
		rawDropIncomingBody(body)
		rawDropResponse(resp)
		return nil, errors.New("wasi:http: the response body stream is unavailable")
	}
	out.Body = &bodyReader{resp: resp, body: body, stream: ret.u32(4), trailer: out.Trailer, left: out.ContentLength}
	return out, nil
}

// ioChunk is the most a wasip2 file stream reads or writes in one call
// (wasmtime's limit); the host's body streams are file streams.
const ioChunk = 64 << 10

// writeBody copies src into the outgoing body through its output-stream, a
// chunk of up to ioChunk bytes a write (blocking-write-and-flush would take
// at most 4096): each write is done by the host in the background while
// the next chunk is read from src, and blocking-flush waits for it.
func writeBody(ob uint32, src io.Reader) error {
	var ret area
	rawBodyWrite(ob, ret.ptr())
	if ret.b()[0] != 0 {
		return errors.New("wasi:http: the request body stream is unavailable")
	}
	s := ret.u32(4)
	defer rawDropOutput(s)
	failed := func(errAt int) error {
		if ret.b()[errAt] == 0 {
			rawDropIOError(ret.u32(errAt + 4))
		}
		return errors.New("wasi:http: writing the request body failed")
	}
	flush := func() error {
		rawBlockingFlush(s, ret.ptr())
		if ret.b()[0] != 0 {
			return failed(4)
		}
		return nil
	}
	buf := make([]byte, ioChunk)
	for {
		n, err := src.Read(buf)
		for p := buf[:n]; len(p) > 0; {
			rawCheckWrite(s, ret.ptr())
			if ret.b()[0] != 0 {
				return failed(8)
			}
			room := binary.LittleEndian.Uint64(ret.b()[8:])
			if room == 0 {
				// The previous write is still being done: wait for it.
				if err := flush(); err != nil {
					return err
				}
				continue
			}
			k := min(uint64(len(p)), room)
			rawWrite(s, uint32(uintptr(unsafe.Pointer(&p[0]))), uint32(k), ret.ptr())
			if ret.b()[0] != 0 {
				return failed(4)
			}
			p = p[k:]
		}
		runtime.KeepAlive(buf)
		if err == io.EOF {
			return flush()
		}
		if err != nil {
			return err
		}
	}
}

// readFields reads a fields handle into a header and drops the handle.
func readFields(f uint32, drop bool) http.Header {
	h := http.Header{}
	guest.CallImport(8, func(ret uint32) { rawFieldsEntries(f, ret) }, func(ret uint32) {
		m := mem(ret, 8)
		p, n := binary.LittleEndian.Uint32(m), binary.LittleEndian.Uint32(m[4:])
		for i := uint32(0); i < n; i++ {
			e := mem(p+i*16, 16)
			kp, kn := binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint32(e[4:])
			vp, vn := binary.LittleEndian.Uint32(e[8:]), binary.LittleEndian.Uint32(e[12:])
			h.Add(string(mem(kp, kn)), string(mem(vp, vn)))
		}
	})
	if drop {
		rawDropFields(f)
	}
	return h
}

// bodyReader reads a response body from its input-stream; at the end it
// finishes the body and reads the trailers (or the error that ended it).
type bodyReader struct {
	resp, body, stream uint32
	trailer            http.Header
	pending            []byte
	done               bool
	err                error
	// left is what the declared content-length still promises (-1: none
	// declared). Reaching 0 finishes the body without the read that would
	// only report the stream closed (a host round trip per response).
	left int64
	// closed: a read ahead found the stream closed; the next fill
	// finishes the body.
	closed bool
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if len(b.pending) == 0 && !b.done {
		if b.left == 0 || b.closed {
			b.finish()
		} else if len(p) >= ioChunk {
			// A whole read fits p: the bytes go there, not through pending
			// (one copy fewer).
			if n := b.fill(p); n > 0 {
				return n, nil
			}
		} else {
			b.fill(nil)
		}
	}
	if len(b.pending) > 0 {
		n := copy(p, b.pending)
		b.pending = b.pending[n:]
		return n, nil
	}
	return 0, b.err
}

// WriteTo hands w each read's bytes as they come (io.Copy uses it), without
// the copy into the caller's buffer Read makes.
func (b *bodyReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if len(b.pending) > 0 {
			n, err := w.Write(b.pending)
			total += int64(n)
			b.pending = b.pending[n:]
			if err != nil {
				return total, err
			}
			continue
		}
		if b.done {
			if b.err == io.EOF {
				return total, nil
			}
			return total, b.err
		}
		if b.left == 0 || b.closed {
			b.finish()
			continue
		}
		b.fill(nil)
	}
}

// fill reads the stream once: into dst when it is given (dst holds at
// least ioChunk bytes; what was read there is the result), else into
// pending. Then it reads ahead: a non-blocking read starts the host's next
// file read in the background (and returns no bytes), so that it runs
// while the caller consumes this chunk and the next blocking-read finds it
// done instead of waiting for a thread of the host's.
func (b *bodyReader) fill(dst []byte) int {
	n, ok := b.read(true, dst)
	if !ok {
		b.finish()
		return n
	}
	if b.left != 0 {
		if _, ok := b.read(false, nil); !ok {
			b.closed = true
		}
	}
	return n
}

// read reads the stream once (a blocking or a non-blocking read), into dst
// when it is given, else into pending; false when the stream is closed or
// failed. At most ioChunk bytes a read: all a file stream gives at once
// (asking for 1 MiB had made the kit's realloc, called by the host while
// lowering the bytes, reach an import: a trap, "cannot leave component
// instance").
//
// Into an empty pending the bytes are not copied: pending becomes the
// memory the host lowered them into. The kit lets go of that memory once
// the call is decoded, but it is a Go heap object, and a live slice into it
// keeps it from the collector like any other.
func (b *bodyReader) read(blocking bool, dst []byte) (int, bool) {
	want := ioChunk
	if b.left > 0 && int64(want) > b.left {
		want = int(b.left)
	}
	ok, got := true, 0
	guest.CallImport(12, func(ret uint32) {
		if blocking {
			rawBlockingRead(b.stream, uint64(want), ret)
		} else {
			rawRead(b.stream, uint64(want), ret)
		}
	}, func(ret uint32) {
		m := mem(ret, 12)
		if m[0] == 0 {
			p, n := binary.LittleEndian.Uint32(m[4:]), binary.LittleEndian.Uint32(m[8:])
			data := mem(p, n)
			switch {
			case dst != nil:
				got = copy(dst, data)
			case len(b.pending) == 0:
				b.pending = data
			default:
				b.pending = append(b.pending, data...)
			}
			if b.left > 0 {
				b.left = max(b.left-int64(n), 0)
			}
			return
		}
		if m[4] == 0 {
			rawDropIOError(binary.LittleEndian.Uint32(m[8:]))
		}
		ok = false
	})
	return got, ok
}

func (b *bodyReader) finish() {
	b.done = true
	b.err = io.EOF
	rawDropInput(b.stream)
	ft := rawIncomingFinish(b.body)
	defer rawDropTrailers(ft)
	var ret area
	for {
		rawTrailersGet(ft, ret.ptr())
		if ret.b()[0] != 0 {
			break
		}
		p := rawTrailersSubscribe(ft)
		rawBlock(p)
		rawDropPollable(p)
	}
	switch {
	case ret.b()[8] != 0:
	case ret.b()[16] != 0:
		b.err = errorCodeAt(ret.ptr() + 24)
	case ret.b()[24] != 0:
		for k, vs := range readFields(ret.u32(28), true) {
			b.trailer[k] = vs
		}
	}
	rawDropResponse(b.resp)
}

func (b *bodyReader) Close() error {
	if !b.done {
		b.done = true
		b.err = errors.New("wasi:http: body closed")
		rawDropInput(b.stream)
		rawDropIncomingBody(b.body)
		rawDropResponse(b.resp)
	}
	return nil
}

// client follows no redirects, as the host does not: a 3xx is the answer.
var client = &http.Client{
	Transport:     Transport(),
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Get fetches url with the wasi:http transport, following no redirect.
func Get(url string) (*http.Response, error) { return client.Get(url) }

// Post sends body to url with the wasi:http transport, following no redirect.
func Post(url, contentType string, body io.Reader) (*http.Response, error) {
	return client.Post(url, contentType, body)
}

// mem is n bytes of the component's own linear memory at ptr.
func mem(ptr, n uint32) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), uintptr(ptr))), n)
}

// ptrOf is the address of s's bytes (0 for "").
func ptrOf(s string) uint32 {
	if len(s) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.StringData(s))))
}
