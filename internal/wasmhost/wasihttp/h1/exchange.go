package h1

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// Exchange is one request and its response on a connection of a Pool,
// driven by the calling goroutine: the request written with net/http's
// wire code ((*http.Request).Write), the head read with http.ReadResponse,
// each read and write waiting in poll(2) on the calling thread within the
// phase's limit. A caller may hand an Exchange to another goroutine, but
// only one goroutine drives it at a time; Conn.Kill (through Ctx) may be
// called from any.
type Exchange struct {
	Pool      *Pool
	Ctx       context.Context // cancelling it kills the connection
	Scheme    string
	Authority string
	// Connect and FirstByte are the request-options timeouts (0: none);
	// Deadline is when every phase ends at the latest (zero: never).
	Connect, FirstByte time.Duration
	Deadline           time.Time
	// Build makes the request for each attempt: a replayed body is read
	// again. Its error ends the exchange as it is.
	Build func() (*http.Request, error)
	// Replayable reports whether the request may be sent again on a new
	// connection after a reused one turned out closed (see Replayable).
	Replayable func() bool

	Req       *http.Request // the request of the last attempt
	Conn      *Conn         // nil before the first attempt and after Release or Drop
	Written   bool
	WrittenAt time.Time

	target   *Target
	stopKill func() bool
}

// Replayable is net/http's rule for sending a request again after the
// connection it went out on turned out closed: an idempotent method, or an
// idempotency key, and a body that can be read again (bodyAgain).
func Replayable(method string, headers [][2]string, bodyAgain bool) bool {
	if !bodyAgain {
		return false
	}
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE":
		return true
	}
	for _, e := range headers {
		if strings.EqualFold(e[0], "idempotency-key") || strings.EqualFold(e[0], "x-idempotency-key") {
			return true
		}
	}
	return false
}

// conn takes a pooled connection to the request's origin at an address its
// name resolved to, or dials one. The name is resolved once per exchange
// (a retry on a new connection dials the same addresses).
func (ex *Exchange) conn(fresh bool) error {
	if ex.target == nil {
		t, err := Resolve(ex.Ctx, ex.Scheme, ex.Authority, ex.Connect, ex.Deadline)
		if err != nil {
			return err
		}
		ex.target = t
	}
	var c *Conn
	if !fresh {
		for _, a := range ex.target.Addrs() {
			if c = ex.Pool.Get(ex.target.Key(a)); c != nil {
				break
			}
		}
	}
	if c == nil {
		var err error
		if c, err = Dial(ex.Ctx, ex.target, ex.Connect, ex.Deadline); err != nil {
			return err
		}
	}
	c.ResetRead()
	ex.Conn = c
	ex.stopKill = context.AfterFunc(ex.Ctx, c.Kill)
	return nil
}

// Drop closes the exchange's connection (a failed or refused one).
func (ex *Exchange) Drop() {
	if ex.Conn == nil {
		return
	}
	ex.stopKill()
	ex.Conn.Close()
	ex.Conn = nil
}

// Release gives the connection back to the pool (reuse: the response was
// read to its end and neither side asked to close) or closes it. A
// connection the exchange's context has killed is closed either way.
func (ex *Exchange) Release(reuse bool) {
	c := ex.Conn
	if c == nil {
		return
	}
	ex.Conn = nil
	if ex.stopKill != nil && !ex.stopKill() {
		reuse = false // cancelled: kill has run or is running
	}
	if reuse {
		c.Limit(time.Time{}, 0, nil)
		ex.Pool.Put(c)
	} else {
		c.Close()
	}
}

// Write sends the request, on a pooled connection or a new one; a reused
// connection that fails the write is replaced once if the request is
// replayable. On success Written is set.
func (ex *Exchange) Write() error {
	for attempt := 0; ; attempt++ {
		hreq, err := ex.Build()
		if err != nil {
			return err
		}
		ex.Req = hreq
		if err := ex.conn(attempt > 0); err != nil {
			return err
		}
		err = ex.writeOnce()
		if err == nil {
			break
		}
		retry := ex.Conn.Reused() && attempt == 0 && ex.Replayable()
		ex.Drop()
		if !retry {
			return err
		}
	}
	ex.Written, ex.WrittenAt = true, time.Now()
	return nil
}

func (ex *Exchange) writeOnce() error {
	ex.Conn.Limit(ex.Deadline, 0, nil)
	if err := ex.Req.Write(ex.Conn.Writer()); err != nil {
		return err
	}
	return ex.Conn.Writer().Flush()
}

// HeadReady reports whether the response head has started to arrive (a
// read of it would not wait on the server), or a limit on it has passed
// (the read then ends at once).
func (ex *Exchange) HeadReady() bool {
	if !ex.Written || ex.Conn == nil {
		return false
	}
	now := time.Now()
	if !ex.Deadline.IsZero() && !now.Before(ex.Deadline) ||
		ex.FirstByte > 0 && !now.Before(ex.WrittenAt.Add(ex.FirstByte)) {
		return true
	}
	return ex.Conn.Readable()
}

// headSpin is how long the calling thread looks for the response head
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

// Spin keeps the head spin's record of one thread's exchanges (a run's):
// used by one goroutine at a time.
type Spin struct{ misses, tries int }

// ReadHead reads the response head, skipping 1xx interim responses, within
// the first-byte timeout (from the request's write) and the deadline. spin,
// when not nil, lets the wait spin first (only a thread whose latency
// counts should). A reused connection the server closed as the request
// went out, before a byte of the answer, gets the request again on a new
// connection if it is replayable (the new write's error is returned as
// it is). A connection that ends before a byte of the answer is
// ECONNRESET, not a short answer.
func (ex *Exchange) ReadHead(spin *Spin) (*http.Response, error) {
	resp, err := ex.readHead(spin)
	if err != nil && ex.Conn.Reused() && ex.Conn.BytesRead() == 0 && ex.Replayable() && !errors.Is(err, ErrKilled) &&
		!errors.Is(err, ErrCallDeadline) && !errors.Is(err, ErrFirstByteTimeout) {
		ex.Drop()
		ex.Written = false
		if err := ex.Write(); err != nil {
			return nil, err
		}
		resp, err = ex.readHead(spin)
	}
	if err != nil && ex.Conn != nil && ex.Conn.BytesRead() == 0 && (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)) {
		err = syscall.ECONNRESET
	}
	return resp, err
}

func (ex *Exchange) readHead(spin *Spin) (*http.Response, error) {
	c := ex.Conn
	c.Limit(ex.Deadline, 0, nil)
	if ex.FirstByte > 0 {
		if t := ex.WrittenAt.Add(ex.FirstByte); ex.Deadline.IsZero() || t.Before(ex.Deadline) {
			c.Until(t, ErrFirstByteTimeout)
		}
	}
	spun := false
	if spin != nil && (spin.misses < spinGiveUp || spin.tries%spinRetry == 0) {
		c.Spin(headSpin)
		spun = true
		spin.tries++
	}
	defer func() {
		// A head there before any wait left the spin unused: a hit too.
		hit := c.EndSpin()
		if !spun {
			return
		}
		if hit {
			spin.misses = 0
		} else {
			spin.misses++
		}
	}()
	for {
		resp, err := http.ReadResponse(c.Reader(), ex.Req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		return resp, nil
	}
}
