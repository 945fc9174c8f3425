// Command spawn runs the command given as its arguments, waits for it and
// prints the command's ru_maxrss in KiB on stdout (the command's own output
// goes to stderr). BenchmarkWholeProcess starts processes through it.
//
// Why a separate small process: Go starts a child with CLONE_VM, and Linux
// records the pre-exec address space's high-water mark in the child's
// ru_maxrss, so a command started straight from a large process (the test
// binary links all of mur) reports at least that process's RSS. From this
// spawner the floor is its own couple of MiB, which the /bin/true row shows.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: spawn COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "spawn:", err)
		os.Exit(1)
	}
	fmt.Println(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
}
