package door

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// errPeerGone says the peer's socket is not in the kernel's table: it
// closed before it was looked up.
var errPeerGone = errors.New("the peer's socket is no longer in the kernel's table")

// peerUID is the uid that owns the other end of c, a TCP connection on this
// host: the kernel's socket table is asked (NETLINK_SOCK_DIAG, an exact
// lookup of the peer's socket by its four-tuple), with /proc/net/tcp[6] as a
// fallback where sock_diag fails or finds nothing. While c is open the peer's
// socket is in the table (a closed peer's lingers in FIN_WAIT/TIME_WAIT, and
// a socket in TIME_WAIT has no owner: that is errPeerGone too).
func peerUID(c net.Conn) (uint32, error) {
	local, ok1 := c.LocalAddr().(*net.TCPAddr)
	remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("not a TCP connection (%T)", c.LocalAddr())
	}
	uid, err := sockDiagUID(remote, local)
	if err == nil {
		return uid, nil
	}
	// sock_diag also answers ENOENT when inet_diag is not loaded, so any
	// failure is checked against /proc before the connection is refused.
	uid, perr := procNetUID(remote, local)
	if perr == nil {
		return uid, nil
	}
	if errors.Is(err, errPeerGone) {
		return 0, perr
	}
	return 0, err
}

// Layout of struct inet_diag_req_v2 and inet_diag_msg (linux/inet_diag.h).
const (
	nlmsgHdrLen    = 16
	inetDiagReqLen = 56
	inetDiagUIDOff = 4 + 48 + 12 // family..retrans, sockid, expires/rqueue/wqueue
)

// sockDiagUID asks the kernel for the socket whose own end is self and
// whose other end is other, and returns its owner.
func sockDiagUID(self, other *net.TCPAddr) (uint32, error) {
	family := uint8(unix.AF_INET)
	ip, oip := self.IP.To4(), other.IP.To4()
	if ip == nil || oip == nil {
		family, ip, oip = unix.AF_INET6, self.IP.To16(), other.IP.To16()
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, fmt.Errorf("sock_diag socket: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 1}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)

	req := make([]byte, nlmsgHdrLen+inetDiagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1)
	r := req[nlmsgHdrLen:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	ne.PutUint32(r[4:], 0xffffffff) // every state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], uint16(self.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(other.Port))
	copy(id[4:20], ip)
	copy(id[20:36], oip)
	ne.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, fmt.Errorf("sock_diag request: %w", err)
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, fmt.Errorf("sock_diag answer: %w", err)
	}
	if n < nlmsgHdrLen {
		return 0, fmt.Errorf("sock_diag answer of %d bytes", n)
	}
	switch typ := ne.Uint16(buf[4:]); typ {
	case unix.NLMSG_ERROR:
		if n < nlmsgHdrLen+4 {
			return 0, errors.New("sock_diag: short error")
		}
		errno := unix.Errno(-int32(ne.Uint32(buf[nlmsgHdrLen:])))
		if errno == unix.ENOENT {
			return 0, errPeerGone
		}
		return 0, fmt.Errorf("sock_diag: %w", errno)
	case unix.SOCK_DIAG_BY_FAMILY:
		if n < nlmsgHdrLen+inetDiagUIDOff+4 {
			return 0, fmt.Errorf("sock_diag answer of %d bytes", n)
		}
		msg := buf[nlmsgHdrLen:n]
		// The kernel's exact lookup falls back to a listening socket on
		// self's address, and a TIME_WAIT socket has no owner: neither is
		// the peer. The answer must name the four-tuple asked for.
		if msg[1] == unix.BPF_TCP_TIME_WAIT || msg[1] == unix.BPF_TCP_LISTEN ||
			!bytes.Equal(msg[4:40], id[0:36]) {
			return 0, errPeerGone
		}
		return ne.Uint32(msg[inetDiagUIDOff:]), nil
	default:
		return 0, fmt.Errorf("sock_diag answered message type %d", typ)
	}
}

// procNetUID finds the socket whose own end is self and whose other end is
// other in /proc/net/tcp (or tcp6) and returns its uid column.
func procNetUID(self, other *net.TCPAddr) (uint32, error) {
	file, v4 := "/proc/net/tcp", self.IP.To4() != nil && other.IP.To4() != nil
	if !v4 {
		file = "/proc/net/tcp6"
	}
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	want, wantRem := procAddr(self, v4), procAddr(other, v4)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 || fs[1] != want || fs[2] != wantRem || fs[3] == "06" { // 06: TIME_WAIT
			continue
		}
		uid, err := strconv.ParseUint(fs[7], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%s: uid %q: %w", file, fs[7], err)
		}
		return uint32(uid), nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errPeerGone
}

// procAddr writes a as /proc/net/tcp does: the address as host-order 32-bit
// words in hex, a colon, the port in hex.
func procAddr(a *net.TCPAddr, v4 bool) string {
	ip := a.IP.To16()
	if v4 {
		ip = a.IP.To4()
	}
	var b strings.Builder
	for i := 0; i < len(ip); i += 4 {
		fmt.Fprintf(&b, "%08X", binary.NativeEndian.Uint32(ip[i:i+4]))
	}
	fmt.Fprintf(&b, ":%04X", a.Port)
	return b.String()
}
