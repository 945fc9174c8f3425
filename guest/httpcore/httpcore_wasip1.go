//go:build wasip1

package httpcore

import (
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strconv"
	"unsafe"

	"github.com/murmur-go/murmur/guest"
)

// The raw imports, lowered per the canonical ABI. This is their one home in
// the kit: guest/wasihttp's Transport is built on Send. Only the imports a
// component calls end up in it, so a component that never makes a request
// does not import wasi:http.

//go:wasmimport wasi:http/types@0.2.12 [constructor]fields
func rawNewFields() uint32

//go:wasmimport wasi:http/types@0.2.12 [static]fields.from-list
func rawFieldsFromList(ptr, n, ret uint32)

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

//go:wasmimport wasi:io/streams@0.2.12 [method]output-stream.blocking-write-and-flush
func rawBlockingWriteAndFlush(s, ptr, n, ret uint32)

//go:wasmimport wasi:io/streams@0.2.12 [method]output-stream.blocking-flush
func rawBlockingFlush(s, ret uint32)

//go:wasmimport wasi:io/streams@0.2.12 [resource-drop]output-stream
func rawDropOutput(s uint32)

//go:wasmimport wasi:io/error@0.2.12 [resource-drop]error
func rawDropIOError(e uint32)

func errorCodeAt(p uint32) *Error { return errorCode(mem(p, 1)[0]) }

// area is an 8-aligned return area on the Go heap, kept alive by the caller.
type area [8]uint64

func (a *area) ptr() uint32 { return uint32(uintptr(unsafe.Pointer(&a[0]))) }
func (a *area) b() []byte   { return unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), 64) }
func (a *area) u32(off int) uint32 {
	return binary.LittleEndian.Uint32(a.b()[off:])
}

// Do sends one request: method ("" is GET) to url (scheme://authority/path?query;
// a fragment is not sent) with header (sent in order, as given) and body (empty:
// none), whose length is sent as content-length. It returns once the
// response's status and headers are in; the caller reads and closes its Body.
func Do(method, url string, header [][2]string, body []byte) (*Response, error) {
	req, err := NewRequest(method, url, header)
	if err != nil {
		return nil, err
	}
	if len(body) > 0 {
		req.Body = &byteReader{b: body}
		req.ContentLength = int64(len(body))
	}
	return req.Send()
}

// byteReader is a body known whole: Send writes its bytes without copying
// them through a buffer.
type byteReader struct{ b []byte }

func (r *byteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// Send sends r and waits for the response's status and headers. The
// request's header fields are checked by the host: a name or value it
// refuses is an error naming the header. A request the host refuses or
// cannot complete is an *Error with its wasi:http error-code.
func (r *Request) Send() (*Response, error) {
	var ret area
	header := r.Header
	if r.ContentLength > 0 {
		header = append(header[:len(header):len(header)], [2]string{"content-length", strconv.FormatInt(r.ContentLength, 10)})
	}
	fields, err := newFields(header, &ret)
	if err != nil {
		return nil, err
	}
	req := rawNewRequest(fields)
	fail := func(what string) (*Response, error) {
		rawDropRequest(req)
		return nil, errors.New("wasi:http: invalid " + what)
	}
	m := r.Method
	if m == "" {
		m = "GET"
	}
	if rawSetMethod(req, methodCase(m), ptrOf(m), uint32(len(m))) != 0 {
		return fail("method " + m)
	}
	s := r.Scheme
	if rawSetScheme(req, 1, schemeCase(s), ptrOf(s), uint32(len(s))) != 0 {
		return fail("scheme " + s)
	}
	if rawSetAuthority(req, 1, ptrOf(r.Authority), uint32(len(r.Authority))) != 0 {
		return fail("authority " + r.Authority)
	}
	path := r.Path
	if path == "" {
		path = "/"
	}
	if rawSetPath(req, 1, ptrOf(path), uint32(len(path))) != 0 {
		return fail("path " + path)
	}
	runtime.KeepAlive(m)
	runtime.KeepAlive(s)
	runtime.KeepAlive(r.Authority)
	runtime.KeepAlive(path)

	rawRequestBody(req, ret.ptr())
	if ret.b()[0] != 0 {
		return fail("body")
	}
	ob := ret.u32(4)
	if r.Body != nil {
		if err := writeBody(ob, r.Body); err != nil {
			rawDropRequest(req)
			return nil, err
		}
	}
	trailers, some := uint32(0), uint32(0)
	if r.Trailer != nil {
		if t := r.Trailer(); len(t) > 0 {
			f, err := newFields(t, &ret)
			if err != nil {
				// A trailer field the host refuses is left out (the
				// request's header fields were checked before it was made).
				f = rawNewFields()
				for _, h := range t {
					appendField(f, h[0], h[1], &ret)
				}
			}
			trailers, some = f, 1
		}
	}
	rawBodyFinish(ob, some, trailers, ret.ptr())
	if ret.b()[0] != 0 {
		rawDropRequest(req)
		return nil, errorCodeAt(ret.ptr() + 8)
	}
	rawHandle(req, 0, 0, ret.ptr())
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
	out := &Response{
		Status:        int(rawStatus(resp)),
		Header:        readFields(rawResponseHeaders(resp)),
		ContentLength: -1,
	}
	if v, ok := out.Get("content-length"); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			out.ContentLength = n
		}
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
	out.Body = &Body{resp: resp, body: body, stream: ret.u32(4), left: out.ContentLength, r: out}
	return out, nil
}

var fieldErrors = [...]string{"invalid-syntax", "forbidden", "immutable"}

// newFields makes a fields handle of fs in one call (fields.from-list). A
// list the host refuses is made again field by field, so that the error
// names the field it refused.
func newFields(fs [][2]string, ret *area) (uint32, error) {
	if len(fs) == 0 {
		return rawNewFields(), nil
	}
	// list<tuple<string, list<u8>>>: (ptr, len) of the name, then of the value.
	flat := make([]uint32, 0, 4*len(fs))
	for _, f := range fs {
		flat = append(flat, ptrOf(f[0]), uint32(len(f[0])), ptrOf(f[1]), uint32(len(f[1])))
	}
	rawFieldsFromList(uint32(uintptr(unsafe.Pointer(&flat[0]))), uint32(len(fs)), ret.ptr())
	runtime.KeepAlive(flat)
	runtime.KeepAlive(fs)
	if ret.b()[0] == 0 {
		return ret.u32(4), nil
	}
	f := rawNewFields()
	for _, h := range fs {
		if err := appendField(f, h[0], h[1], ret); err != nil {
			rawDropFields(f)
			return 0, err
		}
	}
	// Refused as a list, accepted one by one: say what the host said.
	rawDropFields(f)
	return 0, errors.New("wasi:http: header fields refused")
}

// appendField appends one field to a fields handle; the host's header-error
// becomes an error naming the field.
func appendField(f uint32, k, v string, ret *area) error {
	rawFieldsAppend(f, ptrOf(k), uint32(len(k)), ptrOf(v), uint32(len(v)), ret.ptr())
	runtime.KeepAlive(k)
	runtime.KeepAlive(v)
	if ret.b()[0] != 0 {
		return errors.New("wasi:http: header " + strconv.Quote(k) + ": " + fieldErrors[ret.b()[1]%3])
	}
	return nil
}

// ioChunk is the most a wasip2 file stream reads or writes in one call
// (wasmtime's limit); the host's body streams are file streams.
const ioChunk = 64 << 10

// writeBody copies src into the outgoing body through its output-stream, a
// chunk of up to ioChunk bytes a write (blocking-write-and-flush would take
// at most 4096): each write is done by the host in the background while
// the next chunk is read from src, and blocking-flush waits for it. A body
// given whole (Do) is written from its own bytes.
func writeBody(ob uint32, src io.Reader) error {
	var ret area
	rawBodyWrite(ob, ret.ptr())
	if ret.b()[0] != 0 {
		return errors.New("wasi:http: the request body stream is unavailable")
	}
	w := outStream{s: ret.u32(4)}
	defer rawDropOutput(w.s)
	if br, ok := src.(*byteReader); ok {
		if len(br.b) <= blockingWriteMax {
			// One call: the write and its flush.
			err := w.writeAndFlush(br.b)
			br.b = nil
			return err
		}
		if err := w.write(br.b); err != nil {
			return err
		}
		br.b = nil
		return w.flush()
	}
	buf := make([]byte, ioChunk)
	for {
		n, err := src.Read(buf)
		if werr := w.write(buf[:n]); werr != nil {
			return werr
		}
		if err == io.EOF {
			return w.flush()
		}
		if err != nil {
			return err
		}
	}
}

type outStream struct {
	s   uint32
	ret area
}

func (w *outStream) failed(errAt int) error {
	if w.ret.b()[errAt] == 0 {
		rawDropIOError(w.ret.u32(errAt + 4))
	}
	return errors.New("wasi:http: writing the request body failed")
}

func (w *outStream) flush() error {
	rawBlockingFlush(w.s, w.ret.ptr())
	if w.ret.b()[0] != 0 {
		return w.failed(4)
	}
	return nil
}

// blockingWriteMax is the most blocking-write-and-flush takes (wasi:io).
const blockingWriteMax = 4096

func (w *outStream) writeAndFlush(p []byte) error {
	if len(p) == 0 {
		return w.flush()
	}
	rawBlockingWriteAndFlush(w.s, uint32(uintptr(unsafe.Pointer(&p[0]))), uint32(len(p)), w.ret.ptr())
	runtime.KeepAlive(p)
	if w.ret.b()[0] != 0 {
		return w.failed(4)
	}
	return nil
}

// write writes p whole, as fast as the stream's permits allow.
func (w *outStream) write(p []byte) error {
	for len(p) > 0 {
		rawCheckWrite(w.s, w.ret.ptr())
		if w.ret.b()[0] != 0 {
			return w.failed(8)
		}
		room := binary.LittleEndian.Uint64(w.ret.b()[8:])
		if room == 0 {
			// The previous write is still being done: wait for it.
			if err := w.flush(); err != nil {
				return err
			}
			continue
		}
		k := min(uint64(len(p)), room, ioChunk)
		rawWrite(w.s, uint32(uintptr(unsafe.Pointer(&p[0]))), uint32(k), w.ret.ptr())
		runtime.KeepAlive(p)
		if w.ret.b()[0] != 0 {
			return w.failed(4)
		}
		p = p[k:]
	}
	return nil
}

// readFields reads a fields handle's entries and drops the handle.
func readFields(f uint32) [][2]string {
	var h [][2]string
	guest.CallImport(8, func(ret uint32) { rawFieldsEntries(f, ret) }, func(ret uint32) {
		m := mem(ret, 8)
		p, n := binary.LittleEndian.Uint32(m), binary.LittleEndian.Uint32(m[4:])
		h = make([][2]string, 0, n)
		for i := uint32(0); i < n; i++ {
			e := mem(p+i*16, 16)
			kp, kn := binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint32(e[4:])
			vp, vn := binary.LittleEndian.Uint32(e[8:]), binary.LittleEndian.Uint32(e[12:])
			h = append(h, [2]string{string(mem(kp, kn)), string(mem(vp, vn))})
		}
	})
	rawDropFields(f)
	return h
}

// Read reads the body; io.EOF at its end, once the trailers are in. A body
// the host ended early gives the *Error it ended with (for example
// HTTP-response-incomplete).
func (b *Body) Read(p []byte) (int, error) {
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
func (b *Body) WriteTo(w io.Writer) (int64, error) {
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
// pending. Then, when the read was a whole chunk (a large body, more to
// come), it reads ahead: a non-blocking read starts the host's next file
// read in the background (and returns no bytes), so that it runs while the
// caller consumes this chunk and the next blocking-read finds it done
// instead of waiting for a thread of the host's. After a short read (a
// body that comes as the server sends it, such as an event stream) the
// read ahead would mostly find nothing: one host call saved a read.
func (b *Body) fill(dst []byte) int {
	n, ok := b.read(true, dst)
	if !ok {
		b.finish()
		return n
	}
	if b.full && b.left != 0 {
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
func (b *Body) read(blocking bool, dst []byte) (int, bool) {
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
			b.full = blocking && int(n) == want
			return
		}
		if m[4] == 0 {
			rawDropIOError(binary.LittleEndian.Uint32(m[8:]))
		}
		ok = false
	})
	return got, ok
}

func (b *Body) finish() {
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
		b.r.trailer = readFields(ret.u32(28))
	}
	rawDropResponse(b.resp)
}

// Close releases the body; a body closed before its end is dropped unread
// (the host ends the exchange). Reads after Close fail.
func (b *Body) Close() error {
	if !b.done {
		b.done = true
		b.err = errors.New("wasi:http: body closed")
		rawDropInput(b.stream)
		rawDropIncomingBody(b.body)
		rawDropResponse(b.resp)
	}
	return nil
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
