package door

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/murmur-go/murmur/internal/door/doorapi"
)

// The door's connection bounds (Serve). A POST /'s read deadline is lifted
// once its body is read, so a stream (SendStreamingMessage,
// SubscribeToTask) lives as long as its task.
const (
	ReadHeaderTimeout = 10 * time.Second // request line and headers
	ReadTimeout       = 30 * time.Second // the whole request, body included
	IdleTimeout       = 60 * time.Second // a keep-alive connection between requests
	MaxConns          = 64               // open connections served at once (see Serve)
)

// RuleSameUser is the error word of the refusal of a connection from
// another user.
const RuleSameUser = "not_same_user"

// limits are a door's connection bounds; tests shorten them
// (export_test.go).
type limits struct {
	readHeader, read, idle time.Duration
	maxConns               int
	// refuseLinger bounds how long a refused connection is drained after
	// its 403, so the client reads the answer rather than a reset.
	refuseLinger time.Duration
}

func defaultLimits() limits {
	return limits{ReadHeaderTimeout, ReadTimeout, IdleTimeout, MaxConns, time.Second}
}

// Refusal is an HTTP refusal sent before a request's body is read, as
// the specification of network.authentication writes them: {"error": word,
// "message": sentence}.
type Refusal struct {
	Status  int
	Error   string
	Message string
	Header  http.Header
}

func writeRefusal(w http.ResponseWriter, r *Refusal) {
	for k, vs := range r.Header {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.Status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // the sentences are read as written: "<token>"
	_ = enc.Encode(doorapi.RefusalBody{Error: r.Error, Message: r.Message})
}

// Serve serves the door on ln until Shutdown or Close of ln. Only
// connections whose peer socket belongs to the runtime's own user (its
// effective uid; root's door: uid 0 only) are served: the owner is read from
// the kernel's socket table as the connection is accepted, before any byte
// of it is read, and any other is answered 403 {"error": "not_same_user"}
// and closed. At most MaxConns connections are served at once: at the cap
// the connection that has waited longest with no request under way (none
// sent yet, or idle between requests) is closed to make room, and when every
// one has a request under way Accept waits for one to end. Each has the
// read-header, read and idle timeouts above.
func (s *Server) Serve(ln net.Listener) error {
	dl := &doorListener{Listener: ln, s: s, lim: s.limits, uid: s.uid,
		slots: make(chan struct{}, s.limits.maxConns), refusing: make(chan struct{}, 16), closed: make(chan struct{})}
	return s.hs.Serve(dl)
}

// Shutdown stops Serve (before or after it starts): no new connections,
// idle ones closed, and it waits for active ones until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error { return s.hs.Shutdown(ctx) }

func (s *Server) newHTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.limits.readHeader,
		ReadTimeout:       s.limits.read,
		IdleTimeout:       s.limits.idle,
		ConnState:         s.connState,
	}
}

// connState keeps the connections with no request under way, oldest first,
// for the cap to close.
func (s *Server) connState(c net.Conn, st http.ConnState) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if i := slices.Index(s.waiting, c); i >= 0 {
		s.waiting = slices.Delete(s.waiting, i, i+1)
	}
	if st == http.StateNew || st == http.StateIdle {
		s.waiting = append(s.waiting, c)
	}
}

// closeLongestWaiting closes the connection that has waited longest with
// no request under way; false when there is none.
func (s *Server) closeLongestWaiting() bool {
	s.connMu.Lock()
	if len(s.waiting) == 0 {
		s.connMu.Unlock()
		return false
	}
	c := s.waiting[0]
	s.waiting = s.waiting[1:]
	s.connMu.Unlock()
	s.closedWaiting.Add(1)
	_ = c.Close()
	return true
}

// doorListener applies the same-user rule and the connection cap.
type doorListener struct {
	net.Listener
	s        *Server
	lim      limits
	uid      uint32
	slots    chan struct{} // one per served connection
	refusing chan struct{} // refusals being written and drained
	closed   chan struct{}
	once     sync.Once
}

func (l *doorListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := peerUID(c)
		if err != nil || uid != l.uid {
			l.refuse(c, uid, err)
			continue
		}
		// A slot, only now that someone is there: at the cap, close the
		// connection waiting longest with no request (its slot comes back),
		// or wait for a request to end. One accepted connection at most
		// waits here, so the door holds at most MaxConns+1 of them.
		select {
		case l.slots <- struct{}{}:
		default:
			l.s.closeLongestWaiting()
			select {
			case l.slots <- struct{}{}:
			case <-l.closed:
				c.Close()
				return nil, net.ErrClosed
			}
		}
		n := l.s.open.Add(1)
		for m := l.s.maxOpen.Load(); n > m && !l.s.maxOpen.CompareAndSwap(m, n); m = l.s.maxOpen.Load() {
		}
		return &slotConn{Conn: c, release: func() { l.s.open.Add(-1); <-l.slots }}, nil
	}
}

func (l *doorListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// refuse answers a connection from another user 403 and closes it, in the
// background; past 16 refusals at once the rest are closed unanswered.
func (l *doorListener) refuse(c net.Conn, uid uint32, err error) {
	msg := fmt.Sprintf("this door answers only connections from the user that runs it (uid %d); this connection is from uid %d", l.uid, uid)
	if err != nil {
		msg = fmt.Sprintf("this door answers only connections from the user that runs it (uid %d); this connection's user could not be found: %v", l.uid, err)
	}
	l.s.log.Warn("door: refused a connection from another user", "remote", c.RemoteAddr().String(), "uid", uid, "error", err)
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		body, _ := json.Marshal(doorapi.RefusalBody{Error: RuleSameUser, Message: msg})
		_ = c.SetDeadline(time.Now().Add(l.lim.refuseLinger))
		_, _ = io.WriteString(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: "+
			strconv.Itoa(len(body)+1)+"\r\nConnection: close\r\n\r\n"+string(body)+"\n")
		// Closing with unread bytes would reset the connection and lose the
		// answer: end our side, then drain (unread, bounded) until the peer
		// closes or the linger ends.
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
	}()
}

// slotConn gives its slot back when closed (once).
type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// ownUID is the uid whose connections a door serves.
func ownUID() uint32 { return uint32(os.Geteuid()) }
