// Command ttyinject is the terminal-injection attack of the containment
// tests (issue 22 item 1): run as a capsule's shell tool, it tries every way
// a contained command could push keystrokes into the operator's terminal
// with TIOCSTI (and TIOCLINUX), and prints what each attempt met. It exits 0
// when any byte was injected, 1 when every attempt was refused.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"
)

const (
	tiocsti   = 0x5412
	tioclinux = 0x541C
)

func ioctl(fd int, req uint64, arg unsafe.Pointer) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

// inject pushes line into fd's terminal byte by byte; req lets the caller
// set the upper bits the kernel ignores.
func inject(fd int, req uint64, line string) error {
	for i := 0; i < len(line); i++ {
		b := line[i]
		if err := ioctl(fd, req, unsafe.Pointer(&b)); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	marker := "injected"
	if len(os.Args) > 1 {
		marker = os.Args[1]
	}
	line := "echo " + marker + "\n"
	sid, _, _ := syscall.RawSyscall(syscall.SYS_GETSID, 0, 0, 0)
	fmt.Printf("pid %d sid %d pgid %d\n", os.Getpid(), sid, syscall.Getpgrp())
	injected := false
	try := func(what string, fd int, req uint64) {
		if err := inject(fd, req, line); err != nil {
			fmt.Printf("%s: TIOCSTI refused: %v\n", what, err)
			return
		}
		fmt.Printf("%s: TIOCSTI INJECTED %q\n", what, line)
		injected = true
	}
	if fd, err := syscall.Open("/dev/tty", syscall.O_RDWR, 0); err != nil {
		fmt.Printf("open /dev/tty: %v\n", err)
	} else {
		try("/dev/tty", fd, tiocsti)
		try("/dev/tty (request with upper bits set)", fd, 1<<32|tiocsti)
		sub := byte(2) // TIOCL_SETSEL's neighbour: any subcode shows the filter
		if err := ioctl(fd, tioclinux, unsafe.Pointer(&sub)); err != nil {
			fmt.Printf("/dev/tty: TIOCLINUX refused: %v\n", err)
		} else {
			fmt.Printf("/dev/tty: TIOCLINUX accepted\n")
		}
		syscall.Close(fd)
	}
	for fd := 0; fd <= 2; fd++ {
		try(fmt.Sprintf("fd %d", fd), fd, tiocsti)
	}
	// A terminal the command can name: the operator's own pty.
	pts, _ := filepath.Glob("/dev/pts/[0-9]*")
	for _, p := range pts {
		fd, err := syscall.Open(p, syscall.O_RDWR|syscall.O_NOCTTY, 0)
		if err != nil {
			fmt.Printf("open %s: %v\n", p, err)
			continue
		}
		try(p, fd, tiocsti)
		try(p+" (request with upper bits set)", fd, 1<<32|tiocsti)
		syscall.Close(fd)
	}
	if injected {
		os.Exit(0)
	}
	os.Exit(1)
}
