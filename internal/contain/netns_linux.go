package contain

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// netFD is where the helper finds its end of the hand-off socket: the
// second ExtraFile, after the plan.
const netFD = 4

// netSocketpair makes the hand-off socket of a network-namespace command:
// the helper's end (for ExtraFiles) and the runtime's.
func netSocketpair() (child, parent *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("network namespace hand-off socket: %w", err)
	}
	return os.NewFile(uintptr(fds[1]), "netns-child"), os.NewFile(uintptr(fds[0]), "netns-parent"), nil
}

// handOff is the runtime's side of a command's network namespace: it
// receives the proxy's listener and the helper's pidfd, serves the listener
// with eg while the process lives, then closes it — the listener alone
// would keep the emptied namespace alive. A helper that fails before the
// hand-off just closes its end; its stderr says why.
func handOff(parent *os.File, eg Egress) {
	defer parent.Close()
	c, err := net.FileConn(parent)
	if err != nil {
		slog.Warn("egress: the network namespace hand-off socket is unusable", "err", err)
		return
	}
	defer c.Close()
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return
	}
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(2*4))
	n, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil || n == 0 {
		return
	}
	fds, err := parseRights(oob[:oobn])
	if err != nil || len(fds) != 2 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		slog.Warn("egress: the helper handed out no listener", "err", err)
		return
	}
	lnFile, pidfd := os.NewFile(uintptr(fds[0]), "egress-listener"), fds[1]
	defer unix.Close(pidfd)
	ln, err := net.FileListener(lnFile)
	lnFile.Close()
	if err != nil {
		slog.Warn("egress: the handed-out listener is unusable", "err", err)
		return
	}
	go func() {
		if err := eg.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) {
			slog.Warn("egress: serving a command's network namespace", "err", err)
		}
	}()
	waitPidfd(pidfd)
	ln.Close()
}

func parseRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for i := range msgs {
		r, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			continue
		}
		for _, fd := range r {
			unix.CloseOnExec(fd)
		}
		fds = append(fds, r...)
	}
	return fds, nil
}

// waitPidfd blocks until the process behind pidfd has exited.
func waitPidfd(pidfd int) {
	pfd := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, -1)
		if err == nil && n > 0 {
			return
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// setupNetNS runs in the helper, inside the new network namespace: it
// brings loopback up, makes the proxy's listener at ProxyAddr and hands it
// out on netFD with a pidfd of this process (the command, once it execs).
func setupNetNS() error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	ifr, err := unix.NewIfreq("lo")
	if err == nil {
		err = unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr)
	}
	if err == nil {
		ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
		err = unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr)
	}
	unix.Close(s)
	if err != nil {
		return fmt.Errorf("bringing loopback up: %w", err)
	}
	l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("the egress listener: %w", err)
	}
	defer unix.Close(l)
	ap, err := netip4(ProxyAddr)
	if err != nil {
		return err
	}
	if err := unix.Bind(l, ap); err != nil {
		return fmt.Errorf("binding the egress listener at %s: %w", ProxyAddr, err)
	}
	if err := unix.Listen(l, 128); err != nil {
		return fmt.Errorf("the egress listener: %w", err)
	}
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return fmt.Errorf("pidfd_open: %w", err)
	}
	defer unix.Close(pidfd)
	if err := unix.Sendmsg(netFD, []byte{'L'}, unix.UnixRights(l, pidfd), nil, 0); err != nil {
		return fmt.Errorf("handing the egress listener out: %w", err)
	}
	return unix.Close(netFD)
}

func netip4(addr string) (*unix.SockaddrInet4, error) {
	a, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil || a.IP.To4() == nil {
		return nil, fmt.Errorf("the egress address %s is not IPv4 host:port", addr)
	}
	sa := &unix.SockaddrInet4{Port: a.Port}
	copy(sa.Addr[:], a.IP.To4())
	return sa, nil
}
