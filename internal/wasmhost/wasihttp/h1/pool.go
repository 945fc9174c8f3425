package h1

import (
	"strings"
	"sync"
	"time"
)

// Pool holds idle connections between exchanges, by origin and the
// address dialled (scheme://authority/ip:port): a run's caller hands one
// in (Grant.Conns in internal/wasmhost/wasihttp; DefaultPool otherwise), so a
// connection outlives the run that dialled it and the next run to the same
// origin and address takes it (wasihttp's RATIONALE.md, "Connections kept
// across runs"). A connection goes back only after a response read to its end
// that neither side ended with close; it is never in the pool while an
// exchange uses it. The pool is bounded per key and in total, closes a
// connection idle for longer than idleFor, and closes all at Close.
type Pool struct {
	mu      sync.Mutex
	idle    map[string][]*Conn
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

// NewPool is a pool with the bounds above.
func NewPool() *Pool {
	return &Pool{perKey: maxIdlePerKey, total: maxIdleTotal, idleFor: idleTimeout}
}

// Get takes an idle connection kept under key that can take another
// request, closing the stale ones it finds; nil if there is none.
func (p *Pool) Get(key string) *Conn {
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
		if c.IdleOK() && time.Since(c.idleSince) < p.idleFor {
			c.reused = true
			return c
		}
		c.Close()
	}
}

// Put keeps c idle under its key for a later Get, or closes it when the
// pool is closed or full for the key.
func (p *Pool) Put(c *Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle[c.poolKey]) >= p.perKey {
		c.Close()
		return
	}
	if p.n >= p.total {
		p.evictOldest()
	}
	if p.idle == nil {
		p.idle = map[string][]*Conn{}
	}
	c.idleSince = time.Now()
	p.idle[c.poolKey] = append(p.idle[c.poolKey], c)
	p.n++
	if p.sweep == nil {
		p.sweep = time.AfterFunc(p.idleFor, p.expire)
	}
}

// evictOldest closes the connection idle longest, to make room.
func (p *Pool) evictOldest() {
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
	l[0].Close()
	if len(l) == 1 {
		delete(p.idle, key)
	} else {
		p.idle[key] = append(l[:0:0], l[1:]...)
	}
	p.n--
}

// expire closes the connections idle for idleFor, and runs again while
// any are left.
func (p *Pool) expire() {
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
			if c.idleSince.After(cut) && c.IdleOK() {
				keep = append(keep, c)
			} else {
				c.Close()
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

// Size is the number of idle connections.
func (p *Pool) Size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// CloseIdle closes the idle connections (as net/http's
// Transport.CloseIdleConnections does); connections in use are not
// touched, and later exchanges dial and keep connections again; the pool stays open.
func (p *Pool) CloseIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.idle {
		for _, c := range l {
			c.Close()
		}
	}
	p.idle, p.n = nil, 0
}

// Close closes the idle connections and the pool: a connection put back
// later is closed.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.sweep != nil {
		p.sweep.Stop()
		p.sweep = nil
	}
	for _, l := range p.idle {
		for _, c := range l {
			c.Close()
		}
	}
	p.idle, p.n = nil, 0
}

// DefaultPool is the process's pool, as net/http's DefaultTransport is its
// transport: what a run's exchanges use when its caller hands in none.
var DefaultPool = NewPool()

// Usable reports whether the pool keeps an idle connection that can take
// another request under a key containing s (a scheme://authority or an
// address).
func (p *Pool) Usable(s string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, l := range p.idle {
		if strings.Contains(k, s) {
			for _, c := range l {
				if c.IdleOK() {
					return true
				}
			}
		}
	}
	return false
}
