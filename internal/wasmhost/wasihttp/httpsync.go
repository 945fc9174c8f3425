package wasihttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/murmur-go/murmur/internal/wasmhost"
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
	send     Request
	body     *outBody
	opts     requestOptions
	f        *httpFuture
	deadline time.Time // the call's deadline plus the grace (Run.WaitEnd)

	// x is the HTTP/1.1 exchange itself: its connection, the request as
	// written, when it was written.
	x     *h1.Exchange
	async bool
	ended bool
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
func (h *httpRun) syncEligible(send Request) bool {
	if h.active.Load() != 0 || !syncExchanges {
		return false
	}
	s := send.effectiveScheme()
	return s == "http" || s == "https"
}

// startSync begins a synchronous exchange in handle: it takes an in-flight
// slot and writes the request if its body is finished (or it has none).
func (h *httpRun) startSync(r *run, send Request, body *outBody, opts requestOptions) *httpFuture {
	ctx, cancel := context.WithCancel(r.Context())
	in := &inBody{spooled: make(chan struct{}), cancel: cancel, h: h}
	f := &httpFuture{done: make(chan struct{}), cancel: cancel, body: in}
	ex := &syncEx{h: h, ctx: ctx, cancel: cancel, send: send, body: body, opts: opts, f: f, deadline: r.WaitEnd()}
	ex.x = &h1.Exchange{Pool: h.conns, Ctx: ctx, Scheme: send.effectiveScheme(), Authority: send.Authority,
		Connect: opts.connect, FirstByte: opts.firstByte, Deadline: ex.deadline,
		Build: func() (*http.Request, error) {
			hreq, code := buildRequest(ctx, send, body)
			if code != nil {
				return nil, codeError{*code}
			}
			return hreq, nil
		},
		Replayable: ex.replayable,
	}
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
func (ex *syncEx) fail(code wasmhost.Value) {
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
	ex.x.Release(reuse)
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

// write sends the request; a failure fails the future.
func (ex *syncEx) write() {
	if ex.body != nil && ex.body.aborted {
		ex.fail(internalError("murmur: the outgoing-body was dropped without finish"))
		return
	}
	if err := ex.x.Write(); err != nil {
		ex.fail(ex.code(err))
	}
}

// replayable: the request can be sent again on a new connection after a
// reused one turned out closed (h1.Replayable; a body of the guest's from a
// file is read once).
func (ex *syncEx) replayable() bool {
	return h1.Replayable(ex.send.Method, ex.send.Headers, ex.body == nil || !ex.body.taken || ex.body.mem != nil)
}

// codeError carries an error-code out of h1.Exchange.Build.
type codeError struct{ v wasmhost.Variant }

func (e codeError) Error() string { return "wasi:http " + e.v.Case }

// code maps a connection failure to the error-code a guest expects.
func (ex *syncEx) code(err error) wasmhost.Value {
	var ce codeError
	switch {
	case errors.As(err, &ce):
		return ce.v
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
func (ex *syncEx) headReady() bool { return ex.resp == nil && ex.x.HeadReady() }

// complete reads the response (and a small body), waiting for the request
// to be written first if it is not yet (async only).
func (ex *syncEx) complete() {
	if ex.ended || ex.resp != nil {
		return // (a driver run's response is the guest's now)
	}
	if !ex.x.Written {
		if ex.x.Conn == nil && ex.f.err == nil && ex.body != nil {
			select {
			case <-ex.body.finished:
			case <-ex.ctx.Done():
				ex.fail(ex.code(h1.ErrKilled))
				return
			}
			ex.write()
		}
		if ex.ended || !ex.x.Written {
			return
		}
	}
	// Only the guest's thread spins (and keeps the run's record): a
	// goroutine's wait costs no one's latency.
	var spin *h1.Spin
	if !ex.async {
		spin = &ex.h.spin
	}
	resp, err := ex.x.ReadHead(spin)
	if err != nil {
		ex.fail(ex.code(err))
		return
	}
	h, f, in := ex.h, ex.f, ex.f.body
	if resp.ContentLength > h.grant.MaxBodyBytes {
		resp.Body.Close()
		ex.fail(wasmhost.Variant{Case: "HTTP-response-body-size", Value: wasmhost.Some(uint64(resp.ContentLength))})
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
	ex.x.Conn.HandToPoller()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		ex.spool(resp, pf, false)
	}()
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
	ex.x.Conn.Between(ex.deadline, ex.opts.betweenBytes, h1.ErrBetweenBytes)
	bp := spoolBufs.Get().(*[]byte)
	eof := false
	in.err = readBodyTo(ex.ctx, resp, *bp, ex.h.grant.MaxBodyBytes, 0, nil, func(b []byte) wasmhost.Value {
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
	ex.end(eof && in.err == nil && !resp.Close && !ex.x.Req.Close)
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
	if !ex.x.Written {
		if ex.f.err == nil {
			ex.toAsync()
		}
		return
	}
	ex.complete()
}
