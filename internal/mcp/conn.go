package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ProbeTimeout is how long a server/discover probe waits for an answer
// before the server is taken for a legacy one and sent initialize on the
// same connection (the SDK has no probe timeout of its own).
var ProbeTimeout = 5 * time.Second

// errTooLarge is a message past MaxMessageBytes.
var errTooLarge = errors.New("a message passed 16 MiB")

// transport wraps the SDK's transport: the connection it makes answers the
// server's own requests, times the discover probe out, and keeps the raw
// result of the call in flight.
type transport struct {
	inner sdk.Transport
	hooks connHooks
	made  *conn
}

// connHooks are what a connection tells its server.
type connHooks struct {
	denied func(method string)
	note   func(method string, params json.RawMessage)
}

func (t *transport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.made = newConn(c, t.hooks)
	return t.made, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

// conn sits between the SDK's session and its connection.
type conn struct {
	inner    sdk.Connection
	hooks    connHooks
	incoming chan readResult
	inject   chan jsonrpc.Message
	closed   chan struct{}
	once     sync.Once

	mu          sync.Mutex
	discoverID  jsonrpc.ID
	discoverSet bool
	probeTimer  *time.Timer
	drop        map[jsonrpc.ID]bool
	callID      jsonrpc.ID
	callSet     bool
	callRaw     json.RawMessage
}

func newConn(inner sdk.Connection, h connHooks) *conn {
	c := &conn{inner: inner, hooks: h, incoming: make(chan readResult), inject: make(chan jsonrpc.Message, 1),
		closed: make(chan struct{}), drop: map[jsonrpc.ID]bool{}}
	go c.pump()
	return c
}

// pump reads the server's messages: a request other than ping is answered
// -32601 here and never reaches the SDK (which would answer roots/list);
// a late answer to a probe that timed out is dropped.
func (c *conn) pump() {
	for {
		msg, err := c.inner.Read(context.Background())
		if err != nil {
			select {
			case c.incoming <- readResult{err: err}:
			case <-c.closed:
			}
			return
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			if m.ID.IsValid() && m.Method != "ping" {
				resp := &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
					Message: "murmur does not provide " + clipMethod(m.Method)}}
				_ = c.inner.Write(context.Background(), resp)
				if c.hooks.denied != nil {
					c.hooks.denied(clipMethod(m.Method))
				}
				continue
			}
			if !m.ID.IsValid() && c.hooks.note != nil {
				c.hooks.note(m.Method, m.Params)
			}
		case *jsonrpc.Response:
			c.mu.Lock()
			if c.drop[m.ID] {
				delete(c.drop, m.ID)
				c.mu.Unlock()
				continue
			}
			if c.discoverSet && m.ID == c.discoverID {
				c.discoverSet = false
				if c.probeTimer != nil {
					c.probeTimer.Stop()
				}
			}
			if c.callSet && m.ID == c.callID && m.Error == nil {
				c.callRaw = m.Result
			}
			c.mu.Unlock()
		}
		select {
		case c.incoming <- readResult{msg: msg}:
		case <-c.closed:
			return
		}
	}
}

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.inject:
		return m, nil
	default:
	}
	select {
	case r := <-c.incoming:
		return r.msg, r.err
	case m := <-c.inject:
		return m, nil
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.ID.IsValid() {
		c.mu.Lock()
		switch r.Method {
		case "server/discover":
			id := r.ID
			c.discoverID, c.discoverSet = id, true
			c.probeTimer = time.AfterFunc(ProbeTimeout, func() {
				c.mu.Lock()
				if !c.discoverSet || c.discoverID != id {
					c.mu.Unlock()
					return
				}
				c.discoverSet = false
				c.drop[id] = true
				c.mu.Unlock()
				// Any error that is not a modern one sends the SDK on to
				// initialize, on the same process.
				select {
				case c.inject <- &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
					Message: "no answer to server/discover"}}:
				case <-c.closed:
				}
			})
		case "tools/call":
			c.callID, c.callSet, c.callRaw = r.ID, true, nil
		}
		c.mu.Unlock()
	}
	return c.inner.Write(ctx, msg)
}

// takeResult is the raw result of the last tools/call, nil when none came.
func (c *conn) takeResult() json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.callRaw
	c.callRaw, c.callSet = nil, false
	return r
}

func (c *conn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.inner.Close()
}

func (c *conn) SessionID() string { return c.inner.SessionID() }

func clipMethod(m string) string {
	if len(m) > 128 {
		return m[:128]
	}
	return m
}

// lineReader is the server's stdout as the SDK reads it: it fails a line
// past the message bound with errTooLarge (so the cause is known, not only
// that the stream broke), and keeps the first bytes of recent lines, so a
// line that is not JSON-RPC can be quoted.
type lineReader struct {
	r     io.Reader
	limit int64

	mu       sync.Mutex
	cur      int64
	head     []byte
	heads    [][]byte // the first 128 bytes of the last lines, oldest first
	tooLarge bool
}

func (l *lineReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	b := p[:n]
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		seg := b
		if i >= 0 {
			seg = b[:i]
		}
		if room := 128 - len(l.head); room > 0 {
			l.head = append(l.head, seg[:min(room, len(seg))]...)
		}
		l.cur += int64(len(seg))
		if l.cur > l.limit {
			l.tooLarge = true
			return n, errTooLarge
		}
		if i < 0 {
			break
		}
		l.endLine()
		b = b[i+1:]
	}
	return n, err
}

func (l *lineReader) endLine() {
	if len(bytes.TrimSpace(l.head)) > 0 {
		l.heads = append(l.heads, l.head)
		if len(l.heads) > 16 {
			l.heads = l.heads[1:]
		}
	}
	l.head, l.cur = nil, 0
}

// garbage is the first recent line that cannot be a JSON-RPC message.
func (l *lineReader) garbage() (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := append(append([][]byte{}, l.heads...), l.head)
	for _, h := range lines {
		t := bytes.TrimSpace(h)
		if len(t) > 0 && t[0] != '{' && t[0] != '[' {
			return string(h), true
		}
		if len(t) > 0 && len(h) < 128 && !json.Valid(t) {
			return string(h), true
		}
	}
	return "", false
}

func (l *lineReader) over() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tooLarge
}
