package contain

import (
	"fmt"
	"os"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

const mechAdvisory = MechSeccompOnly

// allowed are the syscalls a contained command may make with any arguments.
// Everything else gets EPERM — among them (docs/containment.md "The
// seccomp allow-list") unshare, setns,
// mount, umount2, pivot_root, chroot, ptrace, process_vm_*, bpf,
// perf_event_open, userfaultfd, the keyring calls, module and kexec calls,
// clock setting, reboot, swapon/swapoff, the new mount API and io_uring.
// clone, socket, socketpair and personality are allowed only with the
// arguments in seccompPolicy.
var allowed = []string{
	// files and descriptors
	"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2",
	"open", "openat", "openat2", "creat", "close", "close_range", "dup", "dup2", "dup3", "fcntl", "flock",
	"lseek", "stat", "fstat", "lstat", "newfstatat", "statx", "statfs", "fstatfs", "access", "faccessat", "faccessat2",
	"readlink", "readlinkat", "getdents", "getdents64", "getcwd", "chdir", "fchdir",
	"mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2", "link", "linkat",
	"symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
	"truncate", "ftruncate", "fallocate", "fsync", "fdatasync", "sync", "syncfs", "sync_file_range",
	"utime", "utimes", "utimensat", "futimesat", "umask", "mknod", "mknodat",
	"getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
	"setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
	"sendfile", "splice", "tee", "vmsplice", "copy_file_range", "fadvise64", "readahead",
	"pipe", "pipe2", "ioctl", "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
	"fanotify_mark", "memfd_create", "eventfd", "eventfd2", "signalfd", "signalfd4", "timerfd_create",
	"timerfd_settime", "timerfd_gettime", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait",
	"epoll_pwait", "epoll_pwait2", "poll", "ppoll", "select", "pselect6",
	// memory
	"brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "msync", "mincore", "mlock", "mlock2",
	"munlock", "mlockall", "munlockall", "membarrier", "get_mempolicy", "set_mempolicy", "mbind",
	// processes, threads, signals
	"execve", "execveat", "fork", "vfork", "exit", "exit_group", "wait4", "waitid",
	"kill", "tkill", "tgkill", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending",
	"rt_sigtimedwait", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "rt_sigsuspend", "sigaltstack", "pause",
	"getpid", "getppid", "gettid", "getpgid", "setpgid", "getpgrp", "getsid", "setsid",
	"getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups",
	"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid",
	"capget", "capset", "prctl", "arch_prctl", "set_tid_address", "set_robust_list", "get_robust_list",
	"rseq", "futex", "futex_waitv", "sched_yield", "sched_getaffinity", "sched_setaffinity",
	"sched_getparam", "sched_setparam", "sched_getscheduler", "sched_setscheduler",
	"sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval", "sched_getattr", "sched_setattr",
	"getpriority", "setpriority", "getrlimit", "setrlimit", "prlimit64", "getrusage", "times",
	"pidfd_open", "pidfd_send_signal", "pidfd_getfd", "ioprio_get", "ioprio_set",
	"restart_syscall", "seccomp", "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
	// time
	"nanosleep", "clock_nanosleep", "clock_gettime", "clock_getres", "gettimeofday", "time",
	"alarm", "getitimer", "setitimer", "timer_create", "timer_settime", "timer_gettime",
	"timer_getoverrun", "timer_delete",
	// system information
	"uname", "sysinfo", "getrandom", "getcpu",
	// network (socket itself is conditional)
	"bind", "connect", "listen", "accept", "accept4", "getsockname", "getpeername", "getsockopt",
	"setsockopt", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "shutdown",
	// SysV IPC and message queues stay inside the caller's IPC namespace
	"shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl",
	"msgget", "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive",
	"mq_notify", "mq_getsetattr",
}

// allowList is the plan's unconditional allow-list, narrowed to the names
// this architecture's table knows.
func allowList() []string {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(allowed))
	for _, n := range allowed {
		if _, ok := info.SyscallNames[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// nsFlags are clone's namespace bits, refused (CLONE_NEWTIME shares its
// value with CSIGNAL bits in clone(2), so it is refused through unshare only).
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWCGROUP

// enosys is the action for clone3: its flags sit in memory BPF cannot read,
// and ENOSYS (not EPERM) makes libc and Go fall back to clone(2).
const enosys = seccomp.Action(uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS))

func seccompPolicy(sp SeccompPlan) seccomp.Policy {
	eq := func(arg uint32, v uint64) seccomp.ArgumentConditions {
		return seccomp.ArgumentConditions{{Argument: arg, Operation: seccomp.Equal, Value: v}}
	}
	cond := []seccomp.NameWithConditions{
		{Name: "socket", Conditions: eq(0, unix.AF_INET)},
		{Name: "socket", Conditions: eq(0, unix.AF_INET6)},
		{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsNotSet, Value: nsFlags}}},
		{Name: "personality", Conditions: eq(0, 0)},
		{Name: "personality", Conditions: eq(0, 8)},
		{Name: "personality", Conditions: eq(0, 0x20008)},
		{Name: "personality", Conditions: eq(0, 0xffffffff)},
	}
	if sp.UnixSockets {
		cond = append(cond,
			seccomp.NameWithConditions{Name: "socket", Conditions: eq(0, unix.AF_UNIX)},
			seccomp.NameWithConditions{Name: "socketpair", Conditions: eq(0, unix.AF_UNIX)})
	}
	return seccomp.Policy{
		// Default deny: a call not listed, and any call through a foreign
		// entry (the i386 int 0x80, x32), gets EPERM.
		DefaultAction: seccomp.ActionErrno,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionAllow, Names: sp.Allow, NamesWithCondtions: cond},
			{Action: enosys, Names: []string{"clone3"}},
		},
	}
}

// compileSeccomp assembles the allow-list into its BPF program once, when
// the plan is made: each helper then loads the words as they are instead
// of assembling the same filter again for every command. An instruction is
// packed as code<<48 | jt<<40 | jf<<32 | k.
func compileSeccomp(sp SeccompPlan) ([]uint64, error) {
	pol := seccompPolicy(sp)
	insts, err := pol.Assemble()
	if err != nil {
		return nil, fmt.Errorf("assembling the seccomp allow-list: %w", err)
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("assembling the seccomp allow-list: %w", err)
	}
	pre, err := ioctlPrefix()
	if err != nil {
		return nil, err
	}
	raw = append(pre, raw...)
	out := make([]uint64, len(raw))
	for i, r := range raw {
		out[i] = uint64(r.Op)<<48 | uint64(r.Jt)<<40 | uint64(r.Jf)<<32 | uint64(r.K)
	}
	return out, nil
}

// refusedIoctls are the ioctl requests refused at every tier whatever the
// descriptor: TIOCSTI pushes bytes into a terminal's input, as if typed,
// and TIOCLINUX's selection calls paste a console's selection into it.
var refusedIoctls = []uint32{unix.TIOCSTI, unix.TIOCLINUX}

// ioctlPrefix is a block run before the allow-list: ioctl with a refused
// request gets EPERM. The kernel reads the request as a 32-bit unsigned int,
// so only the argument's low word is compared (a 64-bit comparison would let
// 0x1_00005412 through). Any other architecture falls through to the
// allow-list, which refuses foreign entries. The relative jumps of the
// allow-list's program are untouched by a prefix.
func ioctlPrefix() ([]bpf.RawInstruction, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	nr, ok := info.SyscallNames["ioctl"]
	if !ok {
		return nil, fmt.Errorf("seccomp: no ioctl on %s", info.Name)
	}
	// struct seccomp_data: nr (0), arch (4), ip (8), args (16); args[1]'s
	// low word is at 24 on the little-endian machines Go's seccomp tables
	// cover here (amd64, arm64).
	const offNr, offArch, offArg1Lo = 0, 4, 24
	n := len(refusedIoctls)
	// after the compares: [deny, end]; each compare jumps to deny or on.
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(info.ID), SkipTrue: uint8(4 + n)},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(nr), SkipTrue: uint8(2 + n)},
		bpf.LoadAbsolute{Off: offArg1Lo, Size: 4},
	}
	for i, req := range refusedIoctls {
		// true: to deny, which follows the last compare; false: on
		// (past deny, for the last one).
		skipFalse := uint8(0)
		if i == n-1 {
			skipFalse = 1
		}
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: req, SkipTrue: uint8(n - 1 - i), SkipFalse: skipFalse})
	}
	prog = append(prog, bpf.RetConstant{Val: uint32(seccomp.ActionErrno) | uint32(unix.EPERM)})
	return bpf.Assemble(prog)
}

// loadSeccomp installs the plan's filter on the calling thread only; the
// helper execs from this thread next, so the command inherits it.
// no_new_privs is already set on it.
func loadSeccomp(p *Plan) error {
	prog := p.SeccompBPF
	if len(prog) == 0 {
		var err error
		if prog, err = compileSeccomp(p.Seccomp); err != nil {
			return err
		}
	}
	f := make([]unix.SockFilter, len(prog))
	for i, w := range prog {
		f[i] = unix.SockFilter{Code: uint16(w >> 48), Jt: uint8(w >> 40), Jf: uint8(w >> 32), K: uint32(w)}
	}
	fp := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fp))); e != 0 {
		return e
	}
	return nil
}

func rlimits(r Resources) []Rlimit {
	return []Rlimit{
		{Name: "max_processes", Resource: unix.RLIMIT_NPROC, Value: r.MaxProcesses},
		{Name: "max_open_files", Resource: unix.RLIMIT_NOFILE, Value: r.MaxOpenFiles},
		{Name: "max_file_size_bytes", Resource: unix.RLIMIT_FSIZE, Value: r.MaxFileSizeBytes},
		{Name: "cpu_seconds", Resource: unix.RLIMIT_CPU, Value: r.CPUSeconds},
		{Name: "memory_bytes", Resource: unix.RLIMIT_AS, Value: r.MemoryBytes},
	}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
