package contain_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// attackArg makes the test binary an attack program: it tries one thing
// and exits 0 when that thing worked (an escape), 1 when it was refused.
const attackArg = "__contain-attack"

func attackMain(args []string) int {
	if len(args) < 1 {
		return 2
	}
	err := attack(args[0], args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "refused: %v\n", err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "succeeded")
	return 0
}

func attack(name string, a []string) error {
	switch name {
	case "read":
		_, err := os.ReadFile(a[0])
		return err
	case "write":
		return os.WriteFile(a[0], []byte("escaped"), 0o644)
	case "ptrace":
		pid, _ := strconv.Atoi(a[0])
		if err := unix.PtraceAttach(pid); err != nil {
			return err
		}
		_ = unix.PtraceDetach(pid)
		return nil
	case "procmem":
		pid := a[0]
		if pid == "ppid" {
			pid = strconv.Itoa(os.Getppid())
		}
		f, err := os.Open("/proc/" + pid + "/mem")
		if err != nil {
			return err
		}
		return f.Close()
	case "socket":
		domain := map[string]int{"unix": unix.AF_UNIX, "netlink": unix.AF_NETLINK, "packet": unix.AF_PACKET, "inet": unix.AF_INET}[a[0]]
		typ := unix.SOCK_DGRAM
		if len(a) > 1 && a[1] == "raw" {
			typ = unix.SOCK_RAW
		}
		fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		return unix.Close(fd)
	case "connect":
		// A direct TCP connect, around the proxy.
		c, err := net.DialTimeout("tcp", a[0], 5*time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	case "proxy-get", "proxy-connect":
		// One request through the proxy the environment names; success
		// is a 200 carrying the upstream's answer.
		return throughProxy(name == "proxy-connect", a[0])
	case "ifaces":
		// SIOCGIFCONF, not netlink (which seccomp refuses): the
		// interfaces with an IPv4 address this namespace has.
		names, err := ifconf()
		if err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, strings.Join(names, ","))
		if len(names) == 1 && names[0] == "lo" {
			return fmt.Errorf("only lo: %s", strings.Join(names, ","))
		}
		return nil
	case "forkbomb":
		return forkBomb(a[0])
	case "balloon":
		return balloon(a[0])
	case "privs":
		return privs()
	case "kill":
		pid, _ := strconv.Atoi(a[0])
		return unix.Kill(pid, 0)
	case "memfdexec":
		return memfdExec()
	case "tiocsti":
		return tiocsti()
	}
	return fmt.Errorf("unknown attack %s %s", name, strings.Join(a, " "))
}

// memfdExec writes /bin/true into a memfd and runs it: execveat with
// AT_EMPTY_PATH, then the /proc/self/fd path. A file with no path, which no
// Landlock rule or noexec mount covers.
func memfdExec() error {
	b, err := os.ReadFile("/bin/true")
	if err != nil {
		return err
	}
	fd, err := unix.MemfdCreate("code", 0)
	if err != nil {
		return fmt.Errorf("memfd_create: %w", err)
	}
	if _, err := unix.Write(fd, b); err != nil {
		return err
	}
	empty, _ := unix.BytePtrFromString("")
	arg0, _ := unix.BytePtrFromString("true")
	argv := []*byte{arg0, nil}
	envv := []*byte{nil}
	_, _, e := unix.Syscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])), unix.AT_EMPTY_PATH, 0)
	err2 := unix.Exec(fmt.Sprintf("/proc/self/fd/%d", fd), []string{"true"}, nil)
	return fmt.Errorf("execveat: %v; exec /proc/self/fd/%d: %v", e, fd, err2)
}

// tiocsti takes its stdin, a terminal no session holds, as its controlling
// terminal (it leads a session of its own with none), so that the kernel's
// own TIOCSTI checks pass and only the seccomp filter is left; then pushes
// a byte with TIOCSTI, plainly and with the request's upper bits set.
func tiocsti() error {
	if err := unix.IoctlSetInt(0, unix.TIOCSCTTY, 0); err != nil {
		fmt.Fprintf(os.Stderr, "TIOCSCTTY: %v\n", err)
	}
	var errs []string
	for _, req := range []uint64{unix.TIOCSTI, 1<<32 | unix.TIOCSTI} {
		b := byte('x')
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, 0, uintptr(req), uintptr(unsafe.Pointer(&b))); e != 0 {
			errs = append(errs, fmt.Sprintf("TIOCSTI %#x: %v", req, e))
			continue
		}
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}

func throughProxy(tunnel bool, target string) error {
	pu, err := url.Parse(os.Getenv("HTTP_PROXY"))
	if err != nil || pu.Host == "" {
		return fmt.Errorf("no HTTP_PROXY in the environment")
	}
	c, err := net.DialTimeout("tcp", pu.Host, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	br := bufio.NewReader(c)
	method := "GET"
	if tunnel {
		method = "CONNECT"
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("CONNECT %s: %s: %s", target, resp.Status, b)
		}
		fmt.Fprintf(c, "GET /through HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target)
	} else {
		fmt.Fprintf(c, "GET http://%s/through HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, target)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(string(b), "upstream") {
		return fmt.Errorf("%s %s: %s: %s", method, target, resp.Status, b)
	}
	fmt.Fprintf(os.Stderr, "%s\n", b)
	return nil
}

func ifconf() ([]string, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	const ifreqSize = 40
	buf := make([]byte, 64*ifreqSize)
	conf := struct {
		len int32
		_   int32
		buf uintptr
	}{len: int32(len(buf)), buf: uintptr(unsafe.Pointer(&buf[0]))}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCGIFCONF, uintptr(unsafe.Pointer(&conf))); e != 0 {
		return nil, e
	}
	var names []string
	for off := 0; off+ifreqSize <= int(conf.len); off += ifreqSize {
		n := buf[off : off+unix.IFNAMSIZ]
		if i := strings.IndexByte(string(n), 0); i >= 0 {
			n = n[:i]
		}
		names = append(names, string(n))
	}
	return names, nil
}

// forkBomb starts n processes that stay alive (sleep) and succeeds only if
// every one started. It uses raw fork through /bin/sh so that the Go
// runtime's own threads are not what the cap meets first.
func forkBomb(n string) error {
	out, err := exec.Command("/bin/sh", "-c", `i=0; while [ $i -lt `+n+` ]; do sleep 20 >/dev/null 2>&1 & i=$((i+1)); done; echo started $i`).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, lastLine(out))
	}
	if !strings.Contains(string(out), "started "+n) {
		return fmt.Errorf("%s", lastLine(out))
	}
	return nil
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// balloon touches mib MiB and succeeds if it held them all.
func balloon(mib string) error {
	n, _ := strconv.Atoi(mib)
	var keep [][]byte
	for i := 0; i < n; i++ {
		b, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil {
			return fmt.Errorf("after %d MiB: %w", i, err)
		}
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		keep = append(keep, b)
	}
	fmt.Fprintf(os.Stderr, "held %d MiB\n", len(keep))
	return nil
}

// privs succeeds if this process holds any effective capability or an
// effective uid of 0 that its real uid is not: what a setuid-root binary
// would give.
func privs() error {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			if c, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64); c != 0 {
				return nil
			}
		}
	}
	if os.Geteuid() == 0 && os.Getuid() != 0 {
		return nil
	}
	return fmt.Errorf("uid %d euid %d, no effective capabilities", os.Getuid(), os.Geteuid())
}

func killPid(pid string) error {
	n, _ := strconv.Atoi(pid)
	return unix.Kill(n, unix.SIGKILL)
}
