package roost

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// noPeer is the uid of a registering process the daemon could not learn.
const noPeer = -1

// requestPeer is the uid owning the client's end of r's connection, or
// noPeer. The daemon listens on loopback TCP, where the kernel keeps no peer
// credentials; the client's socket is in the same network namespace, so its
// owner is found in the kernel's socket table by the connection's two ends.
func requestPeer(r *http.Request) int {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	la, ok := local.(*net.TCPAddr)
	if !ok {
		return noPeer
	}
	ra, err := net.ResolveTCPAddr("tcp", r.RemoteAddr)
	if err != nil {
		return noPeer
	}
	uid, err := socketUID(ra, la)
	if err != nil {
		return noPeer
	}
	return uid
}

// socketUID is the uid owning the TCP socket whose own end is src and whose
// other end is dst: one exact NETLINK_SOCK_DIAG lookup, or a read of
// /proc/net/tcp where inet_diag is not available.
func socketUID(src, dst *net.TCPAddr) (int, error) {
	uid, err := diagUID(src, dst)
	if err == nil {
		return uid, nil
	}
	return procTCPUID(src, dst)
}

const (
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	inetDiagReqLen   = 56 // struct inet_diag_req_v2
	inetDiagUIDOff   = 64 // idiag_uid in struct inet_diag_msg
)

func diagUID(src, dst *net.TCPAddr) (int, error) {
	s4, d4 := src.IP.To4(), dst.IP.To4()
	if s4 == nil || d4 == nil {
		return noPeer, errors.New("not an IPv4 connection")
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_INET_DIAG)
	if err != nil {
		return noPeer, err
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 1}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)

	msg := make([]byte, unix.NLMSG_HDRLEN+inetDiagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(len(msg)))
	ne.PutUint16(msg[4:], sockDiagByFamily)
	ne.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(msg[8:], 1)
	req := msg[unix.NLMSG_HDRLEN:]
	req[0], req[1] = unix.AF_INET, unix.IPPROTO_TCP
	ne.PutUint32(req[4:], 0xffffffff) // every state
	binary.BigEndian.PutUint16(req[8:], uint16(src.Port))
	binary.BigEndian.PutUint16(req[10:], uint16(dst.Port))
	copy(req[12:16], s4)
	copy(req[28:32], d4)
	ne.PutUint32(req[48:], 0xffffffff) // INET_DIAG_NOCOOKIE
	ne.PutUint32(req[52:], 0xffffffff)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return noPeer, err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return noPeer, err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return noPeer, err
	}
	for _, m := range msgs {
		switch m.Header.Type {
		case unix.NLMSG_ERROR:
			if len(m.Data) >= 4 {
				if e := int32(ne.Uint32(m.Data)); e != 0 {
					return noPeer, unix.Errno(-e)
				}
			}
			return noPeer, errors.New("sock_diag: error without errno")
		case sockDiagByFamily:
			if len(m.Data) < inetDiagUIDOff+4 {
				return noPeer, errors.New("sock_diag: short answer")
			}
			return int(ne.Uint32(m.Data[inetDiagUIDOff:])), nil
		}
	}
	return noPeer, errors.New("sock_diag: no answer")
}

// procTCPUID finds the socket in /proc/net/tcp: local_address is src,
// rem_address dst, and the eighth field its uid.
func procTCPUID(src, dst *net.TCPAddr) (int, error) {
	want := procAddr(src) + " " + procAddr(dst)
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return noPeer, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 || fs[1]+" "+fs[2] != want {
			continue
		}
		return strconv.Atoi(fs[7])
	}
	return noPeer, fmt.Errorf("no socket %s in /proc/net/tcp", want)
}

// procAddr is an IPv4 address and port as /proc/net/tcp prints them: the
// address as a host-order 32-bit number, the port big-endian, both in hex.
func procAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		return ""
	}
	return fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32(ip), a.Port)
}
