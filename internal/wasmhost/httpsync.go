package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/murmur-go/murmur/internal/wasmhost/wasihttp/h1"
)

// syncEx is an exchange the guest's own thread does (RATIONALE.md, "The
// exchange on the guest's thread"): the request is written in handle (or at
// outgoing-body.finish, if its body was not finished at handle), and the
// response head read where the guest first waits for it (the future's
// subscribe, or a get that finds the head arriving), on a connection of
// the run's pool, with no goroutine in between. A body of at most
// smallBody declared bytes is read there too; a larger or chunked one is
// spooled by a goroutine, as the transport's exchange does.
//
// Where it does not fit, the exchange is handed to a goroutine (async),
// which runs the same steps: the guest making a second request while this
// one is outstanding (both must progress), or waiting for the response
// before it finished the request's body. Only the guest's thread decides
// (handle, subscribe, finish and drop all run on it); once async the
// goroutine alone touches the connection.
type syncEx struct {
	h        *httpRun
	ctx      context.Context
	cancel   context.CancelFunc
	send     HTTPRequest
	body     *outBody
	opts     requestOptions
	f        *httpFuture
	deadline time.Time // the call's deadline plus the grace (run.waitEnd)

	hreq      *http.Request
	target    *h1.Target
	c         *h1.Conn
	stopKill  func() bool
	written   bool
	writtenAt time.Time
	async     bool
	ended     bool
	// A driver run's response (httpsynclive.go): its body, and pull while
	// the guest's thread reads it from the socket.
	resp *http.Response
	pull *syncBody
}

// syncExchanges enables the synchronous exchange; tests turn it off to
// hold the transport's exchange to the same checks.
var syncExchanges = true

// syncEligible reports whether a request can take the synchronous path:
// a capsule's (spool) run with nothing else in flight.
func (h *httpRun) syncEligible(send HTTPRequest) bool {
	if h.active.Load() != 0 || !syncExchanges {
		return false
	}
	s := send.effectiveScheme()
	return s == "http" || s == "https"
}

// startSync begins a synchronous exchange in handle: it takes an in-flight
// slot and writes the request if its body is finished (or it has none).
func (h *httpRun) startSync(r *run, send HTTPRequest, body *outBody, opts requestOptions) *httpFuture {
	ctx, cancel := context.WithCancel(r.ctx())
	in := &inBody{spooled: make(chan struct{}), cancel: cancel, h: h}
	f := &httpFuture{done: make(chan struct{}), cancel: cancel, body: in}
	ex := &syncEx{h: h, ctx: ctx, cancel: cancel, send: send, body: body, opts: opts, f: f, deadline: r.waitEnd()}
	f.sync = ex
	if body != nil {
		body.ex = ex
	}
	h.active.Add(1)
	h.sem <- struct{}{} // free: nothing else is in flight
	h.pending = ex
	if body == nil || body.isFinished() {
		ex.write()
	}
	return f
}

func (b *outBody) isFinished() bool {
	select {
	case <-b.finished:
		return true
	default:
		return false
	}
}

// toAsync hands the exchange to a goroutine. Called on the guest's thread.
func (ex *syncEx) toAsync() {
	if ex.pull != nil {
		ex.pull.toAsync()
		return
	}
	if ex.async || ex.ended {
		return
	}
	ex.async = true
	if ex.h.pending == ex {
		ex.h.pending = nil
	}
	ex.h.wg.Add(1)
	go func() {
		defer ex.h.wg.Done()
		ex.complete()
	}()
}

// onGuestThread reports whether the guest's thread still owns ex.
func (ex *syncEx) onGuestThread() bool { return ex != nil && !ex.async && !ex.ended }

// fail ends the exchange with an error-code before a response.
func (ex *syncEx) fail(code Value) {
	in := ex.f.body
	in.closeFile()
	in.err = code
	close(in.spooled)
	ex.f.err = code
	close(ex.f.done)
	ex.end(false)
}

// end gives the connection back (reuse: the response was read to its end
// and neither side asked to close) or closes it, and frees the slot.
func (ex *syncEx) end(reuse bool) {
	if ex.ended {
		return
	}
	ex.ended = true
	if !ex.async && ex.h.pending == ex {
		ex.h.pending = nil // (an async one was taken off by toAsync, on the guest's thread)
	}
	if c := ex.c; c != nil {
		ex.c = nil
		if ex.stopKill != nil && !ex.stopKill() {
			reuse = false // cancelled: kill has run or is running
		}
		if reuse {
			c.Limit(time.Time{}, 0, nil)
			ex.h.conns.Put(c)
		} else {
			c.Close()
		}
	}
	ex.cancel()
	<-ex.h.sem
	ex.h.active.Add(-1)
}

// abandon is the guest giving the exchange up (its future dropped, the run
// closing) while its thread owns it.
func (ex *syncEx) abandon() {
	if !ex.onGuestThread() || ex.pull != nil {
		return // (a body being read belongs to the response now)
	}
	select {
	case <-ex.f.done:
		ex.end(false)
	default:
		ex.fail(internalError("murmur: the request was cancelled"))
	}
}

// conn takes a pooled connection to the request's origin at an address
// its name resolved to, or dials one. The name is resolved once per
// request (a retry on a new connection dials the same addresses).
func (ex *syncEx) conn(fresh bool) error {
	if ex.target == nil {
		t, err := h1.Resolve(ex.ctx, ex.send.effectiveScheme(), ex.send.Authority, ex.opts.connect, ex.deadline)
		if err != nil {
			return err
		}
		ex.target = t
	}
	var c *h1.Conn
	if !fresh {
		for _, a := range ex.target.Addrs() {
			if c = ex.h.conns.Get(ex.target.Key(a)); c != nil {
				break
			}
		}
	}
	if c == nil {
		var err error
		c, err = h1.Dial(ex.ctx, ex.target, ex.opts.connect, ex.deadline)
		if err != nil {
			return err
		}
	}
	c.ResetRead()
	ex.c = c
	ex.stopKill = context.AfterFunc(ex.ctx, c.Kill)
	return nil
}

// dropConn closes the exchange's connection (a failed or refused one).
func (ex *syncEx) dropConn() {
	if ex.c == nil {
		return
	}
	ex.stopKill()
	ex.c.Close()
	ex.c = nil
}

// write sends the request; a failure fails the future.
func (ex *syncEx) write() {
	if ex.body != nil && ex.body.aborted {
		ex.fail(internalError("murmur: the outgoing-body was dropped without finish"))
		return
	}
	for attempt := 0; ; attempt++ {
		// Built for each attempt: a replayed in-memory body is read again.
		hreq, code := buildRequest(ex.ctx, ex.send, ex.body)
		if code != nil {
			ex.fail(*code)
			return
		}
		ex.hreq = hreq
		if err := ex.conn(attempt > 0); err != nil {
			ex.fail(ex.code(err))
			return
		}
		err := ex.writeOnce()
		if err == nil {
			break
		}
		retry := ex.c.Reused() && attempt == 0 && ex.replayable()
		ex.dropConn()
		if !retry {
			ex.fail(ex.code(err))
			return
		}
	}
	ex.written, ex.writtenAt = true, time.Now()
}

func (ex *syncEx) writeOnce() error {
	ex.c.Limit(ex.deadline, 0, nil)
	if err := ex.hreq.Write(ex.c.Writer()); err != nil {
		return err
	}
	return ex.c.Writer().Flush()
}

// replayable: the request can be sent again on a new connection after a
// reused one turned out closed (net/http's rule: an idempotent method, or
// an idempotency key, and no body of the guest's from a file, which is
// read once).
func (ex *syncEx) replayable() bool {
	if ex.body != nil && ex.body.taken && ex.body.mem == nil {
		return false
	}
	switch ex.send.Method {
	case "GET", "HEAD", "OPTIONS", "TRACE":
		return true
	}
	for _, e := range ex.send.Headers {
		if strings.EqualFold(e[0], "idempotency-key") || strings.EqualFold(e[0], "x-idempotency-key") {
			return true
		}
	}
	return false
}

// code maps a connection failure to the error-code a guest expects.
func (ex *syncEx) code(err error) Value {
	switch {
	case errors.Is(err, h1.ErrKilled):
		if context.Cause(ex.ctx) == context.DeadlineExceeded {
			return errCode("HTTP-response-timeout")
		}
		return internalError("murmur: the request was cancelled")
	case errors.Is(err, h1.ErrCallDeadline):
		return errCode("HTTP-response-timeout")
	case errors.Is(err, h1.ErrFirstByteTimeout), errors.Is(err, h1.ErrBetweenBytes):
		return errCode("connection-read-timeout")
	}
	return codeOf(ex.ctx, err)
}

// headReady reports whether the response head has started to arrive (a
// get can then read it without waiting on the server), or a limit on it
// has passed.
func (ex *syncEx) headReady() bool {
	if !ex.written || ex.c == nil || ex.resp != nil {
		return false
	}
	// A limit that has passed is ready too: readHead then ends at once.
	now := time.Now()
	if !ex.deadline.IsZero() && !now.Before(ex.deadline) ||
		ex.opts.firstByte > 0 && !now.Before(ex.writtenAt.Add(ex.opts.firstByte)) {
		return true
	}
	return ex.c.Readable()
}

// complete reads the response (and a small body), waiting for the request
// to be written first if it is not yet (async only).
func (ex *syncEx) complete() {
	if ex.ended || ex.resp != nil {
		return // (a driver run's response is the guest's now)
	}
	if !ex.written {
		if ex.c == nil && ex.f.err == nil && ex.body != nil {
			select {
			case <-ex.body.finished:
			case <-ex.ctx.Done():
				ex.fail(ex.code(h1.ErrKilled))
				return
			}
			ex.write()
		}
		if ex.ended || !ex.written {
			return
		}
	}
	resp, err := ex.readHead()
	if err != nil && ex.c.Reused() && ex.c.BytesRead() == 0 && ex.replayable() && !errors.Is(err, h1.ErrKilled) &&
		!errors.Is(err, h1.ErrCallDeadline) && !errors.Is(err, h1.ErrFirstByteTimeout) {
		// The server closed the idle connection as the request went out.
		ex.dropConn()
		ex.written = false
		ex.write()
		if ex.ended {
			return
		}
		resp, err = ex.readHead()
	}
	if err != nil {
		if ex.c != nil && ex.c.BytesRead() == 0 && (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)) {
			// Closed before a byte of the answer: not an answer cut
			// short (ReadResponse's unexpected EOF) but a connection
			// ended under the request.
			err = syscall.ECONNRESET
		}
		ex.fail(ex.code(err))
		return
	}
	h, f, in := ex.h, ex.f, ex.f.body
	if resp.ContentLength > h.grant.MaxBodyBytes {
		resp.Body.Close()
		ex.fail(Variant{Case: "HTTP-response-body-size", Value: Some(uint64(resp.ContentLength))})
		return
	}
	if h.live {
		ex.startLive(resp)
		return
	}
	pf, err := in.spoolFile()
	if err != nil || pf == nil {
		resp.Body.Close()
		ex.fail(internalError(fmt.Sprintf("murmur: spooling the response: %v", err)))
		return
	}
	f.resp = &incomingResponse{status: uint16(resp.StatusCode), headers: fieldsOf(resp.Header, true), body: in}
	small := resp.ContentLength >= 0 && resp.ContentLength <= smallBody
	if small || ex.async {
		ex.spool(resp, pf, small)
		return
	}
	// A large or chunked body: the guest reads it from the spool as it
	// does the transport's, so it is spooled by a goroutine.
	close(f.done)
	ex.async = true
	if h.pending == ex {
		h.pending = nil
	}
	ex.c.HandToPoller()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		ex.spool(resp, pf, false)
	}()
}

// headSpin is how long the guest's thread looks for the response head
// before sleeping in poll(2). A sleeping thread is woken by the server's
// write through the scheduler, and on a virtual machine (this one is
// Firecracker) waking an idle vCPU costs tens of microseconds; a server
// that answers within the spin saves that. A run whose heads keep missing
// it (spinGiveUp in a row: a distant or slow server) stops spinning, and
// tries again every spinRetry requests.
const (
	headSpin   = 50 * time.Microsecond
	spinGiveUp = 3
	spinRetry  = 16
)

// readHead reads the response head, skipping 1xx interim responses, within
// the first-byte timeout (from the request's write) and the deadline.
func (ex *syncEx) readHead() (*http.Response, error) {
	c := ex.c
	c.Limit(ex.deadline, 0, nil)
	if ex.opts.firstByte > 0 {
		if t := ex.writtenAt.Add(ex.opts.firstByte); ex.deadline.IsZero() || t.Before(ex.deadline) {
			c.Until(t, h1.ErrFirstByteTimeout)
		}
	}
	spun := false
	// Only the guest's thread spins (and keeps the run's counts): a
	// goroutine's wait costs no one's latency.
	if !ex.async && (ex.h.spinMisses < spinGiveUp || ex.h.spinTries%spinRetry == 0) {
		c.Spin(headSpin)
		spun = true
		ex.h.spinTries++
	}
	defer func() {
		// A head there before any wait left the spin unused: a hit too.
		hit := c.EndSpin()
		if !spun {
			return
		}
		if hit {
			ex.h.spinMisses = 0
		} else {
			ex.h.spinMisses++
		}
	}()
	for {
		resp, err := http.ReadResponse(c.Reader(), ex.hreq)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		return resp, nil
	}
}

// spool reads the body into pf (done closed first unless small), then
// ends the exchange.
func (ex *syncEx) spool(resp *http.Response, pf *poolFile, small bool) {
	in, f := ex.f.body, ex.f
	if !small {
		select {
		case <-f.done:
		default:
			close(f.done)
		}
	}
	ex.c.Between(ex.deadline, ex.opts.betweenBytes, h1.ErrBetweenBytes)
	bp := spoolBufs.Get().(*[]byte)
	eof := false
	in.err = readBodyTo(ex.ctx, resp, *bp, ex.h.grant.MaxBodyBytes, 0, nil, func(b []byte) Value {
		if _, err := pf.file.Write(b); err != nil {
			return internalError("murmur: spooling the response: " + err.Error())
		}
		return nil
	}, ex.code, &eof)
	spoolBufs.Put(bp)
	resp.Body.Close()
	in.closeFile()
	if in.err == nil {
		in.trailers = fieldsOf(resp.Trailer, true).entries
	}
	// The connection goes back (and the slot is freed) before the guest
	// learns the body is whole: its next request then finds both.
	ex.end(eof && in.err == nil && !resp.Close && !ex.hreq.Close)
	close(in.spooled)
	if small {
		close(f.done)
	}
}

// completeOnThread is the guest's first wait for the response (the
// future's subscribe): the exchange is done here, on its thread, unless
// the request's body is still to be finished, which needs the guest: then
// a goroutine takes it over.
func (ex *syncEx) completeOnThread() {
	if !ex.onGuestThread() {
		return
	}
	if !ex.written {
		if ex.f.err == nil {
			ex.toAsync()
		}
		return
	}
	ex.complete()
}
