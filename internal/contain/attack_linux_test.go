package contain_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"

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
		f, err := os.Open("/proc/" + a[0] + "/mem")
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
	case "kill":
		pid, _ := strconv.Atoi(a[0])
		return unix.Kill(pid, 0)
	}
	return fmt.Errorf("unknown attack %s %s", name, strings.Join(a, " "))
}
