package wasihttp

import (
	"io"

	"errors"
	"net/http"
	"time"

	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp/h1"
)

// A live run's exchange on the guest's thread (a run whose wasi:io is Go's,
// RunConfig.GoIO; RATIONALE.md, "Go-streams bodies on the guest's thread").
// The request body is held in memory (a driver has no filesystem, and the
// grant bounds the body), the request written at handle or finish and the
// head read where the guest waits, as for a capsule. The response body is
// then read from the socket by the guest's own input-stream calls: read and
// blocking-read read what the socket has, and the stream's pollable is
// ready when bytes are buffered or the socket is readable, a wait on it
// sleeping in ppoll(2) on the socket (waitAny). No goroutine carries the
// body, so a turn's body costs no scheduler wake-ups.
//
// Where that does not fit, the rest of the body is handed to a goroutine
// that pushes it into the same stream (pumpLive): the guest making a second
// request while the body is unread (both must progress), dropping the
// stream before the body's end (the trailers are still to come), https
// (crypto/tls keeps decrypted bytes a poll of the socket cannot see), or an
// exchange already on a goroutine.

// syncBody is a response body the guest's thread reads from the socket.
type syncBody struct {
	ex   *syncEx
	s    *wasmhost.InputStream
	resp *http.Response
	n    int64 // bytes handed to the guest
	// waitFrom is when the guest began waiting on the server with nothing
	// buffered: the between-bytes timeout counts from there, so time the
	// guest spends on its own work between reads is not charged to the
	// server.
	waitFrom time.Time
}

// liveReadChunk is the most one read from the socket hands the guest.
const liveReadChunk = 32 << 10

// startLive gives the guest the response at its head, with the body as a
// Go input-stream.
func (ex *syncEx) startLive(resp *http.Response) {
	f, in := ex.f, ex.f.body
	s := wasmhost.NewInputStream(liveBodyBuffer, liveReadCall)
	in.live = s
	ex.resp = resp
	f.resp = &incomingResponse{status: uint16(resp.StatusCode), headers: fieldsOf(resp.Header, true), body: in}
	if ex.async {
		close(f.done)
		ex.pumpLive()
		return
	}
	b := &syncBody{ex: ex, s: s, resp: resp}
	ex.pull = b
	s.SetSource(b)
	close(f.done)
	if ex.x.Conn.TLS() {
		b.toAsync()
	}
	// ex stays the run's pending exchange: a second request hands the body
	// to a goroutine (toAsync).
}

// toAsync hands the rest of the body to a goroutine. Called on the guest's
// thread.
func (b *syncBody) toAsync() {
	ex := b.ex
	if ex.pull != b || ex.ended {
		return
	}
	ex.pull = nil
	b.s.SetSource(nil)
	ex.async = true
	if ex.h.pending == ex {
		ex.h.pending = nil
	}
	ex.x.Conn.HandToPoller()
	ex.h.wg.Add(1)
	go func() {
		defer ex.h.wg.Done()
		ex.pumpLive()
	}()
}

// abort ends the body on the guest's thread with the exchange cancelled:
// the body or the run given up before the body's end.
func (b *syncBody) abort() {
	if b.ex.pull != b {
		return
	}
	b.ex.x.Conn.Kill()
	b.finish(internalError("murmur: the request was cancelled"), false)
}

// pumpLive pushes the rest of the body into the guest's stream as it
// arrives (on a goroutine), as the transport's streamLive does; the
// between-bytes timeout counts only time spent waiting on the server.
func (ex *syncEx) pumpLive() {
	s, in, resp := ex.f.body.live, ex.f.body, ex.resp
	ex.x.Conn.Limit(ex.deadline, 0, nil)
	eof := false
	buf := make([]byte, liveReadChunk)
	in.err = readBodyTo(ex.ctx, resp, buf, ex.h.grant.MaxBodyBytes, ex.opts.betweenBytes, ex.cancel, func(p []byte) wasmhost.Value {
		if !s.Push(p, ex.ctx.Done()) {
			return ex.code(h1.ErrKilled)
		}
		return nil
	}, ex.code, &eof)
	ex.endLive(eof)
}

// endLive closes the body (in.err set) and ends the exchange, giving the
// connection back if the body was read to its end and neither side asked
// to close.
func (ex *syncEx) endLive(eof bool) {
	in, resp := ex.f.body, ex.resp
	if eof {
		resp.Body.Close()
	}
	if in.err == nil {
		in.trailers = fieldsOf(resp.Trailer, true).entries
	}
	// The connection goes back (and the slot is freed) before the guest
	// learns the body ended: its next request then finds both.
	ex.end(eof && in.err == nil && !resp.Close && !ex.x.Req.Close)
	in.live.Finish(in.err)
	close(in.spooled)
}

func (b *syncBody) finish(code wasmhost.Value, eof bool) {
	ex := b.ex
	ex.pull = nil
	b.s.SetSource(nil)
	ex.f.body.err = code
	ex.endLive(eof)
}

// limitAt is when the wait for the body's next bytes gives up: the nearer
// of the call's deadline and the between-bytes timeout from waitFrom.
func (b *syncBody) limitAt() (time.Time, error) {
	at, why := b.ex.deadline, h1.ErrCallDeadline
	if bt := b.ex.opts.betweenBytes; bt > 0 && !b.waitFrom.IsZero() {
		if t := b.waitFrom.Add(bt); at.IsZero() || t.Before(at) {
			at, why = t, h1.ErrBetweenBytes
		}
	}
	return at, why
}

// ready reports whether a read would not wait on the server: bytes are
// buffered, the socket is readable (or hung up), or the limit has passed
// (the read then fails at once).
func (b *syncBody) ready() bool {
	c := b.ex.x.Conn
	if c.Reader().Buffered() > 0 {
		return true
	}
	if b.resp.Body == http.NoBody || (b.resp.ContentLength >= 0 && b.n >= b.resp.ContentLength) {
		// The body's end is known without the socket: an empty body (204,
		// content-length 0) or all its bytes handed. A read then ends the
		// stream at once; the socket has nothing more to say.
		return true
	}
	if b.waitFrom.IsZero() {
		b.waitFrom = time.Now()
	}
	if at, _ := b.limitAt(); !at.IsZero() && !time.Now().Before(at) {
		return true
	}
	return c.Readable()
}

// fill reads what the socket has (at most n bytes) into the stream, or
// ends the stream at the body's end or failure. It reads only when ready,
// so a non-blocking read does not wait on the server (except to complete
// a chunk's framing already begun).
func (b *syncBody) fill(n uint64) {
	if n == 0 || !b.ready() {
		return
	}
	c := b.ex.x.Conn
	at, why := b.limitAt()
	c.Limit(time.Time{}, 0, nil)
	c.Until(at, why)
	k := min(n, liveReadChunk)
	p := make([]byte, k)
	m, err := b.resp.Body.Read(p)
	if m > 0 {
		max := b.ex.h.grant.MaxBodyBytes
		if b.n+int64(m) > max {
			b.push(p[:max-b.n])
			b.finish(wasmhost.Variant{Case: "HTTP-response-body-size", Value: wasmhost.Some(uint64(b.n + int64(m)))}, false)
			return
		}
		b.n += int64(m)
		b.waitFrom = time.Time{}
		b.push(p[:m])
	}
	if err == nil {
		return
	}
	if errors.Is(err, io.EOF) {
		b.finish(nil, true)
		return
	}
	b.finish(b.ex.code(err), false)
}

func (b *syncBody) push(p []byte) { b.s.Append(p) }

// The stream's source (wasmhost.InputSource): the guest's thread reads
// the body from the socket.

// Ready reports whether a read would not wait on the server.
func (b *syncBody) Ready() bool { return b.ready() }

// LimitAt is when the wait for the body's next bytes gives up.
func (b *syncBody) LimitAt() time.Time {
	at, _ := b.limitAt()
	return at
}

// Fill reads what the socket has (at most n bytes) into the stream.
func (b *syncBody) Fill(n uint64) { b.fill(n) }

// ToAsync hands the rest of the body to a goroutine.
func (b *syncBody) ToAsync() { b.toAsync() }

// FD is the socket the body is read from, or -1.
func (b *syncBody) FD() int {
	if c := b.ex.x.Conn; c != nil {
		return c.FD()
	}
	return -1
}
