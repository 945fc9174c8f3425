package h1

import (
	"bufio"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestConnPoolBound: the pool keeps at most perKey idle connections to one
// key and total in all, evicting the one idle longest, and closes what it
// does not keep, and everything at Close.
func TestConnPoolBound(t *testing.T) {
	p := &Pool{perKey: 3, total: 5, idleFor: time.Hour}
	var all []*Conn
	mk := func(key string) *Conn {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fds[1]) })
		c := &Conn{fd: fds[0], poolKey: key, raw: &rawConn{fd: fds[0]}}
		c.br = bufio.NewReader(c.raw)
		all = append(all, c)
		return c
	}
	for range 4 {
		p.Put(mk("a"))
	}
	if n := p.Size(); n != 3 {
		t.Fatalf("after 4 puts to one key the pool holds %d, want 3", n)
	}
	if !all[3].closed {
		t.Error("the connection over the per-key bound was not closed")
	}
	for k := range 3 {
		p.Put(mk(fmt.Sprint("b", k)))
	}
	if n := p.Size(); n != 5 {
		t.Fatalf("the pool holds %d, want its total bound 5", n)
	}
	if !all[0].closed {
		t.Error("the connection idle longest was not evicted for room")
	}
	if c := p.Get("b1"); c != all[5] || !c.reused {
		t.Errorf("get(b1) = %v, want the connection put under b1, marked reused", c)
	}
	if c := p.Get("b1"); c != nil {
		t.Errorf("a second get(b1) = %v, want none (a connection is never handed out twice)", c)
	}
	p.Close()
	for i, c := range all {
		if i != 5 && !c.closed {
			t.Errorf("connection %d still open after Close", i)
		}
	}
	all[5].Close()
	p.Put(mk("a"))
	if n := p.Size(); n != 0 || !all[len(all)-1].closed {
		t.Error("a closed pool kept a connection")
	}
}

// TestConnPoolExpires: a connection idle for longer than idleFor is closed
// by the pool's sweep.
func TestConnPoolExpires(t *testing.T) {
	p := &Pool{perKey: 3, total: 5, idleFor: 20 * time.Millisecond}
	defer p.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[1])
	c := &Conn{fd: fds[0], poolKey: "a", raw: &rawConn{fd: fds[0]}}
	c.br = bufio.NewReader(c.raw)
	p.Put(c)
	for deadline := time.Now().Add(10 * time.Second); p.Size() > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if p.Size() != 0 {
		t.Fatal("the idle connection was never expired")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		t.Error("the expired connection was not closed")
	}
}
