package h1

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
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
// park and a wake. An Conn is a socket the calling thread drives with
// poll(2) and read(2)/write(2) itself: the thread sleeps in the kernel and
// the kernel wakes it when the server's bytes arrive, with no goroutine
// between. The wire format stays net/http's ((*http.Request).Write and
// http.ReadResponse over the Conn); only the connection is ours.

// Conn is one connection of a run's pool. It is used by one exchange at a
// time; kill may be called from any goroutine (a cancelled run, a dropped
// future) and wakes a thread blocked in poll on it.
type Conn struct {
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
	nc      net.Conn // set by HandToPoller
	local   net.Addr
	remote  net.Addr
}

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
			return 0, ErrKilled
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
			return total, ErrKilled
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
// HandToPoller) within the same limits.
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
		return 0, ErrKilled
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, c.limitErr
	}
	return 0, err
}

// HandToPoller moves the connection's reads to Go's netpoller: for a body
// a goroutine spools, where parking the goroutine is cheaper than holding
// a thread in poll(2) for every read. The descriptor stays the Conn's; nc
// is a second one onto the same socket, closed with it.
func (c *Conn) HandToPoller() {
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
					return ErrKilled
				}
			}
		}
		n, err := unix.Ppoll(fds, ts, nil)
		if c.killed.Load() {
			return ErrKilled
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

func (c *rawConn) Close() error                       { return nil } // the Conn owns the descriptor
func (c *rawConn) LocalAddr() net.Addr                { return c.local }
func (c *rawConn) RemoteAddr() net.Addr               { return c.remote }
func (c *rawConn) SetDeadline(t time.Time) error      { return nil }
func (c *rawConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *rawConn) SetWriteDeadline(t time.Time) error { return nil }

// limit sets the current phase's limit: the nearer of deadline and
// now+timeout (timeout 0: none), answering why when it passes.
func (c *rawConn) limit(deadline time.Time, timeout time.Duration, why error) {
	c.until, c.limitErr, c.idle, c.hard = deadline, ErrCallDeadline, 0, deadline
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

// Kill shuts the socket down, waking a thread blocked on it (poll reports
// it readable, and the read sees killed); the descriptor stays open until
// Close, so it cannot be reused under the blocked thread.
func (c *Conn) Kill() {
	c.raw.killed.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		unix.Shutdown(c.fd, unix.SHUT_RDWR)
	}
}

// Close closes the connection (a pooled one is closed by its Pool).
func (c *Conn) Close() {
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
func (c *Conn) conn() net.Conn {
	if c.tls != nil {
		return c.tls
	}
	return c.raw
}

// IdleOK reports whether a pooled connection can take another request:
// nothing readable on it (a readable idle connection was closed by the
// server, or sent bytes no request asked for).
func (c *Conn) IdleOK() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 0
}

// The exchange's view of a connection: its wire (Reader, Writer) and the
// limits its current phase runs under. A Conn is used by one exchange at a
// time, so none of these lock; Kill and Close may race with them.

// Reader is the buffered reader http.ReadResponse reads from.
func (c *Conn) Reader() *bufio.Reader { return c.br }

// Writer is the buffered writer (*http.Request).Write writes to.
func (c *Conn) Writer() *bufio.Writer { return c.bw }

// Reused reports whether the connection served a request before this one
// (a request on it that fails before a byte may be replayed on a new one).
func (c *Conn) Reused() bool { return c.reused }

// TLS reports whether the connection is https (crypto/tls keeps decrypted
// bytes a poll of the socket cannot see).
func (c *Conn) TLS() bool { return c.tls != nil }

// FD is the socket's descriptor, for a poll on it (the Conn owns it).
func (c *Conn) FD() int { return c.fd }

// Readable reports, without waiting, whether a read would not wait on the
// server: bytes are buffered, or the socket is readable (or hung up).
func (c *Conn) Readable() bool {
	if c.br.Buffered() > 0 {
		return true
	}
	fds := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err != nil || n > 0
}

// Limit bounds the current phase: the nearer of deadline and now+timeout
// (0: none), answering why when it passes (ErrCallDeadline at deadline).
func (c *Conn) Limit(deadline time.Time, timeout time.Duration, why error) {
	c.raw.limit(deadline, timeout, why)
}

// Between bounds a body's reads: timeout from now and again after every
// read that returns bytes, never past deadline.
func (c *Conn) Between(deadline time.Time, timeout time.Duration, why error) {
	c.raw.between(deadline, timeout, why)
}

// Until sets the current operation's limit to at, answering why.
func (c *Conn) Until(at time.Time, why error) { c.raw.until, c.raw.limitErr = at, why }

// BytesRead is the bytes read since ResetRead: 0 after a failure means
// the server said nothing to this request.
func (c *Conn) BytesRead() int64 { return c.raw.nread }

// ResetRead starts BytesRead again (a new exchange on the connection).
func (c *Conn) ResetRead() { c.raw.nread = 0 }

// Spin makes the next wait look for readiness for d before sleeping in
// poll(2) (see wasihttp's RATIONALE.md, "The exchange on the guest's thread").
func (c *Conn) Spin(d time.Duration) { c.raw.spin, c.raw.spinHit = d, false }

// EndSpin ends a Spin and reports whether it paid: the wait found the
// socket ready while spinning, or no wait was needed (the spin unused).
func (c *Conn) EndSpin() bool {
	hit := c.raw.spinHit || c.raw.spin > 0
	c.raw.spin = 0
	return hit
}
