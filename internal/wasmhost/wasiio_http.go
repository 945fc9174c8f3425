package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// wasi:http bodies as Go streams, for runs whose wasi:io is Go's (driver
// runs, and components without a filesystem: RunConfig.GoIO). The request
// side is as for capsules (the body is gathered in an unlinked spool file
// and sent at outgoing-body.finish), only written through a Go
// output-stream; the response side is live: the exchange pushes each read
// of the body into the guest's input-stream as it arrives, at most
// liveBodyBuffer bytes ahead of the guest.

// liveBodyBuffer is how far a response body may run ahead of the guest's
// reads before the exchange stops reading from the connection.
const liveBodyBuffer = 256 << 10

const liveReadCall = "wasi:io/streams#[method]input-stream.blocking-read"

// liveKids: an incoming-body is the parent of its stream; wasmtime traps a
// guest that drops or finishes the body while the stream is alive.
func (b *inBody) liveKids() int {
	if b.live != nil && b.streamed && !b.live.isDropped() {
		return 1
	}
	return 0
}

func (r *run) liveBodyWrite(a []Value) (Value, error) {
	b := objAs[*outBody](r, a[0])
	if b == nil || b.taken {
		return Err(nil), nil
	}
	mem := []byte{}
	b.taken, b.mem = true, &mem
	limit := r.http.grant.MaxBodyBytes
	return Ok(r.newObj(NewOutputStream(func(p []byte) error {
		if int64(len(mem))+int64(len(p)) > limit {
			return fmt.Errorf("the request body is larger than the %d bytes the host allows", limit)
		}
		mem = append(mem, p...)
		*b.mem = mem
		return nil
	}))), nil
}

func (r *run) liveBodyStream(a []Value) (Value, error) {
	b := objAs[*inBody](r, a[0])
	if b == nil || b.streamed || b.live == nil {
		return Err(nil), nil
	}
	b.streamed = true
	return Ok(r.newObj(b.live)), nil
}

func (r *run) liveBodyFinish(b *inBody) error {
	if b != nil && b.liveKids() > 0 {
		return errors.New("wasi:http/types#[static]incoming-body.finish: the body's input-stream is still alive (drop it first)")
	}
	if b != nil && b.live != nil && b.live.src != nil {
		b.live.src.toAsync() // the trailers come after the rest of the body
	}
	return nil
}

func (r *run) liveFutureSubscribe(a []Value) (Value, error) {
	const call = "wasi:http/types#[method]future-incoming-response.subscribe"
	if f := objAs[*httpFuture](r, a[0]); f != nil {
		if f.sync.onGuestThread() && f.sync.pull == nil {
			// The guest is about to wait for the head: read it here.
			f.sync.completeOnThread()
			if r.callCancelled() {
				return nil, errCallEnded
			}
			if !r.deadline.IsZero() && !time.Now().Before(r.deadline) {
				return nil, &DeadlineError{Waiting: true, Call: "wasi:http/types#[method]future-incoming-response.subscribe"}
			}
		}
		return r.newObj(chanPollable(f.done, call)), nil
	}
	return r.newObj(ReadyPollable(call)), nil
}

func (r *run) liveTrailersSubscribe(a []Value) (Value, error) {
	const call = "wasi:http/types#[method]future-trailers.subscribe"
	if f := objAs[*futureTrailers](r, a[0]); f != nil {
		return r.newObj(chanPollable(f.body.spooled, call)), nil
	}
	return r.newObj(ReadyPollable(call)), nil
}

// liveHTTPErrorCode reads the error-code behind a body stream's error.
func (r *run) liveHTTPErrorCode(a []Value) (Value, error) {
	if e := objAs[*IOError](r, a[0]); e != nil && e.Code != nil {
		return Some(e.Code), nil
	}
	return None, nil
}

// streamLive hands the response to the guest at its head and then pushes
// the body into the guest's stream as it arrives; the body's spooled
// channel closes at its end (trailers are read then).
func (h *httpRun) streamLive(ctx context.Context, cancel context.CancelFunc, resp *http.Response, opts requestOptions, f *httpFuture) {
	s := newGoInput(liveBodyBuffer)
	s.call = liveReadCall
	in := &inBody{spooled: make(chan struct{}), cancel: cancel, live: s, h: h}
	f.resp = &incomingResponse{status: uint16(resp.StatusCode), headers: fieldsOf(resp.Header, true), body: in}
	close(f.done)

	in.err = pumpBody(ctx, resp, s, h.grant.MaxBodyBytes, opts.betweenBytes, cancel)
	if in.err == nil {
		in.trailers = fieldsOf(resp.Trailer, true).entries
	}
	s.finish(in.err)
	close(in.spooled)
}

// pumpBody copies the response body into s as it arrives, at most max
// bytes; the between-bytes timeout counts only time spent waiting on the
// server, not on the guest.
func pumpBody(ctx context.Context, resp *http.Response, s *InputStream, max int64, between time.Duration, cancel context.CancelFunc) Value {
	return readBody(ctx, resp, make([]byte, 32<<10), max, between, cancel, func(b []byte) Value {
		if !s.push(b, ctx.Done()) {
			return codeOf(ctx, ctx.Err())
		}
		return nil
	})
}
