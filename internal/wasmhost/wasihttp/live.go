package wasihttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/murmur-go/murmur/internal/wasmhost"
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
func (b *inBody) LiveKids() int {
	if b.live != nil && b.streamed && !b.live.Dropped() {
		return 1
	}
	return 0
}

func (r *run) liveBodyWrite(a []wasmhost.Value) (wasmhost.Value, error) {
	b := objAs[*outBody](r, a[0])
	if b == nil || b.taken {
		return wasmhost.Err(nil), nil
	}
	mem := []byte{}
	b.taken, b.mem = true, &mem
	limit := r.http.grant.MaxBodyBytes
	return wasmhost.Ok(r.NewObject(wasmhost.NewOutputStream(func(p []byte) error {
		if int64(len(mem))+int64(len(p)) > limit {
			return fmt.Errorf("the request body is larger than the %d bytes the host allows", limit)
		}
		mem = append(mem, p...)
		*b.mem = mem
		return nil
	}))), nil
}

func (r *run) liveBodyStream(a []wasmhost.Value) (wasmhost.Value, error) {
	b := objAs[*inBody](r, a[0])
	if b == nil || b.streamed || b.live == nil {
		return wasmhost.Err(nil), nil
	}
	b.streamed = true
	return wasmhost.Ok(r.NewObject(b.live)), nil
}

func (r *run) liveBodyFinish(b *inBody) error {
	if b != nil && b.LiveKids() > 0 {
		return errors.New("wasi:http/types#[static]incoming-body.finish: the body's input-stream is still alive (drop it first)")
	}
	if b != nil && b.live != nil && b.live.Source() != nil {
		b.live.Source().ToAsync() // the trailers come after the rest of the body
	}
	return nil
}

func (r *run) liveFutureSubscribe(a []wasmhost.Value) (wasmhost.Value, error) {
	const call = "wasi:http/types#[method]future-incoming-response.subscribe"
	if f := objAs[*httpFuture](r, a[0]); f != nil {
		if f.sync.onGuestThread() && f.sync.pull == nil {
			// The guest is about to wait for the head: read it here.
			f.sync.completeOnThread()
			if r.Cancelled() {
				return nil, wasmhost.ErrCallEnded
			}
			if !r.Deadline().IsZero() && !time.Now().Before(r.Deadline()) {
				return nil, &wasmhost.DeadlineError{Waiting: true, Call: "wasi:http/types#[method]future-incoming-response.subscribe"}
			}
		}
		return r.NewObject(wasmhost.ChanPollable(f.done, call)), nil
	}
	return r.NewObject(wasmhost.ReadyPollable(call)), nil
}

func (r *run) liveTrailersSubscribe(a []wasmhost.Value) (wasmhost.Value, error) {
	const call = "wasi:http/types#[method]future-trailers.subscribe"
	if f := objAs[*futureTrailers](r, a[0]); f != nil {
		return r.NewObject(wasmhost.ChanPollable(f.body.spooled, call)), nil
	}
	return r.NewObject(wasmhost.ReadyPollable(call)), nil
}

// liveHTTPErrorCode reads the error-code behind a body stream's error.
func (r *run) liveHTTPErrorCode(a []wasmhost.Value) (wasmhost.Value, error) {
	if e := objAs[*wasmhost.IOError](r, a[0]); e != nil && e.Code != nil {
		return wasmhost.Some(e.Code), nil
	}
	return wasmhost.None, nil
}

// streamLive hands the response to the guest at its head and then pushes
// the body into the guest's stream as it arrives; the body's spooled
// channel closes at its end (trailers are read then).
func (h *httpRun) streamLive(ctx context.Context, cancel context.CancelFunc, resp *http.Response, opts requestOptions, f *httpFuture) {
	s := wasmhost.NewInputStream(liveBodyBuffer, liveReadCall)
	in := &inBody{spooled: make(chan struct{}), cancel: cancel, live: s, h: h}
	f.resp = &incomingResponse{status: uint16(resp.StatusCode), headers: fieldsOf(resp.Header, true), body: in}
	close(f.done)

	in.err = pumpBody(ctx, resp, s, h.grant.MaxBodyBytes, opts.betweenBytes, cancel)
	if in.err == nil {
		in.trailers = fieldsOf(resp.Trailer, true).entries
	}
	s.Finish(in.err)
	close(in.spooled)
}

// pumpBody copies the response body into s as it arrives, at most max
// bytes; the between-bytes timeout counts only time spent waiting on the
// server, not on the guest.
func pumpBody(ctx context.Context, resp *http.Response, s *wasmhost.InputStream, max int64, between time.Duration, cancel context.CancelFunc) wasmhost.Value {
	return readBody(ctx, resp, make([]byte, 32<<10), max, between, cancel, func(b []byte) wasmhost.Value {
		if !s.Push(b, ctx.Done()) {
			return codeOf(ctx, ctx.Err())
		}
		return nil
	})
}
