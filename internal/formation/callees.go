package formation

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// AddressWait is how long a caller waits for a callee's address (line 2)
// before the call fails (§22.9, §22.10).
const AddressWait = 10 * time.Second

// Callees is one member's view of the members it may call: their names in
// roster order and the token for each edge, from line 1, and their doors,
// from line 2 once the launcher writes it. It is safe for concurrent use.
type Callees struct {
	names  []string
	tokens map[string]string

	mu    sync.Mutex
	urls  map[string]string
	ready chan struct{} // closed once line 2 was read, or can never be
}

// NewCallees reads line 2 from br in the background (br is the reader
// ReadLine1 read). A line 2 that does not parse, or a channel that ends
// first, is logged and leaves every address unknown: calls then fail as
// having no address.
func NewCallees(l1 *Line1, br *bufio.Reader, log *slog.Logger) *Callees {
	c := newCallees(l1)
	if br == nil || len(c.names) == 0 {
		close(c.ready)
		return c
	}
	go func() {
		defer close(c.ready)
		l2, err := ReadLine2(br)
		if err != nil {
			if log != nil {
				log.Warn("the formation channel's addresses line is unusable", "error", err)
			}
			return
		}
		c.setAddresses(l2)
	}()
	return c
}

func newCallees(l1 *Line1) *Callees {
	c := &Callees{tokens: map[string]string{}, urls: map[string]string{}, ready: make(chan struct{})}
	for _, call := range l1.Calls {
		c.names = append(c.names, call.Name)
		c.tokens[call.Name] = call.Token
	}
	return c
}

func (c *Callees) setAddresses(l2 *Line2) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range l2.Addresses {
		if _, ok := c.tokens[a.Name]; ok {
			c.urls[a.Name] = a.URL
		}
	}
}

// Names is the callees in roster order (nil when there are none).
func (c *Callees) Names() []string {
	if c == nil {
		return nil
	}
	return c.names
}

// Has reports whether name is a callee.
func (c *Callees) Has(name string) bool {
	if c == nil {
		return false
	}
	_, ok := c.tokens[name]
	return ok
}

// Token is the formation token for the edge to callee name.
func (c *Callees) Token(name string) string {
	if c == nil {
		return ""
	}
	return c.tokens[name]
}

// Address is callee name's door URL, waiting for line 2 up to wait (or
// ctx). The error says why there is none: not a callee, or no address
// within wait.
func (c *Callees) Address(ctx context.Context, name string, wait time.Duration) (string, error) {
	if !c.Has(name) {
		return "", fmt.Errorf("'%s' is not a member this capsule may call", name)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-c.ready:
	case <-t.C:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	c.mu.Lock()
	u := c.urls[name]
	c.mu.Unlock()
	if u == "" {
		return "", fmt.Errorf("member '%s' had no address within %s", name, wait)
	}
	return u, nil
}
