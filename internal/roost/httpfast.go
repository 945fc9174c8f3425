package roost

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// fastServer serves the daemon's connections. The plain requests its
// clients send — GET or POST, HTTP/1.1, a Host, at most a Content-Length,
// a Content-Type, the two token headers and a few harmless ones, a body
// within MaxBodyBytes — are parsed on the connection's goroutine, handed
// to the same Server.ServeHTTP on a Request and a ResponseWriter the
// connection reuses, and answered with the bytes net/http would have
// written (TestFastPathMatchesNetHTTP holds them side by side). Anything
// else — another method or protocol version, any other header, a header
// given twice, an escape in the path, a chunked or oversized body, a
// malformed request — hands the connection, with the bytes already read
// put back in front, to net/http for the rest of its life, so every
// answer outside the plain case is still net/http's own.
//
// Why: under load net/http costs a mur-roost request about as much CPU as
// the referee and the loopback syscalls together, and two goroutine
// hand-offs of its own (the background read that watches for the client
// going away, started and then stopped on every request). On 2 shared
// cores those hand-offs are where a request waits; the daemon's answers
// are small and its clients hold keep-alive connections, so the plain case
// is almost every request.
//
// What a handler may assume on the fast path, beyond the http.Handler
// contract: the Request and ResponseWriter are reused by the connection's
// next request, so neither may be kept once ServeHTTP returns (nor used
// from another goroutine after it); the body is read into memory before
// ServeHTTP runs; r.Context() is never cancelled (not when the client goes
// away, not at shutdown); no Hijacker, Flusher or Pusher is offered; and the
// answer may be held until ServeHTTP returns. The
// daemon's handlers assume nothing more, and run unchanged under net/http
// when the fast path is off (MURMUR_ROOST_FASTPATH=0, read at start).
type fastServer struct {
	hs       *http.Server // the fallback; its timeouts are the fast path's too
	h        http.Handler
	handoff  *handoffListener
	handoffs atomic.Int64 // connections given to net/http, for tests
	inFlight sync.WaitGroup

	closing atomic.Bool
	mu      sync.Mutex // guards ln and conns
	ln      net.Listener
	conns   map[*fastConn]struct{}

	date atomic.Pointer[dateLine]
}

func newFastServer(hs *http.Server) *fastServer {
	return &fastServer{hs: hs, h: hs.Handler, conns: map[*fastConn]struct{}{},
		handoff: &handoffListener{c: make(chan net.Conn), done: make(chan struct{})}}
}

// Serve accepts connections on ln until Shutdown, as http.Server.Serve
// does, backing off the same way on a temporary accept error (EMFILE).
func (s *fastServer) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.ln = ln
	s.handoff.addr = ln.Addr()
	s.mu.Unlock()
	go s.hs.Serve(s.handoff)
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.isClosing() {
				return http.ErrServerClosed
			}
			if transientAccept(err) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		fc := &fastConn{s: s, c: c, start: time.Now()}
		if !s.track(fc) {
			c.Close()
			return http.ErrServerClosed
		}
		go fc.serve()
	}
}

func (s *fastServer) isClosing() bool { return s.closing.Load() }

func (s *fastServer) track(fc *fastConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return false
	}
	s.conns[fc] = struct{}{}
	s.inFlight.Add(1)
	return true
}

func (s *fastServer) untrack(fc *fastConn) {
	s.mu.Lock()
	delete(s.conns, fc)
	s.mu.Unlock()
	s.inFlight.Done()
}

// Shutdown stops accepting, closes the fast path's idle connections (a busy
// one closes after its answer), waits for them until ctx ends, then shuts
// net/http's side down the same way.
func (s *fastServer) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing.Store(true)
	if s.ln != nil {
		s.ln.Close()
	}
	for fc := range s.conns {
		fc.closeIfIdle()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.inFlight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return s.hs.Shutdown(ctx)
}

// dateLine is the Date header for one second, as net/http writes it.
type dateLine struct {
	sec  int64
	line []byte
}

func (s *fastServer) dateHeader(now time.Time) []byte {
	sec := now.Unix()
	if d := s.date.Load(); d != nil && d.sec == sec {
		return d.line
	}
	b := append([]byte("Date: "), now.UTC().Format(http.TimeFormat)...)
	b = append(b, "\r\n"...)
	s.date.Store(&dateLine{sec: sec, line: b})
	return b
}

// ---- one connection ------------------------------------------------------------

// fastConn is one client connection on the fast path. Its Request,
// header maps, body reader and buffers are reused from request to request.
type fastConn struct {
	s *fastServer
	c net.Conn

	buf       []byte // bytes read and not yet consumed
	out       []byte
	idle      atomic.Bool // waiting for a request's first byte
	start     time.Time   // when the connection was accepted
	served    int         // requests answered on this connection
	afterPOST bool        // the last of them was a POST

	readDeadline, writeDeadline time.Time

	req    http.Request
	remote string // c.RemoteAddr(), as req.RemoteAddr
	url    url.URL
	body   bytes.Reader
	rw     fastWriter
	hdr    http.Header
	vals   [8][1]string
}

// deadlineSlack is how stale a deadline may be before it is set again: a
// deadline costs a timer update, so the fast path keeps one a second
// rather than one a request (an idle or slow client is cut off up to this
// much later than net/http would).
const deadlineSlack = time.Second

func (fc *fastConn) closeIfIdle() {
	if fc.idle.Load() {
		fc.c.Close()
	}
}

func (fc *fastConn) serve() {
	handedOff := false
	defer func() {
		if !handedOff {
			fc.c.Close()
		}
		fc.s.untrack(fc)
	}()
	defer func() {
		if err := recover(); err != nil && err != http.ErrAbortHandler {
			// What net/http does with a handler's panic: log it, drop
			// the connection.
			const size = 64 << 10
			buf := make([]byte, size)
			buf = buf[:runtime.Stack(buf, false)]
			log.Printf("http: panic serving %v: %v\n%s", fc.c.RemoteAddr(), err, buf)
		}
	}()
	fc.buf = make([]byte, 0, 2048)
	// What net/http gives a handler of the connection, once per connection:
	// POST /register learns the registering process from both ends.
	fc.remote = fc.c.RemoteAddr().String()
	fc.req = *(&http.Request{}).WithContext(context.WithValue(context.Background(), http.LocalAddrContextKey, fc.c.LocalAddr()))
	fc.hdr = make(http.Header, 4)
	fc.rw.h = make(http.Header, 4)
	for {
		if fc.s.isClosing() && len(fc.buf) == 0 {
			return
		}
		n, ok, err := fc.readRequest()
		if err != nil {
			return // the client went away or stalled: net/http closes silently too
		}
		if !ok {
			handedOff = fc.handOff()
			return
		}
		fc.answer()
		fc.served++
		fc.afterPOST = fc.req.Method == http.MethodPost
		if err := fc.write(); err != nil {
			return
		}
		fc.buf = fc.buf[:copy(fc.buf, fc.buf[n:])]
	}
}

// handOff gives the connection and its unread bytes to net/http.
func (fc *fastConn) handOff() bool {
	fc.s.handoffs.Add(1)
	pc := &prefixConn{Conn: fc.c, prefix: fc.buf}
	fc.c.SetDeadline(time.Time{}) // net/http sets its own
	select {
	case fc.s.handoff.c <- pc:
		return true
	case <-fc.s.handoff.done:
		return false
	}
}

// readRequest reads until fc.buf holds one whole request and parses it
// into fc.req. It returns the request's length in fc.buf, and ok false
// when the request is not a plain one (handed to net/http untouched). An
// error is a connection to drop.
func (fc *fastConn) readRequest() (n int, ok bool, err error) {
	var firstByte time.Time
	if fc.served == 0 {
		// net/http counts a connection's first request from the moment
		// it took the connection: one that sends nothing is cut off by the
		// header timeout, not kept for the idle one.
		firstByte = fc.start
		if err := fc.setReadDeadline(fc.start.Add(fc.s.hs.ReadHeaderTimeout), true); err != nil {
			return 0, false, err
		}
	}
	headerDone := false
	// Between requests net/http reads nothing until 4 bytes have come (its
	// Peek(4)), and after a POST it then drops any CR or LF among them (RFC
	// 7230 §3's tolerance); on a connection's first request it does neither.
	peeked := fc.served == 0
	eof := false
	for {
		if !peeked && len(fc.buf) >= 4 {
			peeked = true
			if fc.afterPOST {
				k := 0
				for k < 4 && (fc.buf[k] == '\r' || fc.buf[k] == '\n') {
					k++
				}
				fc.buf = fc.buf[:copy(fc.buf, fc.buf[k:])]
			}
		}
		if len(fc.buf) > 0 && peeked {
			end := bytes.Index(fc.buf, crlfcrlf)
			if end < 0 && (len(fc.buf) > fc.s.maxHeaderBytes() || bareLF(fc.buf)) {
				// Too long, or lines ended by LF alone, which net/http
				// reads and this path does not: net/http answers.
				return 0, false, nil
			}
			if end >= fc.s.maxHeaderBytes() {
				return 0, false, nil
			}
			if end >= 0 {
				hlen := end + 4
				cl, ok := fc.parseHead(fc.buf[:hlen])
				if !ok {
					return 0, false, nil
				}
				if len(fc.buf) >= hlen+cl {
					fc.body.Reset(fc.buf[hlen : hlen+cl])
					return hlen + cl, true, nil
				}
				if !headerDone && !firstByte.IsZero() {
					// The body has the whole request's limit.
					headerDone = true
					if err := fc.setReadDeadline(firstByte.Add(fc.s.hs.ReadTimeout), true); err != nil {
						return 0, false, err
					}
				}
			}
			if firstByte.IsZero() {
				// A request in more than one read: from here on the
				// header, then the whole request, has net/http's time
				// limit, counted from the request's first read.
				firstByte = time.Now()
				limit := fc.s.hs.ReadHeaderTimeout
				if end >= 0 {
					headerDone, limit = true, fc.s.hs.ReadTimeout
				}
				if err := fc.setReadDeadline(firstByte.Add(limit), true); err != nil {
					return 0, false, err
				}
			}
		} else if len(fc.buf) == 0 && !eof {
			fc.idle.Store(true)
			if fc.s.isClosing() {
				return 0, false, net.ErrClosed
			}
			if fc.served > 0 { // the first request keeps its header deadline
				if err := fc.setReadDeadline(time.Now().Add(fc.s.hs.IdleTimeout), false); err != nil {
					return 0, false, err
				}
			}
		}
		if eof {
			// A request cut short is net/http's to answer, except an EOF
			// before the 4 bytes it waits for between requests: it closes
			// without a word.
			if len(fc.buf) > 0 && peeked {
				return 0, false, nil
			}
			return 0, false, io.EOF
		}
		if len(fc.buf) == cap(fc.buf) {
			fc.buf = slices.Grow(fc.buf, cap(fc.buf))
		}
		m, err := fc.c.Read(fc.buf[len(fc.buf):cap(fc.buf)])
		fc.idle.Store(false)
		fc.buf = fc.buf[:len(fc.buf)+m]
		if errors.Is(err, io.EOF) {
			eof = true // what is buffered is decided once more
		} else if err != nil {
			return 0, false, err
		}
	}
}

func (fc *fastConn) setReadDeadline(t time.Time, exact bool) error {
	if !exact && !fc.readDeadline.IsZero() && t.Sub(fc.readDeadline) < deadlineSlack {
		return nil
	}
	fc.readDeadline = t
	if exact {
		// The next idle wait sets a fresh one.
		fc.readDeadline = time.Time{}
	}
	return fc.c.SetReadDeadline(t)
}

func (s *fastServer) maxHeaderBytes() int { return s.hs.MaxHeaderBytes }

var crlfcrlf = []byte("\r\n\r\n")

// bareLF reports whether b holds a line feed without its carriage return.
func bareLF(b []byte) bool {
	for i := bytes.IndexByte(b, '\n'); i >= 0; {
		if i == 0 || b[i-1] != '\r' {
			return true
		}
		j := bytes.IndexByte(b[i+1:], '\n')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// parseHead parses a request line and header block (ending in the blank
// line) into fc.req, and returns the Content-Length. ok is false for
// anything but the plain case.
func (fc *fastConn) parseHead(head []byte) (contentLength int, ok bool) {
	line, rest, _ := bytes.Cut(head, crlf)
	method, line, ok1 := bytes.Cut(line, sp)
	target, proto, ok2 := bytes.Cut(line, sp)
	if !ok1 || !ok2 || string(proto) != "HTTP/1.1" {
		return 0, false
	}
	switch string(method) {
	case http.MethodGet:
		fc.req.Method = http.MethodGet
	case http.MethodPost:
		fc.req.Method = http.MethodPost
	default:
		return 0, false
	}
	if len(target) == 0 || target[0] != '/' || !plainPath(target) {
		return 0, false
	}
	clear(fc.hdr)
	var host []byte
	haveHost, haveLength := false, false
	contentLength = 0
	nv := 0
	for len(rest) > 2 { // the final "\r\n"
		var h []byte
		h, rest, _ = bytes.Cut(rest, crlf)
		name, value, found := bytes.Cut(h, colon)
		if !found || len(name) == 0 || !tokenBytes(name) {
			return 0, false
		}
		value = bytes.Trim(value, " \t")
		if !plainValue(value) {
			return 0, false
		}
		switch key := canonicalKnown(name); key {
		case "Host":
			if haveHost || len(value) == 0 || !plainHost(value) {
				return 0, false
			}
			haveHost, host = true, value
		case "Content-Length":
			if haveLength || len(value) == 0 || len(value) > 6 || !digits(value) {
				return 0, false
			}
			haveLength = true
			contentLength, _ = strconv.Atoi(string(value))
			if contentLength > MaxBodyBytes {
				return 0, false
			}
		case HeaderCredential, HeaderApproval, "Content-Type", "User-Agent", "Accept", "Accept-Encoding":
			if _, twice := fc.hdr[key]; twice || nv == len(fc.vals)-1 {
				return 0, false
			}
			v := &fc.vals[nv]
			nv++
			if string(v[0]) != string(value) { // a connection sends the same token again and again
				v[0] = string(value)
			}
			fc.hdr[key] = v[:]
		default:
			return 0, false
		}
	}
	if !haveHost {
		return 0, false
	}
	if haveLength {
		fc.hdr["Content-Length"] = fc.lengthValue(contentLength)
	}
	if string(target) != fc.req.RequestURI { // the same path again is no new string
		fc.req.RequestURI = string(target)
	}
	fc.url = url.URL{Path: fc.req.RequestURI}
	if string(host) != fc.req.Host {
		fc.req.Host = string(host)
	}
	fc.req.URL = &fc.url
	fc.req.Proto, fc.req.ProtoMajor, fc.req.ProtoMinor = "HTTP/1.1", 1, 1
	fc.req.Header = fc.hdr
	fc.req.ContentLength = int64(contentLength)
	fc.req.Body = fastBody{&fc.body}
	fc.req.RemoteAddr = fc.remote
	return contentLength, true
}

// lengthValue is the Content-Length header's value slice (the last of
// fc.vals, which the other headers leave free).
func (fc *fastConn) lengthValue(n int) []string {
	v := &fc.vals[len(fc.vals)-1]
	if s := strconv.Itoa(n); v[0] != s {
		v[0] = s
	}
	return v[:]
}

var (
	crlf  = []byte("\r\n")
	sp    = []byte(" ")
	colon = []byte(":")
)

// canonicalKnown is the canonical spelling of a header name the fast path
// understands, or "".
func canonicalKnown(name []byte) string {
	for _, k := range knownHeaders {
		if len(k) == len(name) && bytes.EqualFold([]byte(k), name) {
			return k
		}
	}
	return ""
}

var knownHeaders = []string{"Host", "Content-Length", "Content-Type", HeaderCredential, HeaderApproval, "User-Agent", "Accept", "Accept-Encoding"}

// plainPath: visible ASCII with no escape, query or fragment, so the path
// is the target as net/http would unescape it.
func plainPath(p []byte) bool {
	for _, c := range p {
		if c <= ' ' || c >= 0x7f || c == '%' || c == '?' || c == '#' {
			return false
		}
	}
	return true
}

func plainHost(h []byte) bool {
	for _, c := range h {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == ':', c == '[', c == ']', c == '_':
		default:
			return false
		}
	}
	return true
}

func plainValue(v []byte) bool {
	for _, c := range v {
		if (c < ' ' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

func tokenBytes(b []byte) bool {
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

func digits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// answer runs the handler on fc.req and lays the answer out in fc.out as
// net/http writes it: status line, the handler's headers sorted by name,
// Date, Content-Length, the body.
func (fc *fastConn) answer() {
	w := &fc.rw
	w.reset()
	fc.s.h.ServeHTTP(w, &fc.req)
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	b := append(fc.out[:0], "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(w.code), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(w.code)...)
	b = append(b, "\r\n"...)
	var keys [8]string
	ks := keys[:0]
	for k := range w.h {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	for _, k := range ks {
		for _, v := range w.h[k] {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	b = append(b, fc.s.dateHeader(time.Now())...)
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(len(w.body)), 10)
	b = append(b, "\r\n\r\n"...)
	b = append(b, w.body...)
	fc.out = b
}

func (fc *fastConn) write() error {
	if now := time.Now(); fc.writeDeadline.Sub(now) < fc.s.hs.WriteTimeout-deadlineSlack {
		fc.writeDeadline = now.Add(fc.s.hs.WriteTimeout)
		if err := fc.c.SetWriteDeadline(fc.writeDeadline); err != nil {
			return err
		}
	}
	_, err := fc.c.Write(fc.out)
	return err
}

// fastBody is the request body: the bytes already read.
type fastBody struct{ *bytes.Reader }

func (fastBody) Close() error { return nil }

// fastWriter is the ResponseWriter of the fast path: it keeps the status,
// the headers and the body for answer to lay out.
type fastWriter struct {
	h     http.Header
	code  int
	wrote bool
	body  []byte
}

func (w *fastWriter) reset() {
	clear(w.h)
	w.code, w.wrote, w.body = 0, false, w.body[:0]
}

func (w *fastWriter) Header() http.Header { return w.h }

func (w *fastWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
}

func (w *fastWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	w.body = append(w.body, p...)
	return len(p), nil
}

// ---- the hand-off to net/http ------------------------------------------------------

// handoffListener is the listener net/http serves: it yields the
// connections the fast path gave up on.
type handoffListener struct {
	c    chan net.Conn
	done chan struct{}
	once sync.Once
	addr net.Addr
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.c:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// prefixConn reads the bytes the fast path already took before the rest of
// the connection.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// transientAccept reports whether an accept error is one that passes (the
// errnos syscall.Errno.Temporary names: out of descriptors, an interrupted
// call, a timeout), so Serve retries with
// backoff as net/http's Serve does instead of ending the daemon's server.
// Spelled out because net.Error.Temporary is deprecated.
func transientAccept(err error) bool {
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.EINTR, syscall.EAGAIN, syscall.ETIMEDOUT} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// envFastPath turns the fast path off when set to 0 at the daemon's start:
// every connection is then served by net/http alone.
const envFastPath = "MURMUR_ROOST_FASTPATH"
