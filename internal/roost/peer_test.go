package roost

import (
	"net"
	"os"
	"testing"
)

// TestSocketUID: both ways of finding a loopback client's socket owner name
// this process's uid, and a socket that does not exist is an error.
func TestSocketUID(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The server's view: the client is RemoteAddr, the daemon LocalAddr.
	src, dst := s.RemoteAddr().(*net.TCPAddr), s.LocalAddr().(*net.TCPAddr)
	for name, f := range map[string]func(src, dst *net.TCPAddr) (int, error){"sock_diag": diagUID, "/proc/net/tcp": procTCPUID} {
		uid, err := f(src, dst)
		if err != nil || uid != os.Getuid() {
			t.Errorf("%s: uid %d, %v; want %d", name, uid, err, os.Getuid())
		}
		gone := &net.TCPAddr{IP: src.IP, Port: 1}
		if uid, err := f(gone, dst); err == nil {
			t.Errorf("%s: a socket that does not exist has uid %d", name, uid)
		}
	}
}
