package door

import (
	"errors"
	"net"
	"os"
	"testing"
)

// Both ways of reading a peer's owner find this process's uid for a
// loopback connection it made, and a peer that has gone is not found.
func TestPeerUID(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	local, remote := c.LocalAddr().(*net.TCPAddr), c.RemoteAddr().(*net.TCPAddr)
	want := uint32(os.Geteuid())
	if uid, err := sockDiagUID(remote, local); err != nil || uid != want {
		t.Errorf("sock_diag: uid %d, %v; want %d", uid, err, want)
	}
	if uid, err := procNetUID(remote, local); err != nil || uid != want {
		t.Errorf("/proc/net/tcp: uid %d, %v; want %d", uid, err, want)
	}
	if uid, err := peerUID(c); err != nil || uid != want {
		t.Errorf("peerUID: uid %d, %v; want %d", uid, err, want)
	}
	// A four-tuple no socket has.
	gone := &net.TCPAddr{IP: remote.IP, Port: local.Port}
	if _, err := sockDiagUID(gone, gone); !errors.Is(err, errPeerGone) {
		t.Errorf("sock_diag of no socket: %v", err)
	}
	if _, err := procNetUID(gone, gone); !errors.Is(err, errPeerGone) {
		t.Errorf("/proc/net/tcp of no socket: %v", err)
	}
	client.Close()
}
