package wasmhost

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Connections the guest's own thread reads and writes (see RATIONALE.md,
// "The exchange on the guest's thread"). net/http's Transport runs every
// connection on two goroutines of its own (persistConn's readLoop and
// writeLoop), so a request made from a host function crosses Go's
// scheduler several times: the handler's goroutine to the writer, the
// reader to the handler, the handler back to the guest's thread, each a
// park and a wake. An hconn is a socket the calling thread drives with
// poll(2) and read(2)/write(2) itself: the thread sleeps in the kernel and
// the kernel wakes it when the server's bytes arrive, with no goroutine
// between. The wire format stays net/http's ((*http.Request).Write and
// http.ReadResponse over the hconn); only the connection is ours.

// hconn is one connection of a run's pool. It is used by one exchange at a
// time; kill may be called from any goroutine (a cancelled run, a dropped
// future) and wakes a thread blocked in poll on it.
type hconn struct {
	fd     int // non-blocking, owned
	key    string
	tls    *tls.Conn // https: the TLS session over raw
	raw    *rawConn
	br     *bufio.Reader
	bw     *bufio.Writer
	reused bool // it served a request before this one
	// poolKey is scheme://authority/ip:port: a pooled connection is
	// reused only for the same origin at the address this request's name
	// resolved to.
	poolKey   string
	idleSince time.Time

	mu     sync.Mutex // kill against close: never shut down a reused number
	closed bool
}

// rawConn is the socket as a net.Conn (what crypto/tls and bufio read and
// write): each Read and Write waits in poll(2) on the calling thread, until
// the limit of the exchange's current phase.
type rawConn struct {
	fd     int
	killed atomic.Bool // shut down by kill: the exchange was cancelled
	// until is when the current operation gives up with limitErr: the
	// nearer of the call's deadline and the request-options timeout of
	// the phase (first byte, between bytes). idle, when set, moves until
	// on after every read that returned bytes (between-bytes).
	until    time.Time
	limitErr error
	idle     time.Duration
	idleKeep time.Duration
	idleErr  error
	hard     time.Time // the call's deadline under until
	nread    int64     // bytes read since reset
	// spin, when set, is how long the next wait looks for readiness
	// without sleeping (headSpin); spinHit records that it found it.
	spin    time.Duration
	spinHit bool
	nc      net.Conn // set by handToPoller
	local   net.Addr
	remote  net.Addr
}

// errCallDeadline is a read or write reaching the call's deadline.
var errCallDeadline = errors.New("the call's deadline passed")

// errKilled is an operation on a connection its exchange gave up
// (the run cancelled, the future or body dropped).
var errKilled = errors.New("murmur: the request was cancelled")

func (c *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.nc != nil {
		return c.pollerRead(p)
	}
	for {
		n, err := syscall.Read(c.fd, p)
		if n > 0 {
			c.nread += int64(n)
			if c.idle > 0 {
				c.limit(c.hard, c.idle, c.idleErr)
				c.idle = c.idleKeep
			}
			return n, nil
		}
		if c.killed.Load() {
			return 0, errKilled
		}
		switch err {
		case nil:
			return 0, io.EOF
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			if err := c.wait(unix.POLLIN); err != nil {
				return 0, err
			}
			continue
		}
		return 0, os.NewSyscallError("read", err)
	}
}

func (c *rawConn) Write(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		n, err := syscall.Write(c.fd, p)
		if n > 0 {
			total += n
			p = p[n:]
			continue
		}
		if c.killed.Load() {
			return total, errKilled
		}
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			if err := c.wait(unix.POLLOUT); err != nil {
				return total, err
			}
			continue
		case nil:
			return total, io.ErrShortWrite
		}
		return total, os.NewSyscallError("write", err)
	}
	return total, nil
}

// pollerRead reads through Go's netpoller (a goroutine's bulk read, see
// handToPoller) within the same limits.
func (c *rawConn) pollerRead(p []byte) (int, error) {
	c.nc.SetReadDeadline(c.until)
	n, err := c.nc.Read(p)
	if n > 0 {
		c.nread += int64(n)
		if c.idle > 0 {
			c.limit(c.hard, c.idle, c.idleErr)
			c.idle = c.idleKeep
		}
		return n, nil
	}
	if c.killed.Load() {
		return 0, errKilled
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, c.limitErr
	}
	return 0, err
}

// handToPoller moves the connection's reads to Go's netpoller: for a body
// a goroutine spools, where parking the goroutine is cheaper than holding
// a thread in poll(2) for every read. The descriptor stays the hconn's; nc
// is a second one onto the same socket, closed with it.
func (c *hconn) handToPoller() {
	if c.tls != nil || c.raw.nc != nil {
		return
	}
	fd, err := unix.FcntlInt(uintptr(c.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "wasi:http connection")
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return
	}
	c.raw.nc = nc
}

// wait blocks the calling thread in poll(2) until the socket is ready for
// events, the operation's limit passes (limitErr) or kill shuts it down.
// The syscall releases the thread's P, so the rest of the process runs
// meanwhile; the kernel wakes this thread itself.
func (c *rawConn) wait(events int16) error {
	for {
		var ts *unix.Timespec
		if !c.until.IsZero() {
			d := time.Until(c.until)
			if d <= 0 {
				return c.limitErr
			}
			t := unix.NsecToTimespec(d.Nanoseconds())
			ts = &t
		}
		fds := []unix.PollFd{{Fd: int32(c.fd), Events: events}}
		if c.spin > 0 {
			// See headSpin: a short look before sleeping, once.
			budget := c.spin
			c.spin = 0
			st := time.Now()
			for time.Since(st) < budget && (c.until.IsZero() || time.Now().Before(c.until)) {
				if n, _ := unix.Poll(fds, 0); n > 0 {
					c.spinHit = true
					return nil
				}
				if c.killed.Load() {
					return errKilled
				}
			}
		}
		n, err := unix.Ppoll(fds, ts, nil)
		if c.killed.Load() {
			return errKilled
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return os.NewSyscallError("ppoll", err)
		}
		if n > 0 {
			return nil // ready, or an error/hangup the next read or write reports
		}
	}
}

func (c *rawConn) Close() error                       { return nil } // the hconn owns the descriptor
func (c *rawConn) LocalAddr() net.Addr                { return c.local }
func (c *rawConn) RemoteAddr() net.Addr               { return c.remote }
func (c *rawConn) SetDeadline(t time.Time) error      { return nil }
func (c *rawConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *rawConn) SetWriteDeadline(t time.Time) error { return nil }

// limit sets the current phase's limit: the nearer of deadline and
// now+timeout (timeout 0: none), answering why when it passes.
func (c *rawConn) limit(deadline time.Time, timeout time.Duration, why error) {
	c.until, c.limitErr, c.idle, c.hard = deadline, errCallDeadline, 0, deadline
	if timeout > 0 {
		if t := time.Now().Add(timeout); deadline.IsZero() || t.Before(deadline) {
			c.until, c.limitErr = t, why
		}
	}
}

// between sets a between-bytes limit: timeout from now and again after
// every read that returns bytes, never past deadline.
func (c *rawConn) between(deadline time.Time, timeout time.Duration, why error) {
	c.limit(deadline, timeout, why)
	if timeout > 0 {
		c.idle, c.idleKeep, c.idleErr = timeout, timeout, why
	}
}

// kill shuts the socket down, waking a thread blocked on it (poll reports
// it readable, and the read sees killed); the descriptor stays open until
// close, so it cannot be reused under the blocked thread.
func (c *hconn) kill() {
	c.raw.killed.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		unix.Shutdown(c.fd, unix.SHUT_RDWR)
	}
}

func (c *hconn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		if c.raw.nc != nil {
			c.raw.nc.Close()
		}
		unix.Close(c.fd)
	}
}

// conn is what the wire code reads and writes: the TLS session or the
// socket.
func (c *hconn) conn() net.Conn {
	if c.tls != nil {
		return c.tls
	}
	return c.raw
}

// idleOK reports whether a pooled connection can take another request:
// nothing readable on it (a readable idle connection was closed by the
// server, or sent bytes no request asked for).
func (c *hconn) idleOK() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 0
}

// connPool holds idle connections between exchanges, by origin and the
// address dialled (scheme://authority/ip:port): the Engine owns one, so a
// connection outlives the run that dialled it and the next run to the same
// origin and address takes it (RATIONALE.md, "Connections kept across
// runs"). A connection goes back only after a response read to its end
// that neither side ended with close; it is never in the pool while an
// exchange uses it. The pool is bounded per key and in total, closes a
// connection idle for longer than idleFor, and closes all at closeAll.
type connPool struct {
	mu      sync.Mutex
	idle    map[string][]*hconn
	n       int // connections in idle
	closed  bool
	sweep   *time.Timer
	perKey  int
	total   int
	idleFor time.Duration
}

// The pool's bounds: idle connections kept to one origin and address, and
// in all, and how long one is kept unused.
const (
	maxIdlePerKey = 16
	maxIdleTotal  = 64
	idleTimeout   = 30 * time.Second
)

func newConnPool() *connPool {
	return &connPool{perKey: maxIdlePerKey, total: maxIdleTotal, idleFor: idleTimeout}
}

func (p *connPool) get(key string) *hconn {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		l := p.idle[key]
		if len(l) == 0 {
			return nil
		}
		c := l[len(l)-1]
		l[len(l)-1] = nil
		p.idle[key] = l[:len(l)-1]
		if len(p.idle[key]) == 0 {
			delete(p.idle, key)
		}
		p.n--
		if c.idleOK() && time.Since(c.idleSince) < p.idleFor {
			c.reused = true
			return c
		}
		c.close()
	}
}

func (p *connPool) put(c *hconn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle[c.poolKey]) >= p.perKey {
		c.close()
		return
	}
	if p.n >= p.total {
		p.evictOldest()
	}
	if p.idle == nil {
		p.idle = map[string][]*hconn{}
	}
	c.idleSince = time.Now()
	p.idle[c.poolKey] = append(p.idle[c.poolKey], c)
	p.n++
	if p.sweep == nil {
		p.sweep = time.AfterFunc(p.idleFor, p.expire)
	}
}

// evictOldest closes the connection idle longest, to make room.
func (p *connPool) evictOldest() {
	var key string
	var at time.Time
	for k, l := range p.idle {
		if len(l) > 0 && (key == "" || l[0].idleSince.Before(at)) {
			key, at = k, l[0].idleSince
		}
	}
	if key == "" {
		return
	}
	l := p.idle[key]
	l[0].close()
	if len(l) == 1 {
		delete(p.idle, key)
	} else {
		p.idle[key] = append(l[:0:0], l[1:]...)
	}
	p.n--
}

// expire closes the connections idle for idleFor, and runs again while
// any are left.
func (p *connPool) expire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sweep = nil
	if p.closed {
		return
	}
	cut := time.Now().Add(-p.idleFor)
	for k, l := range p.idle {
		keep := l[:0]
		for _, c := range l {
			if c.idleSince.After(cut) && c.idleOK() {
				keep = append(keep, c)
			} else {
				c.close()
				p.n--
			}
		}
		if len(keep) == 0 {
			delete(p.idle, k)
		} else {
			p.idle[k] = keep
		}
	}
	if p.n > 0 {
		p.sweep = time.AfterFunc(p.idleFor/2, p.expire)
	}
}

// size is the number of idle connections (tests).
func (p *connPool) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// closeIdle closes the idle connections; the pool stays open.
func (p *connPool) closeIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.idle {
		for _, c := range l {
			c.close()
		}
	}
	p.idle, p.n = nil, 0
}

func (p *connPool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.sweep != nil {
		p.sweep.Stop()
		p.sweep = nil
	}
	for _, l := range p.idle {
		for _, c := range l {
			c.close()
		}
	}
	p.idle, p.n = nil, 0
}

// target is where a request goes: its origin, and the addresses its name
// resolved to (once per request: the policy's check and the connection
// see the same name, and a pooled connection is taken only if it was
// dialled to one of these addresses).
type target struct {
	scheme, authority, host, port string
	addrs                         []string // ip:port, in the resolver's order
}

func (t *target) key(addr string) string { return t.scheme + "://" + t.authority + "/" + addr }

// resolveTarget resolves scheme://authority's name, within the connect
// timeout and the deadline.
func resolveTarget(ctx context.Context, scheme, authority string, connect time.Duration, deadline time.Time) (*target, error) {
	host, port, err := net.SplitHostPort(authority)
	if err != nil {
		host, port = authority, "80"
		if scheme == "https" {
			port = "443"
		}
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	dctx, cancel := dialContext(ctx, connect, deadline)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIPAddr(dctx, host)
	if err != nil {
		return nil, dialErr(dctx, err)
	}
	t := &target{scheme: scheme, authority: authority, host: host, port: port}
	for _, ip := range ips {
		t.addrs = append(t.addrs, net.JoinHostPort(ip.IP.String(), port))
	}
	return t, nil
}

func dialContext(ctx context.Context, connect time.Duration, deadline time.Time) (context.Context, context.CancelFunc) {
	dctx, cancel := context.WithCancel(ctx)
	if !deadline.IsZero() {
		dctx, cancel = context.WithDeadline(ctx, deadline)
	}
	if connect > 0 {
		d2, c2 := context.WithTimeoutCause(dctx, connect, errConnectTimeout)
		return d2, func() { c2(); cancel() }
	}
	return dctx, cancel
}

// dialSync opens a connection to t the way newTransport's dialer does (the
// resolved addresses dialled in order, no proxy), within the connect
// timeout and the deadline; an https one has its TLS handshake done
// (HTTP/1.1 offered in ALPN, the certificate checked against t's host).
func dialSync(ctx context.Context, t *target, connect time.Duration, deadline time.Time) (*hconn, error) {
	dctx, cancel := dialContext(ctx, connect, deadline)
	defer cancel()
	d := &net.Dialer{KeepAlive: 30 * time.Second}
	var nc net.Conn
	var last error
	var addr string
	for _, a := range t.addrs {
		var err error
		nc, err = d.DialContext(dctx, "tcp", a)
		if err == nil {
			addr = a
			break
		}
		last = err
	}
	if nc == nil {
		if last == nil {
			last = &net.DNSError{Err: "no addresses", Name: t.host, IsNotFound: true}
		}
		return nil, dialErr(dctx, last)
	}
	fd, err := dupSocket(nc)
	nc.Close()
	if err != nil {
		return nil, err
	}
	raw := &rawConn{fd: fd, local: nc.LocalAddr(), remote: nc.RemoteAddr()}
	c := &hconn{fd: fd, key: t.scheme + "://" + t.authority, poolKey: t.key(addr), raw: raw}
	if t.scheme == "https" {
		raw.limit(deadline, 0, nil)
		if connect > 0 {
			raw.limit(deadline, connect, errConnectTimeout)
		}
		stop := context.AfterFunc(ctx, c.kill)
		tc := tls.Client(raw, &tls.Config{ServerName: t.host, NextProtos: []string{"http/1.1"}})
		err := tc.Handshake()
		stop()
		if err != nil {
			c.close()
			return nil, err
		}
		c.tls = tc
	}
	c.br = bufio.NewReaderSize(c.conn(), 4096)
	c.bw = bufio.NewWriterSize(c.conn(), 4096)
	return c, nil
}

func dialErr(ctx context.Context, err error) error {
	if context.Cause(ctx) == errConnectTimeout {
		return errConnectTimeout
	}
	return err
}

// dupSocket is a descriptor of our own onto nc's socket (still
// non-blocking, as Go opened it), so it can be driven without the
// netpoller once nc is closed.
func dupSocket(nc net.Conn) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1, errors.New("wasmhost: not a socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, os.NewSyscallError("fcntl", derr)
	}
	return fd, nil
}
