package command

import (
	"errors"
	"os"
	"os/exec"
	"strconv"

	"golang.org/x/sys/unix"
)

// awaitExit returns once the leader has exited, without reaping it: while
// it is a zombie its pid, and so the group's id, cannot be reused, so the
// group kill that follows cannot reach a stranger. The caller reaps it.
func awaitExit(c *exec.Cmd) (reaped bool, err error) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, c.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return false, nil
		}
	}
}

// closeInherited marks every descriptor above 2 close-on-exec, so a
// descriptor mur itself inherited without the flag (a spawner's lifeline,
// a test harness's pipe) never reaches a command. Go opens its own
// descriptors close-on-exec already, and hands ExtraFiles over by dup2,
// which clears the flag on the child's copy only.
func closeInherited() {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return
	}
	// Kernels before 5.11: one descriptor at a time.
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}
