package launch

import "syscall"

// roostProcAttr puts the daemon in its own process group (a terminal's ^C
// reaches mur, which ends the daemon after session_end) and has the kernel
// send it SIGTERM if mur dies without ending it (kill -9, the hard exit).
func roostProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
