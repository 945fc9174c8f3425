//go:build !linux

package launch

import "syscall"

// roostProcAttr puts the daemon in its own process group.
func roostProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
