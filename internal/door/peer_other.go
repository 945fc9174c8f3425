//go:build !linux

package door

import (
	"errors"
	"net"
)

var errPeerGone = errors.New("the peer's socket is no longer in the kernel's table")

// peerUID needs Linux's socket table; elsewhere every connection is refused.
func peerUID(net.Conn) (uint32, error) {
	return 0, errors.New("finding a connection's user needs Linux")
}
