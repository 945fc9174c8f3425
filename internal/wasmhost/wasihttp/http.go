package wasihttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp/h1"
)

// wasi:http, the mechanism. wasmtime 39's C API provides no wasi:http, so
// the host defines wasi:http/types and wasi:http/outgoing-handler in Go and
// answers requests with net/http (see RATIONALE.md): fields, outgoing-request
// and its setters and getters, request-options timeouts, outgoing-body
// (whose write is a real wasip2 output-stream onto a spool file),
// future-incoming-response (subscribe / get), incoming-response,
// incoming-body (stream: a wasip2 input-stream over the spooled body),
// future-trailers. The types are taken from the guest's own imports, so any
// 0.2.x minor version links; variant answers are lowered by case name. A
// request made with nothing else of the run in flight is exchanged on the
// guest's own thread over the caller's kept connections (httpsync.go over
// wasihttp/h1's Exchange: net/http's wire code, our connection); the others
// go through net/http's Transport on a goroutine.
//
// What is allowed is the caller's policy (Grant.Decide), not this
// package's. It enforces the mechanics the policy relies on: no
// redirects followed (the 3xx goes to the guest), no proxy variables read,
// each name resolved once and the resolved address dialled, every request
// bounded by the call (it ends with the call at the latest), the body bound
// and the in-flight bound of the grant. Without Enable the functions fail
// with "capability not granted" like any ungranted import.

// Request is what a guest asked wasi:http to send. A policy may rewrite
// Headers (a stored driver's gateway key swapped in: docs/drivers.md);
// nothing else it changes is used.
type Request struct {
	Method        string // "GET", …, or the other(...) text
	Scheme        string // "http", "https" or other; "" when unset
	Authority     string
	PathWithQuery string
	Headers       [][2]string
}

// URL is the request's target as scheme://authority/path.
func (r Request) URL() string {
	return r.effectiveScheme() + "://" + r.Authority + r.PathWithQuery
}

// Origin is the request's scheme://authority, what a grant names.
func (r Request) Origin() string { return r.effectiveScheme() + "://" + r.Authority }

func (r Request) effectiveScheme() string {
	if r.Scheme == "" {
		return "https"
	}
	return r.Scheme
}

// Grant grants wasi:http. Decide is asked about every request handed to
// outgoing-handler.handle, on the guest's call: nil allows it (possibly with
// rewritten headers), an error denies it (the guest gets
// HTTP-request-denied). A nil Decide denies every request. The bounds must
// be positive (wasi:http has no defaults): MaxBodyBytes bounds a response
// body (the guest reading past it gets HTTP-response-body-size), and
// MaxInFlight the requests one call has outstanding at once (more wait for
// a slot).
//
// Conns is the caller's pool of idle connections, where a request on the
// guest's thread takes one and gives it back: the caller decides how long
// connections outlive a run and closes them (h1.Pool.CloseIdle). nil is
// h1.DefaultPool, the process's; the engine owns no sockets.
//
// Route, when set, is asked first about every request, before Decide: a
// host the caller answers for itself (a virtual address, whose real target
// the guest never sees). nil and no error leaves the request to Decide. A
// Virtual sends the request to Virtual's scheme and authority, its path and
// query kept and Virtual's headers set in place of any the guest gave under
// those names; Decide is not asked. An error refuses it
// (HTTP-request-denied) before any connection.
type Grant struct {
	Route        func(ctx context.Context, req *Request) (*Virtual, error)
	Decide       func(ctx context.Context, req *Request) error
	MaxBodyBytes int64
	MaxInFlight  int
	Conns        *h1.Pool
}

// Virtual is where Grant.Route sends a request.
type Virtual struct {
	Scheme, Authority string
	// Headers replace every header of the same name (case-insensitively).
	Headers [][2]string
}

// apply rewrites req to go where v says.
func (v *Virtual) apply(req *Request) {
	req.Scheme, req.Authority = v.Scheme, v.Authority
	kept := req.Headers[:0:0]
	for _, h := range req.Headers {
		if !slices.ContainsFunc(v.Headers, func(o [2]string) bool { return strings.EqualFold(o[0], h[0]) }) {
			kept = append(kept, h)
		}
	}
	req.Headers = append(kept, v.Headers...)
}

// Enable grants the wasi:http functions described above to the runs of
// h: a component's calls to them go to g.
func Enable(h *wasmhost.Host, g Grant) {
	if g.Decide == nil {
		g.Decide = func(context.Context, *Request) error { return errHTTPDenied }
	}
	h.Provide(ProviderName, &g)
}

var errHTTPDenied = errors.New("outbound HTTP is not granted")

// decide is the grant's verdict on req: Route's, then Decide's.
func (g *Grant) decide(ctx context.Context, req *Request) error {
	if g.Route != nil {
		v, err := g.Route(ctx, req)
		if err != nil {
			return err
		}
		if v != nil {
			v.apply(req)
			return nil
		}
	}
	return g.Decide(ctx, req)
}

// httpRun is the wasi:http state of one run: its body spool, its transport
// and its requests.
type httpRun struct {
	run   *run // the run's view, made at Open
	grant *Grant
	spool *spoolDir
	sem   chan struct{}
	// transport is made on the first request the guest's thread does not
	// take (most runs make none).
	transport     *http.Transport
	transportOnce sync.Once
	wg            sync.WaitGroup
	// stale are streams the host opened early for bodies the guest gave
	// up on; they are dropped at the run's next wasi:http call, where the
	// store is certainly the host's to use (a guest's resource.drop, which
	// gives them up, runs inside wasmtime's own table operation).
	stale []*wasmhost.Resource
	early int // streams made before incoming-body.stream, not yet handed over or given up

	poolMu  sync.Mutex // the pool of body files (see poolFile)
	free    []*poolFile
	pooled  []*poolFile // every pooled file, closed with the run
	inUse   int
	closing []uint32 // pooled files' helper descriptors to close
	// live: the run's wasi:io is Go's (RunConfig.GoIO), so bodies are Go
	// streams (live.go) instead of spool files.
	live bool

	// The synchronous exchange (httpsync.go): the run's own connections,
	// the exchanges in flight (of both kinds), and the one the guest's
	// thread owns, if any.
	conns   *h1.Pool // the grant's (Grant.Conns)
	active  atomic.Int32
	pending *syncEx
	// spin is the head spin's record (h1.Spin); the guest's thread alone
	// uses it.
	spin h1.Spin
}

// newHTTPRun makes a run's wasi:http state; a live one (a run whose
// wasi:io is Go's: a driver's, or a component's without a filesystem) has
// no spool directory: its bodies are in memory
// and on the socket.
func newHTTPRun(g *Grant, live bool) (*httpRun, error) {
	conns := g.Conns
	if conns == nil {
		conns = h1.DefaultPool
	}
	var sp *spoolDir
	if !live {
		var err error
		if sp, err = newSpoolDir(); err != nil {
			return nil, err
		}
	}
	n := g.MaxInFlight
	if n <= 0 {
		n = 1
	}
	return &httpRun{grant: g, spool: sp, sem: make(chan struct{}, n), conns: conns, live: live}, nil
}

func (h *httpRun) close() {
	if p := h.pending; p != nil {
		if p.pull != nil {
			p.pull.abort()
		} else {
			p.abandon()
		}
	}
	h.wg.Wait()
	for _, pf := range h.pooled {
		pf.file.Close()
	}
	if h.transport != nil {
		h.transport.CloseIdleConnections()
	}
	if h.spool != nil {
		os.RemoveAll(h.spool.dir)
	}
}

// Host objects behind the wasi:http resources.

type httpFields struct {
	entries   [][2]string
	immutable bool
}

type httpRequest struct {
	Request
	headers *httpFields
	body    *outBody
}

type outBody struct {
	taken    bool // outgoing-body.write was called
	name     string
	file     *os.File // the body's spool file (unlinked), read from 0 when sent
	mem      *[]byte  // or, in a driver run, the body in memory
	finished chan struct{}
	trailers [][2]string
	aborted  bool
	once     sync.Once
	ex       *syncEx // the synchronous exchange sending it, once handled
}

func (b *outBody) end(abort bool) {
	b.once.Do(func() {
		b.aborted = abort
		if abort && b.file != nil {
			b.file.Close()
		}
		close(b.finished)
	})
}

// drop: an outgoing-body dropped without finish abandons its request.
func (b *outBody) Drop() { b.end(true) }

type requestOptions struct {
	connect, firstByte, betweenBytes time.Duration
}

type httpFuture struct {
	done   chan struct{}
	resp   *incomingResponse
	err    wasmhost.Value // an error-code variant
	taken  bool
	cancel context.CancelFunc
	body   *inBody // the response body's spool, made at handle
	sync   *syncEx // the exchange when the guest's thread does it
}

func (f *httpFuture) Drop() {
	f.sync.abandon()
	select {
	case <-f.done:
		if f.taken {
			return // the response (or the error) is the guest's
		}
	default:
	}
	f.cancel() // the guest gave up on the response
	f.body.release()
}

type incomingResponse struct {
	status   uint16
	headers  *httpFields
	body     *inBody
	consumed bool
}

// drop: a response dropped without consume gives up its body.
func (resp *incomingResponse) Drop() {
	if !resp.consumed {
		resp.body.Drop()
	}
}

// inBody is a response body and its spool file, which the exchange writes
// and the guest reads through a stream (pre) made once the body is whole.
type inBody struct {
	spooled  chan struct{}      // closed when the body is on disk (or failed)
	pre      *wasmhost.Resource // the guest's input-stream, made early; nil once handed over or given up
	err      wasmhost.Value     // error-code ending the body, or nil
	trailers [][2]string
	streamed bool
	cancel   context.CancelFunc
	h        *httpRun

	mu       sync.Mutex // shared by the exchange and the guest's calls
	pf       *poolFile
	done     bool // the exchange is finished with the file
	released bool // the guest is finished with the body

	live *wasmhost.InputStream // a driver run's body: the Go stream it arrives on
}

// poolFile is a body file of the run's spool. A pooled one is used again
// for later bodies (truncated in between): the helper keeps a descriptor
// onto it (desc), from which each body's input-stream is made without an
// open-at, a thread handoff inside wasmtime that cost 50-140 µs of every
// 1 KiB GET. The others (past maxPooled in use at once) are opened by
// name and unlinked once read, as before.
type poolFile struct {
	file   *os.File
	name   string
	desc   uint32
	opened bool // desc is valid
	pooled bool
	dirty  bool // free but not yet emptied
}

// Bounds of the pool: each pooled file in use holds a descriptor in the
// host and one in wasmtime, so bodies past maxPooled (a guest holding many
// responses unread) get one-off files whose host descriptor closes when
// the body is spooled; at most maxFree unused files are kept.
const (
	maxPooled = 64
	maxFree   = 16
	maxEarly  = 16 // streams made before incoming-body.stream, held by the host
)

// spoolFile returns the body's file, taken on first use; nil once the
// exchange is finished without one.
func (b *inBody) spoolFile() (*poolFile, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pf == nil && !b.done {
		pf, err := b.h.takeFile()
		if err != nil {
			return nil, err
		}
		b.pf = pf
	}
	return b.pf, nil
}

// closeFile is the exchange being finished with the file.
func (b *inBody) closeFile() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = true
	if b.pf != nil && !b.pf.pooled {
		b.pf.file.Close() // the name (or the guest's stream) keeps the data
	}
	if b.released {
		b.h.putFile(b.pf)
		b.pf = nil
	}
}

// drop: a body dropped unread ends its exchange and gives up its spool.
func (b *inBody) Drop() {
	if b.live != nil {
		if src, ok := b.live.Source().(*syncBody); ok {
			src.abort()
		}
	}
	b.cancel()
	b.release()
}

// release is the guest being finished with the body: a stream made for it
// and not handed over is dropped at the run's next wasi:http call, and the
// file goes back to the pool once the exchange is finished with it too. A
// guest drops a body's stream before the body (wasi:http's child-resource
// rule); one that kept reading it after finish or drop would read what the
// file holds next, its own next body.
func (b *inBody) release() {
	if b.pre != nil {
		b.h.stale = append(b.h.stale, b.pre)
		b.h.early--
		b.pre = nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.released {
		return
	}
	b.released = true
	if b.done {
		b.h.putFile(b.pf)
		b.pf = nil
	}
}

// openEarly opens the helper's descriptor onto a new pooled file before the
// body is there; it is called where the guest is about to wait for the
// response anyway, so the open-at runs while the exchange waits for the
// server. A failure is left for incoming-body.stream to meet.
func (b *inBody) openEarly(r *run) {
	pf, err := b.spoolFile()
	if err != nil || pf == nil || !pf.pooled || pf.opened {
		return
	}
	if d, err := r.OpenFileDesc(pf.name); err == nil {
		pf.desc, pf.opened = d, true
	}
}

// makeStream makes the guest's input-stream over the whole body (its first
// read started) into pre.
func (b *inBody) makeStream(r *run) error {
	if b.pre != nil {
		return nil
	}
	b.mu.Lock()
	pf := b.pf
	b.mu.Unlock()
	if pf == nil {
		return errors.New("wasmhost: the response body has no spool file")
	}
	var s *wasmhost.Resource
	var err error
	if pf.pooled {
		if !pf.opened {
			d, err := r.OpenFileDesc(pf.name)
			if err != nil {
				return err
			}
			pf.desc, pf.opened = d, true
		}
		s, err = r.DescStream(pf.desc, true)
	} else {
		s, err = r.FileStream(pf.name, false)
		os.Remove(r.http.spool.path(pf.name)) // the guest's stream holds it open
	}
	if err != nil {
		return err
	}
	b.pre = s
	b.h.early++
	return nil
}

// takeFile is a file for a new body: a free pooled one, a new pooled one,
// or past maxPooled in use a one-off.
func (h *httpRun) takeFile() (*poolFile, error) {
	h.poolMu.Lock()
	defer h.poolMu.Unlock()
	for n := len(h.free); n > 0; n = len(h.free) {
		pf := h.free[n-1]
		h.free = h.free[:n-1]
		if pf.dirty && !h.empty(pf) {
			h.discard(pf)
			continue
		}
		pf.dirty = false
		h.inUse++
		return pf, nil
	}
	f, name, err := h.spool.create("resp")
	if err != nil {
		return nil, err
	}
	pf := &poolFile{file: f, name: name}
	if h.inUse < maxPooled {
		pf.pooled = true
		h.inUse++
		h.pooled = append(h.pooled, pf)
	}
	return pf, nil
}

// putFile is a body's file no longer used: a pooled one is emptied and
// kept (or, past maxFree, closed), a one-off removed.
func (h *httpRun) putFile(pf *poolFile) {
	if pf == nil {
		return
	}
	if !pf.pooled {
		os.Remove(h.spool.path(pf.name))
		return
	}
	if st, err := pf.file.Stat(); err == nil && st.Size() > bigTruncate {
		// Freeing a large file's pages takes the kernel a while (1.5 ms
		// for 10 MiB on tmpfs): not on the guest's call, and not held.
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			ok := h.empty(pf)
			h.poolMu.Lock()
			defer h.poolMu.Unlock()
			h.keep(pf, ok)
		}()
		return
	}
	// A small one is emptied when it is next taken, by the exchange (or
	// where the guest waits anyway), not on this call.
	h.poolMu.Lock()
	defer h.poolMu.Unlock()
	pf.dirty = true
	h.keep(pf, true)
}

const bigTruncate = 256 << 10

// empty truncates a pooled file for its next body.
func (h *httpRun) empty(pf *poolFile) bool {
	if pf.file.Truncate(0) != nil {
		return false
	}
	_, err := pf.file.Seek(0, io.SeekStart)
	return err == nil
}

// keep returns a pooled file no body uses to the free list, or past
// maxFree (or unusable) closes it. h.poolMu is held.
func (h *httpRun) keep(pf *poolFile, usable bool) {
	h.inUse--
	if usable && len(h.free) < maxFree {
		h.free = append(h.free, pf)
		return
	}
	h.discard(pf)
}

// discard closes a pooled file for good. h.poolMu is held.
func (h *httpRun) discard(pf *poolFile) {
	pf.file.Close()
	os.Remove(h.spool.path(pf.name))
	if pf.opened {
		h.closing = append(h.closing, pf.desc)
	}
	if i := slices.Index(h.pooled, pf); i >= 0 {
		h.pooled = slices.Delete(h.pooled, i, i+1)
	}
}

// dropStale drops the streams and descriptors given up since the last
// wasi:http call.
func (h *httpRun) dropStale(r *run) {
	if len(h.stale) == 0 {
		h.poolMu.Lock()
		n := len(h.closing)
		h.poolMu.Unlock()
		if n == 0 {
			return
		}
	}
	for _, s := range h.stale {
		r.DropResource(s)
	}
	h.stale = h.stale[:0]
	h.poolMu.Lock()
	closing := h.closing
	h.closing = nil
	h.poolMu.Unlock()
	for _, d := range closing {
		r.CloseFileDesc(d)
	}
}

type futureTrailers struct {
	body  *inBody
	taken bool
}

// funcFor is the provider's function for iface#fn (iface without its
// version), or nil.
func funcFor(iface, fn string) wasmhost.ProviderFunc {
	var impl func(*run, []wasmhost.Value) (wasmhost.Value, error)
	switch iface {
	case "wasi:http/types":
		impl = httpTypes[fn]
	case "wasi:http/outgoing-handler":
		if fn == "handle" {
			impl = httpHandle
		}
	}
	if impl == nil {
		return nil
	}
	return func(v *wasmhost.Run, args []wasmhost.Value) (wasmhost.Value, error) {
		h := v.State().(*httpRun)
		r := h.run
		r.http.dropStale(r)
		_, first := r.Objects()
		val, err := impl(r, args)
		if held, next := r.Objects(); held > maxHostObjects && next > first {
			// Undo what this call made: the guest never sees it.
			r.ForgetFrom(first)
			held, _ = r.Objects()
			return nil, fmt.Errorf("wasi:http %s: the component holds %d wasi:http resources (fields, requests, responses, bodies, futures) it has not dropped; the host allows %d",
				fn, held, maxHostObjects)
		}
		return val, err
	}
}

// maxHostObjects caps the wasi:http resources one run holds at once (each is
// host memory the guest's own limits do not count); a call that would pass
// it traps, naming the cap. A variable so a test can measure without it.
var maxHostObjects = 100_000

// maxFieldsBytes bounds the names and values one fields resource holds (a
// header section); an append or set past it is header-error.invalid-syntax,
// the one header-error a guest library maps to "not acceptable".
const maxFieldsBytes = 1 << 20

func (f *httpFields) size() int {
	n := 0
	for _, e := range f.entries {
		n += len(e[0]) + len(e[1])
	}
	return n
}

func bytesValue(s string) wasmhost.Bytes { return wasmhost.Bytes(s) }

func optString(v wasmhost.Value) (string, bool) {
	if o, ok := v.(wasmhost.Option); ok && o.Some {
		s, _ := o.Value.(string)
		return s, true
	}
	return "", false
}

func optDuration(v wasmhost.Value) time.Duration {
	if o, ok := v.(wasmhost.Option); ok && o.Some {
		if d, ok := o.Value.(uint64); ok && d < 1<<63 {
			return time.Duration(d)
		}
	}
	return 0
}

func durationValue(d time.Duration) wasmhost.Value {
	if d == 0 {
		return wasmhost.None
	}
	return wasmhost.Some(uint64(d))
}

var okUnit = wasmhost.Ok(nil)

func errCode(c string) wasmhost.Variant { return wasmhost.Variant{Case: c} }

func internalError(msg string) wasmhost.Variant {
	return wasmhost.Variant{Case: "internal-error", Value: wasmhost.Some(msg)}
}

func headerErr(c string) wasmhost.Result { return wasmhost.Err(wasmhost.Variant{Case: c}) }

func objAs[T any](r *run, v wasmhost.Value) T {
	var zero T
	o, ok := r.Object(v)
	if !ok {
		return zero
	}
	t, _ := o.(T)
	return t
}

// setField changes f under a fields setter's rules.
func fieldsChange(r *run, a []wasmhost.Value, change func(f *httpFields, name string) wasmhost.Result) (wasmhost.Value, error) {
	f := objAs[*httpFields](r, a[0])
	if f == nil {
		return nil, errors.New("wasi:http: not a fields handle of this host")
	}
	name, _ := a[1].(string)
	if f.immutable {
		return headerErr("immutable"), nil
	}
	if !h1.ValidFieldName(name) {
		return headerErr("invalid-syntax"), nil
	}
	if h1.ForbiddenField(name) {
		return headerErr("forbidden"), nil
	}
	return change(f, name), nil
}

func (f *httpFields) remove(name string) {
	kept := f.entries[:0]
	for _, e := range f.entries {
		if !strings.EqualFold(e[0], name) {
			kept = append(kept, e)
		}
	}
	f.entries = kept
}

var httpTypes = map[string]func(*run, []wasmhost.Value) (wasmhost.Value, error){
	"[constructor]fields": func(r *run, _ []wasmhost.Value) (wasmhost.Value, error) {
		return r.NewObject(&httpFields{}), nil
	},
	"[static]fields.from-list": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		if ptr, n, ok := listArg(a, 0); ok {
			return fieldsFromListPtr(r, ptr, n)
		}
		f := &httpFields{}
		l, _ := a[0].(wasmhost.List)
		total := 0
		for _, e := range l {
			t, ok := e.(wasmhost.Tuple)
			if !ok || len(t) != 2 {
				return headerErr("invalid-syntax"), nil
			}
			name, _ := t[0].(string)
			val := wasmhost.BytesOf(t[1])
			if !h1.ValidFieldName(name) || !h1.ValidFieldValue(val) {
				return headerErr("invalid-syntax"), nil
			}
			if h1.ForbiddenField(name) {
				return headerErr("forbidden"), nil
			}
			f.entries = append(f.entries, [2]string{name, val})
			if total += len(name) + len(val); total > maxFieldsBytes {
				return headerErr("invalid-syntax"), nil
			}
		}
		return wasmhost.Ok(r.NewObject(f)), nil
	},
	"[method]fields.get": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		out := wasmhost.List{}
		if f := objAs[*httpFields](r, a[0]); f != nil {
			name, _ := a[1].(string)
			for _, e := range f.entries {
				if strings.EqualFold(e[0], name) {
					out = append(out, bytesValue(e[1]))
				}
			}
		}
		return out, nil
	},
	"[method]fields.has": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		if f := objAs[*httpFields](r, a[0]); f != nil {
			name, _ := a[1].(string)
			for _, e := range f.entries {
				if strings.EqualFold(e[0], name) {
					return true, nil
				}
			}
		}
		return false, nil
	},
	"[method]fields.set": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		return fieldsChange(r, a, func(f *httpFields, name string) wasmhost.Result {
			if ptr, n, ok := listArg(a, 2); ok {
				return fieldsSetPtr(r, f, name, ptr, n)
			}
			vals, _ := a[2].(wasmhost.List)
			var add [][2]string
			n := f.size()
			for _, v := range vals {
				s := wasmhost.BytesOf(v)
				n += len(name) + len(s)
				if !h1.ValidFieldValue(s) || n > maxFieldsBytes {
					return headerErr("invalid-syntax")
				}
				add = append(add, [2]string{name, s})
			}
			f.remove(name)
			f.entries = append(f.entries, add...)
			return okUnit
		})
	},
	"[method]fields.delete": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		return fieldsChange(r, a, func(f *httpFields, name string) wasmhost.Result {
			f.remove(name)
			return okUnit
		})
	},
	"[method]fields.append": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		return fieldsChange(r, a, func(f *httpFields, name string) wasmhost.Result {
			if ptr, n, ok := listArg(a, 2); ok {
				return fieldsAppendPtr(r, f, name, ptr, n)
			}
			s := wasmhost.BytesOf(a[2])
			if !h1.ValidFieldValue(s) || f.size()+len(name)+len(s) > maxFieldsBytes {
				return headerErr("invalid-syntax")
			}
			f.entries = append(f.entries, [2]string{name, s})
			return okUnit
		})
	},
	"[method]fields.entries": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		out := wasmhost.List{}
		if f := objAs[*httpFields](r, a[0]); f != nil {
			for _, e := range f.entries {
				out = append(out, wasmhost.Tuple{e[0], bytesValue(e[1])})
			}
		}
		return out, nil
	},
	"[method]fields.clone": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		c := &httpFields{}
		if f := objAs[*httpFields](r, a[0]); f != nil {
			c.entries = append(c.entries, f.entries...)
		}
		return r.NewObject(c), nil
	},
	"[constructor]outgoing-request": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		req := &httpRequest{Request: Request{Method: "GET"}, headers: &httpFields{}}
		if f := objAs[*httpFields](r, a[0]); f != nil {
			req.headers = f
		}
		return r.NewObject(req), nil
	},
	"[method]outgoing-request.body": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		req := objAs[*httpRequest](r, a[0])
		if req == nil || req.body != nil {
			return wasmhost.Err(nil), nil
		}
		req.body = &outBody{finished: make(chan struct{})}
		return wasmhost.Ok(r.NewObject(req.body)), nil
	},
	"[method]outgoing-request.method": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		m := "GET"
		if req := objAs[*httpRequest](r, a[0]); req != nil {
			m = req.Method
		}
		switch m {
		case "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH":
			return wasmhost.Variant{Case: strings.ToLower(m)}, nil
		}
		return wasmhost.Variant{Case: "other", Value: m}, nil
	},
	"[method]outgoing-request.set-method": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		req := objAs[*httpRequest](r, a[0])
		v, _ := a[1].(wasmhost.Variant)
		m := strings.ToUpper(v.Case)
		if v.Case == "other" {
			m, _ = v.Value.(string)
		}
		if req == nil || !h1.ValidToken(m) {
			return wasmhost.Err(nil), nil
		}
		req.Method = m
		return okUnit, nil
	},
	"[method]outgoing-request.scheme": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		req := objAs[*httpRequest](r, a[0])
		if req == nil || req.Scheme == "" {
			return wasmhost.None, nil
		}
		switch req.Scheme {
		case "http":
			return wasmhost.Some(wasmhost.Variant{Case: "HTTP"}), nil
		case "https":
			return wasmhost.Some(wasmhost.Variant{Case: "HTTPS"}), nil
		}
		return wasmhost.Some(wasmhost.Variant{Case: "other", Value: req.Scheme}), nil
	},
	"[method]outgoing-request.set-scheme": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		req := objAs[*httpRequest](r, a[0])
		if req == nil {
			return wasmhost.Err(nil), nil
		}
		s := ""
		if o, ok := a[1].(wasmhost.Option); ok && o.Some {
			v, _ := o.Value.(wasmhost.Variant)
			s = strings.ToLower(v.Case)
			if v.Case == "other" {
				s, _ = v.Value.(string)
				if !h1.ValidScheme(s) {
					return wasmhost.Err(nil), nil
				}
			}
		}
		req.Scheme = s
		return okUnit, nil
	},
	"[method]outgoing-request.authority": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		if req := objAs[*httpRequest](r, a[0]); req != nil && req.Authority != "" {
			return wasmhost.Some(req.Authority), nil
		}
		return wasmhost.None, nil
	},
	"[method]outgoing-request.set-authority": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		req := objAs[*httpRequest](r, a[0])
		s, _ := optString(a[1])
		if req == nil || (s != "" && !h1.ValidAuthority(s)) {
			return wasmhost.Err(nil), nil
		}
		req.Authority = s
		return okUnit, nil
	},
	"[method]outgoing-request.path-with-query": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		if req := objAs[*httpRequest](r, a[0]); req != nil && req.PathWithQuery != "" {
			return wasmhost.Some(req.PathWithQuery), nil
		}
		return wasmhost.None, nil
	},
	"[method]outgoing-request.set-path-with-query": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		req := objAs[*httpRequest](r, a[0])
		s, _ := optString(a[1])
		if req == nil || (s != "" && !h1.ValidPath(s)) {
			return wasmhost.Err(nil), nil
		}
		req.PathWithQuery = s
		return okUnit, nil
	},
	"[method]outgoing-request.headers": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		// A child handle onto the request's own headers.
		if req := objAs[*httpRequest](r, a[0]); req != nil {
			return r.NewObject(req.headers), nil
		}
		return r.NewObject(&httpFields{immutable: true}), nil
	},
	"[method]outgoing-body.write": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		if r.http.live {
			return r.liveBodyWrite(a)
		}
		b := objAs[*outBody](r, a[0])
		if b == nil || b.taken {
			return wasmhost.Err(nil), nil
		}
		f, name, err := r.http.spool.create("req")
		if err != nil {
			return nil, fmt.Errorf("wasi:http outgoing-body.write: %w", err)
		}
		s, err := r.FileStream(name, true)
		// The guest's stream and f both hold the file: it needs no name now.
		os.Remove(r.http.spool.path(name))
		if err != nil {
			f.Close()
			return nil, err
		}
		b.taken, b.name, b.file = true, name, f
		return wasmhost.Ok(s), nil
	},
	"[static]outgoing-body.finish": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		b := objAs[*outBody](r, a[0])
		if b == nil {
			return wasmhost.Err(internalError("not an outgoing-body of this host")), nil
		}
		if o, ok := a[1].(wasmhost.Option); ok && o.Some {
			if t := objAs[*httpFields](r, o.Value); t != nil {
				b.trailers = append(b.trailers, t.entries...)
			}
		}
		b.end(false)
		if b.ex.onGuestThread() && !b.ex.x.Written {
			b.ex.write() // the request waited for its body
		}
		return okUnit, nil
	},
	"[constructor]request-options": func(r *run, _ []wasmhost.Value) (wasmhost.Value, error) {
		return r.NewObject(&requestOptions{}), nil
	},
	"[method]request-options.connect-timeout":        optGetter(func(o *requestOptions) *time.Duration { return &o.connect }),
	"[method]request-options.set-connect-timeout":    optSetter(func(o *requestOptions) *time.Duration { return &o.connect }),
	"[method]request-options.first-byte-timeout":     optGetter(func(o *requestOptions) *time.Duration { return &o.firstByte }),
	"[method]request-options.set-first-byte-timeout": optSetter(func(o *requestOptions) *time.Duration { return &o.firstByte }),
	"[method]request-options.between-bytes-timeout":  optGetter(func(o *requestOptions) *time.Duration { return &o.betweenBytes }),
	"[method]request-options.set-between-bytes-timeout": optSetter(func(o *requestOptions) *time.Duration {
		return &o.betweenBytes
	}),
	"[method]future-incoming-response.subscribe": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		if r.http.live {
			return r.liveFutureSubscribe(a)
		}
		if f := objAs[*httpFuture](r, a[0]); f != nil {
			if !f.taken {
				f.body.openEarly(r)
			}
			f.sync.completeOnThread()
			if err := r.awaitHTTP(f.done, "[method]future-incoming-response.subscribe"); err != nil {
				return nil, err
			}
			if r.Cancelled() {
				return nil, wasmhost.ErrCallEnded
			}
			select {
			case <-f.done:
				b := f.body
				if f.resp != nil && !f.taken && b.h.early < maxEarly {
					select {
					case <-b.spooled:
						// A small body is whole when the head is
						// announced: its stream's first read can run while
						// the guest reads the head.
						if err := b.makeStream(r); err != nil {
							return nil, err
						}
					default:
					}
				}
			default:
			}
		}
		return r.ReadyWASIPollable()
	},
	"[method]future-incoming-response.get": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		f := objAs[*httpFuture](r, a[0])
		if f == nil {
			return wasmhost.None, nil
		}
		if f.sync.onGuestThread() && f.sync.headReady() {
			f.sync.completeOnThread() // a guest polling get must see progress
			if r.Cancelled() {
				return nil, wasmhost.ErrCallEnded
			}
			if !r.Deadline().IsZero() && !time.Now().Before(r.Deadline()) {
				return nil, &wasmhost.DeadlineError{Waiting: true, Call: "wasi:http/types#[method]future-incoming-response.get"}
			}
		}
		select {
		case <-f.done:
		default:
			return wasmhost.None, nil
		}
		if f.taken {
			return wasmhost.Some(wasmhost.Err(nil)), nil
		}
		f.taken = true
		if f.err != nil {
			f.body.release()
			return wasmhost.Some(wasmhost.Ok(wasmhost.Err(f.err))), nil
		}
		return wasmhost.Some(wasmhost.Ok(wasmhost.Ok(r.NewObject(f.resp)))), nil
	},
	"[method]incoming-response.status": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		if resp := objAs[*incomingResponse](r, a[0]); resp != nil {
			return resp.status, nil
		}
		return uint16(0), nil
	},
	"[method]incoming-response.headers": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		if resp := objAs[*incomingResponse](r, a[0]); resp != nil {
			return r.NewObject(resp.headers), nil
		}
		return r.NewObject(&httpFields{immutable: true}), nil
	},
	"[method]incoming-response.consume": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		resp := objAs[*incomingResponse](r, a[0])
		if resp == nil || resp.consumed {
			return wasmhost.Err(nil), nil
		}
		resp.consumed = true
		return wasmhost.Ok(r.NewObject(resp.body)), nil
	},
	"[method]incoming-body.stream": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		if r.http.live {
			return r.liveBodyStream(a)
		}
		b := objAs[*inBody](r, a[0])
		if b == nil || b.streamed {
			return wasmhost.Err(nil), nil
		}
		b.streamed = true
		if err := r.awaitHTTP(b.spooled, "[method]incoming-body.stream"); err != nil {
			return nil, err
		}
		if r.Cancelled() {
			return nil, wasmhost.ErrCallEnded
		}
		select {
		case <-b.spooled:
		default:
			// The call's context ended first: the body never arrived.
			return wasmhost.Err(nil), nil
		}
		if err := b.makeStream(r); err != nil {
			return nil, err
		}
		s := b.pre
		b.pre = nil
		b.h.early--
		return wasmhost.Ok(s), nil
	},
	"[static]incoming-body.finish": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		b := objAs[*inBody](r, a[0])
		if r.http.live {
			if err := r.liveBodyFinish(b); err != nil {
				return nil, err
			}
		}
		if b == nil {
			b = &inBody{spooled: make(chan struct{}), err: internalError("not an incoming-body of this host"), h: r.http}
			close(b.spooled)
		}
		b.release() // its stream is dropped (or was never taken): the spool is done with
		return r.NewObject(&futureTrailers{body: b}), nil
	},
	"[method]future-trailers.subscribe": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		if r.http.live {
			return r.liveTrailersSubscribe(a)
		}
		if f := objAs[*futureTrailers](r, a[0]); f != nil {
			if err := r.awaitHTTP(f.body.spooled, "[method]future-trailers.subscribe"); err != nil {
				return nil, err
			}
		}
		return r.ReadyWASIPollable()
	},
	"[method]future-trailers.get": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		f := objAs[*futureTrailers](r, a[0])
		if f == nil {
			return wasmhost.None, nil
		}
		select {
		case <-f.body.spooled:
		default:
			return wasmhost.None, nil
		}
		if f.taken {
			return wasmhost.Some(wasmhost.Err(nil)), nil
		}
		f.taken = true
		if f.body.err != nil {
			return wasmhost.Some(wasmhost.Ok(wasmhost.Err(f.body.err))), nil
		}
		if len(f.body.trailers) == 0 {
			return wasmhost.Some(wasmhost.Ok(wasmhost.Ok(wasmhost.None))), nil
		}
		return wasmhost.Some(wasmhost.Ok(wasmhost.Ok(wasmhost.Some(r.NewObject(&httpFields{entries: f.body.trailers, immutable: true}))))), nil
	},
	"http-error-code": func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		if r.http.live {
			return r.liveHTTPErrorCode(a)
		}
		// The io-error is wasip2's; nothing of ours to read from it.
		return wasmhost.None, nil
	},
}

func optGetter(field func(*requestOptions) *time.Duration) func(*run, []wasmhost.Value) (wasmhost.Value, error) {
	return func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		if o := objAs[*requestOptions](r, a[0]); o != nil {
			return durationValue(*field(o)), nil
		}
		return wasmhost.None, nil
	}
}

func optSetter(field func(*requestOptions) *time.Duration) func(*run, []wasmhost.Value) (wasmhost.Value, error) {
	return func(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
		if o := objAs[*requestOptions](r, a[0]); o != nil {
			*field(o) = optDuration(a[1])
		}
		return okUnit, nil
	}
}

// awaitHTTP blocks the guest in the wasi:http function fn until ch is
// closed or its call ends. Blocking here rather than in a pollable keeps the
// guest's pollable a plain ready wasip2 one (only wasip2 can mint
// pollables); the guest only subscribes when it is about to wait anyway.
// It waits up to the deadline plus the grace (Run.WaitEnd); woken past the
// call's deadline it gives up with a waiting DeadlineError naming
// fn, even if ch closed meanwhile (a request ends at the same deadline):
// nothing the guest did after it would run, and the ending should say what
// the guest was waiting for. A call cancelled before its deadline returns
// nil; the cancellation ends the call.
func (r *run) awaitHTTP(ch <-chan struct{}, fn string) error {
	var deadline <-chan time.Time
	if end := r.WaitEnd(); !end.IsZero() {
		t := time.NewTimer(time.Until(end))
		defer t.Stop()
		deadline = t.C
	}
	select {
	case <-ch:
	case <-r.Context().Done():
	case <-deadline:
	}
	if !r.Deadline().IsZero() && !time.Now().Before(r.Deadline()) {
		return &wasmhost.DeadlineError{Waiting: true, Call: "wasi:http/types#" + fn}
	}
	return nil
}

func httpHandle(r *run, a []wasmhost.Value) (wasmhost.Value, error) {
	req := objAs[*httpRequest](r, a[0])
	if req == nil {
		return nil, errors.New("wasi:http handle: not a request made by this host")
	}
	var opts requestOptions
	if o, ok := a[1].(wasmhost.Option); ok && o.Some {
		if ro := objAs[*requestOptions](r, o.Value); ro != nil {
			opts = *ro
		}
	}
	send := req.Request
	send.Headers = append([][2]string(nil), req.headers.entries...)
	if code := checkRequest(send); code != nil {
		return wasmhost.Err(*code), nil
	}
	g := r.http.grant
	if err := g.decide(r.Context(), &send); err != nil {
		return wasmhost.Err(errCode("HTTP-request-denied")), nil
	}
	if g.MaxBodyBytes <= 0 || g.MaxInFlight <= 0 {
		return wasmhost.Err(internalError("murmur: the wasi:http grant has no bounds")), nil
	}
	if r.http.syncEligible(send) {
		f := r.http.startSync(r, send, req.body, opts)
		if !r.Deadline().IsZero() && !time.Now().Before(r.Deadline()) {
			// The deadline passed as the request was dialled or written
			// (a server reading a large body slowly): the guest was
			// waiting here.
			f.sync.abandon()
			return nil, &wasmhost.DeadlineError{Waiting: true, Call: "wasi:http/outgoing-handler#handle"}
		}
		return wasmhost.Ok(r.NewObject(f)), nil
	}
	if p := r.http.pending; p != nil {
		p.toAsync() // a second request outstanding: both must progress
	}
	ctx, cancel := context.WithDeadline(r.Context(), r.WaitEnd())
	in := &inBody{spooled: make(chan struct{}), cancel: cancel, h: r.http}
	f := &httpFuture{done: make(chan struct{}), cancel: cancel, body: in}
	r.http.wg.Add(1)
	r.http.active.Add(1)
	go func() {
		defer r.http.wg.Done()
		defer r.http.active.Add(-1)
		r.http.exchange(ctx, cancel, send, req.body, opts, f)
	}()
	return wasmhost.Ok(r.NewObject(f)), nil
}

// smallBody is the largest declared content-length spooled before the
// future is done: the guest is woken once, with the body whole (so its first
// read can be started at once), instead of meeting a second wait in
// incoming-body.stream. One read's worth (wasmtime reads at most 64 KiB).
const smallBody = 64 << 10

// exchange sends one request and spools its response into f.body; f is done
// when the response head (or the request's error) is there — for a body of
// at most smallBody declared bytes, when the body is also on disk — and
// the body's spooled channel when the body is on disk.
func (h *httpRun) exchange(ctx context.Context, cancel context.CancelFunc, send Request, body *outBody, opts requestOptions, f *httpFuture) {
	in := f.body
	fail := func(code wasmhost.Value) {
		in.closeFile()
		in.err = code
		close(in.spooled)
		f.err = code
		close(f.done)
		cancel()
	}
	if body != nil {
		select {
		case <-body.finished:
		case <-ctx.Done():
			fail(codeOf(ctx, ctx.Err()))
			return
		}
		if body.aborted {
			fail(internalError("murmur: the outgoing-body was dropped without finish"))
			return
		}
	}
	select {
	case h.sem <- struct{}{}:
	case <-ctx.Done():
		fail(codeOf(ctx, ctx.Err()))
		return
	}
	defer func() { <-h.sem }()

	hreq, code := buildRequest(ctx, send, body)
	if code != nil {
		fail(*code)
		return
	}
	if opts.connect > 0 {
		hreq = hreq.WithContext(h1.WithConnectTimeout(hreq.Context(), opts.connect))
	}
	var firstByte *time.Timer
	if opts.firstByte > 0 {
		rctx, rcancel := context.WithCancelCause(hreq.Context())
		defer rcancel(nil)
		firstByte = time.AfterFunc(opts.firstByte, func() { rcancel(h1.ErrFirstByteTimeout) })
		hreq = hreq.WithContext(rctx)
	}
	h.transportOnce.Do(func() { h.transport = h1.NewTransport() })
	resp, err := h.transport.RoundTrip(hreq)
	if firstByte != nil {
		firstByte.Stop()
	}
	// The transport closes the request body itself, once it has written it:
	// a server may answer before that (the fake provider decodes its JSON
	// and answers while the transport still reads the body file for its
	// closing check), and closing the file here then failed the write, which
	// closed the connection under the response body being read ("use of
	// closed network connection", HTTP-protocol-error to the guest, about
	// one driver turn in 300 under load).
	if err != nil {
		fail(codeOf(hreq.Context(), err))
		return
	}
	defer resp.Body.Close()
	if resp.ContentLength > h.grant.MaxBodyBytes {
		fail(wasmhost.Variant{Case: "HTTP-response-body-size", Value: wasmhost.Some(uint64(resp.ContentLength))})
		return
	}
	if h.live {
		h.streamLive(ctx, cancel, resp, opts, f)
		return
	}
	pf, err := in.spoolFile()
	if err != nil || pf == nil {
		fail(internalError(fmt.Sprintf("murmur: spooling the response: %v", err)))
		return
	}
	f.resp = &incomingResponse{status: uint16(resp.StatusCode), headers: fieldsOf(resp.Header, true), body: in}
	small := resp.ContentLength >= 0 && resp.ContentLength <= smallBody
	if !small {
		close(f.done)
	}
	in.err = spoolBody(ctx, resp, pf.file, h.grant.MaxBodyBytes, opts.betweenBytes, cancel)
	in.closeFile()
	if in.err == nil {
		in.trailers = fieldsOf(resp.Trailer, true).entries
	}
	close(in.spooled)
	if small {
		close(f.done)
	}
}

// spoolBufs are spoolBody's copy buffers (allocating and zeroing 256 KiB
// for every response showed up in a 1 KiB GET's profile).
var spoolBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// spoolBody copies the response body to out, at most max bytes.
func spoolBody(ctx context.Context, resp *http.Response, out *os.File, max int64, between time.Duration, cancel context.CancelFunc) wasmhost.Value {
	bp := spoolBufs.Get().(*[]byte)
	defer spoolBufs.Put(bp)
	return readBody(ctx, resp, *bp, max, between, cancel, func(b []byte) wasmhost.Value {
		if _, err := out.Write(b); err != nil {
			return internalError("murmur: spooling the response: " + err.Error())
		}
		return nil
	})
}

// readBody reads a response body through buf into sink, at most max bytes
// (the part within max is still handed over before HTTP-response-body-size).
// The between-bytes timeout counts only the time spent waiting on the server:
// it is stopped while sink runs (a live stream's sink waits for the guest).
// It answers the error-code ending the body, or nil at its end; a sink's
// non-nil answer ends it too.
func readBody(ctx context.Context, resp *http.Response, buf []byte, max int64, between time.Duration, cancel context.CancelFunc, sink func([]byte) wasmhost.Value) wasmhost.Value {
	return readBodyTo(ctx, resp, buf, max, between, cancel, sink, nil, nil)
}

// readBodyTo is readBody (h1.ReadBody) with the failure mapping code (nil:
// codeOf) and eof set when the body was read to its clean end.
func readBodyTo(ctx context.Context, resp *http.Response, buf []byte, max int64, between time.Duration, cancel context.CancelFunc, sink func([]byte) wasmhost.Value, code func(error) wasmhost.Value, eof *bool) wasmhost.Value {
	if code == nil {
		code = func(err error) wasmhost.Value { return codeOf(ctx, err) }
	}
	done, err := h1.ReadBody(resp, buf, max, between, cancel, func(b []byte) error {
		if v := sink(b); v != nil {
			return sinkCode{v}
		}
		return nil
	})
	if eof != nil && done {
		*eof = true
	}
	var sc sinkCode
	var big *h1.TooLargeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &sc):
		return sc.v
	case errors.As(err, &big):
		return wasmhost.Variant{Case: "HTTP-response-body-size", Value: wasmhost.Some(big.N)}
	case err == h1.ErrBetweenBytes:
		// The timer's: what the read saw was the cancel it caused.
		return errCode("connection-read-timeout")
	}
	return code(err)
}

// sinkCode carries a sink's error-code out of h1.ReadBody.
type sinkCode struct{ v wasmhost.Value }

func (e sinkCode) Error() string { return "wasi:http: the body's reader stopped" }

func buildRequest(ctx context.Context, send Request, body *outBody) (*http.Request, *wasmhost.Variant) {
	scheme := send.effectiveScheme()
	if scheme != "http" && scheme != "https" {
		v := errCode("HTTP-protocol-error")
		return nil, &v
	}
	path := send.PathWithQuery
	if path == "" {
		path = "/"
	}
	u, err := url.Parse(scheme + "://" + send.Authority + path)
	if err != nil || u.Host == "" {
		v := errCode("HTTP-request-URI-invalid")
		return nil, &v
	}
	hreq := (&http.Request{
		Method:     send.Method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     http.Header{},
		Host:       send.Authority,
	}).WithContext(ctx)
	declared := int64(-1)
	for _, e := range send.Headers {
		if strings.EqualFold(e[0], "content-length") {
			n, err := strconv.ParseInt(strings.TrimSpace(e[1]), 10, 64)
			if err != nil || n < 0 {
				v := errCode("HTTP-request-header-size")
				return nil, &v
			}
			declared = n
			continue
		}
		hreq.Header.Add(e[0], e[1])
	}
	if body == nil || !body.taken {
		if declared > 0 {
			v := wasmhost.Variant{Case: "HTTP-request-body-size", Value: wasmhost.Some(uint64(0))}
			return nil, &v
		}
		if body != nil && len(body.trailers) > 0 {
			hreq.Body = http.NoBody
			hreq.ContentLength = -1
			hreq.TransferEncoding = []string{"chunked"}
			hreq.Trailer = fieldsHeader(body.trailers)
		}
		return hreq, nil
	}
	if body.mem != nil {
		return memRequest(hreq, body, declared)
	}
	file := body.file
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		file.Close()
		v := internalError("murmur: reading the request body: " + err.Error())
		return nil, &v
	}
	st, err := file.Stat()
	if err != nil {
		file.Close()
		v := internalError("murmur: reading the request body: " + err.Error())
		return nil, &v
	}
	if declared >= 0 && declared != st.Size() {
		file.Close()
		v := wasmhost.Variant{Case: "HTTP-request-body-size", Value: wasmhost.Some(uint64(st.Size()))}
		return nil, &v
	}
	hreq.Body = readCloser{file}
	hreq.ContentLength = -1 // chunked unless the guest declared a length
	if declared >= 0 {
		hreq.ContentLength = declared
		if declared == 0 {
			hreq.Body = http.NoBody
			file.Close()
		}
	}
	if len(body.trailers) > 0 {
		hreq.Trailer = fieldsHeader(body.trailers)
		hreq.ContentLength = -1
	}
	return hreq, nil
}

// memRequest gives hreq a driver run's in-memory body.
func memRequest(hreq *http.Request, body *outBody, declared int64) (*http.Request, *wasmhost.Variant) {
	p := *body.mem
	if declared >= 0 && declared != int64(len(p)) {
		v := wasmhost.Variant{Case: "HTTP-request-body-size", Value: wasmhost.Some(uint64(len(p)))}
		return nil, &v
	}
	hreq.Body = io.NopCloser(bytes.NewReader(p))
	hreq.ContentLength = -1 // chunked unless the guest declared a length
	if declared >= 0 {
		hreq.ContentLength = declared
		if declared == 0 {
			hreq.Body = http.NoBody
		}
	}
	if len(body.trailers) > 0 {
		hreq.Trailer = fieldsHeader(body.trailers)
		hreq.ContentLength = -1
	}
	return hreq, nil
}

// readCloser hides the *os.File so net/http does not sniff its size.
type readCloser struct{ f *os.File }

func (r readCloser) Read(p []byte) (int, error) { return r.f.Read(p) }
func (r readCloser) Close() error               { return r.f.Close() }

func fieldsHeader(entries [][2]string) http.Header {
	h := http.Header{}
	for _, e := range entries {
		h.Add(e[0], e[1])
	}
	return h
}

// fieldsOf turns a net/http header into fields with lower-case names, in
// sorted order (net/http keeps no order).
func fieldsOf(h http.Header, immutable bool) *httpFields {
	f := &httpFields{immutable: immutable}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			f.entries = append(f.entries, [2]string{strings.ToLower(k), v})
		}
	}
	return f
}

// checkRequest is the validity of a request at handle (the setters refuse
// the rest): an authority is required.
func checkRequest(req Request) *wasmhost.Variant {
	if req.Authority == "" {
		v := errCode("HTTP-request-URI-invalid")
		return &v
	}
	return nil
}
