package contain

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// initArg is the hidden first argument that makes the binary the init
// helper (the runc pattern): set up the plan's mechanisms, then exec.
const initArg = "__murmur-contain-init"

// planFD is where the helper reads its job (JSON) from: the first ExtraFile.
const planFD = 3

// job is what the runtime hands the helper on planFD.
type job struct {
	Plan *Plan    `json:"plan"`
	Path string   `json:"path"`
	Args []string `json:"args"` // argv, argv[0] included
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	// Cgroups are the command's own cgroup directories, joined first.
	Cgroups []string `json:"cgroups,omitempty"`
	// StatusFD is where the helper, staying as the command's init, writes
	// the command's wait status (4 bytes) before it exits.
	StatusFD int `json:"status_fd"`
	// NoexecWritable: the helper is in a mount namespace of its own and
	// remounts the plan's writable directories noexec (scoped).
	NoexecWritable bool `json:"noexec_writable,omitempty"`
}

func init() {
	// Per-thread state (Landlock, seccomp, capabilities, no_new_privs) is
	// set on the thread that then execs: keep the helper on one thread.
	if len(os.Args) > 1 && (os.Args[1] == initArg || os.Args[1] == probeArg) {
		runtime.LockOSThread()
	}
	// From the helper's first Go instruction on, a forwarded signal (the
	// deadline's SIGTERM) is kept, not lost — the Go runtime would end the
	// process with status 2 — and reaches the command once it exists.
	if len(os.Args) > 1 && os.Args[1] == initArg {
		initSignals = make(chan os.Signal, 16)
		signal.Notify(initSignals, forwarded...)
	}
}

// initSignals receives the forwarded signals in the init helper.
var initSignals chan os.Signal

// MaybeInit runs the init helper or the probe child when this process is
// one, and never returns then; otherwise it returns at once. Call it first
// thing in main (and in TestMain).
func MaybeInit() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case probeArg:
		mode := ""
		if len(os.Args) > 2 {
			mode = os.Args[2]
		}
		probeMain(mode)
	case initArg:
		err := initMain()
		fmt.Fprintf(os.Stderr, "contain: %v\n", err)
		os.Exit(ExitSetup)
	}
}

// Command describes path run with args (argv[1:]), env and dir under plan p:
// the helper is this binary again, given the job on a pipe.
func Command(p *Plan, path string, args, env []string, dir string) (*Cmd, error) {
	if dir == "" {
		dir = p.WorkFolder
	}
	j := job{Plan: p, Path: path, Args: append([]string{path}, args...), Env: append(append([]string(nil), env...), p.Env...), Dir: dir}
	cg, err := newCgroups(p)
	if err != nil {
		return nil, err
	}
	if cg != nil {
		j.Cgroups = cg.dirs
	}
	// Every command gets a PID namespace wherever one can be made, the
	// helper its pid 1: when the helper dies — the command ended, or the
	// runtime died and the helper's parent-death signal killed it — the
	// kernel kills every process left in the namespace, so nothing the
	// command started outlives it or its runtime. Root makes one alone;
	// anyone else in a user namespace of its own.
	pidns := p.Namespaces || os.Getuid() == 0 || Probe().Namespaces
	// Landlock withholds execve of what the command may write, not an
	// executable mapping of it (ld.so <file>, a loader of its own): scoped
	// also remounts its writable directories noexec, in a mount namespace
	// of its own, wherever the PID namespace can be made (the same rights).
	j.NoexecWritable = p.Class == Scoped && pidns
	cmd, err := newCmd(p, j, pidns)
	if err != nil {
		cg.release()
		return nil, err
	}
	if cg != nil {
		cmd.release = cg.release
	}
	return cmd, nil
}

func newCmd(p *Plan, j job, pidns bool) (*Cmd, error) {
	b, err := json.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("containment plan: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("containment plan pipe: %w", err)
	}
	// The job is written whole before the helper starts; a pipe holds
	// 64 KiB, far more than a plan.
	if len(b) > 60<<10 {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("containment plan is %d bytes, more than a pipe holds", len(b))
	}
	sr, sw, err := os.Pipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("containment status pipe: %w", err)
	}
	c := exec.Command(helper(), initArg)
	// The helper reads nothing else from its environment; one P and no GC
	// make its short life cheaper.
	c.Env = []string{"GOMAXPROCS=1", "GOGC=off"}
	c.ExtraFiles = []*os.File{r}
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	a := c.SysProcAttr
	userns := p.Namespaces
	if p.Namespaces {
		a.Cloneflags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID
	} else if pidns {
		a.Cloneflags = unix.CLONE_NEWPID
		if j.NoexecWritable {
			a.Cloneflags |= unix.CLONE_NEWNS
		}
		if os.Getuid() != 0 {
			a.Cloneflags |= unix.CLONE_NEWUSER
			userns = true
		}
	}
	if p.NetNS {
		a.Cloneflags |= unix.CLONE_NEWNET
		// Root may make a network namespace in its own user namespace;
		// anyone else needs a user namespace to own it.
		if os.Getuid() != 0 {
			a.Cloneflags |= unix.CLONE_NEWUSER
			userns = true
		}
	}
	if userns {
		a.UidMappings, a.GidMappings = idMaps()
		a.GidMappingsEnableSetgroups = false
		if os.Getuid() != 0 {
			// A non-zero uid loses its namespace capabilities at the
			// helper's own execve unless they are ambient.
			a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
			if p.NetNS {
				a.AmbientCaps = append(a.AmbientCaps, unix.CAP_NET_ADMIN)
			}
		}
	}
	cmd := &Cmd{Cmd: c, planFile: r, statusW: sw, statusR: sr}
	fail := func(err error) (*Cmd, error) {
		r.Close()
		w.Close()
		sr.Close()
		sw.Close()
		return nil, err
	}
	if p.NetNS {
		if p.egress == nil {
			return fail(fmt.Errorf("containment plan: a network namespace with no egress proxy to serve it"))
		}
		child, parent, err := netSocketpair()
		if err != nil {
			return fail(err)
		}
		c.ExtraFiles = append(c.ExtraFiles, child)
		cmd.netFile = child
		// The hand-off waits on the runtime's end: it returns at once
		// when the helper's end closes unused (a failed start).
		go handOff(parent, p.egress)
	}
	// The status pipe goes last, its number in the job.
	c.ExtraFiles = append(c.ExtraFiles, sw)
	j.StatusFD = 2 + len(c.ExtraFiles)
	b, err = json.Marshal(j)
	if err != nil {
		return fail(fmt.Errorf("containment plan: %w", err))
	}
	if _, err := w.Write(b); err != nil {
		return fail(fmt.Errorf("containment plan pipe: %w", err))
	}
	w.Close()
	return cmd, nil
}

func initMain() error {
	f := os.NewFile(planFD, "plan")
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("reading the plan: %w", err)
	}
	var j job
	if err := json.Unmarshal(b, &j); err != nil || j.Plan == nil {
		return fmt.Errorf("reading the plan: %v", err)
	}
	p := j.Plan
	if err := enrol(j.Cgroups); err != nil {
		return err
	}
	// Resolve the program before the view narrows: inside a sealed root
	// the same absolute path exists, but the lookup may not.
	path := j.Path
	if !strings.Contains(path, "/") {
		if path, err = exec.LookPath(path); err != nil {
			return err
		}
	}
	if p.NetNS {
		if err := setupNetNS(); err != nil {
			return fmt.Errorf("the network namespace: %w", err)
		}
	}
	if j.NoexecWritable {
		if err := noexecWritable(p); err != nil {
			return fmt.Errorf("remounting the writable directories noexec: %w", err)
		}
	}
	if p.Namespaces {
		if err := composeRoot(p); err != nil {
			return fmt.Errorf("composing the sealed root: %w", err)
		}
	}
	if err := os.Chdir(j.Dir); err != nil {
		return err
	}
	// Inherited descriptors beyond stdio never reach the command.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("close_range: %w", err)
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if p.Landlock {
		if err := applyLandlock(p); err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
	}
	var deferred []Rlimit
	for _, rl := range p.Rlimits {
		if raceEnabled && rl.Resource == unix.RLIMIT_AS {
			deferred = append(deferred, rl)
			continue
		}
		lim := &syscall.Rlimit{Cur: rl.Value, Max: rl.Value}
		// syscall.Setrlimit, so that the command started by ForkExec
		// keeps RLIMIT_NOFILE (Go restores its own raised limit otherwise).
		if err := syscall.Setrlimit(rl.Resource, lim); err != nil {
			return fmt.Errorf("rlimit %s: %w", rl.Name, err)
		}
	}
	if err := loadSeccomp(p); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return runInit(path, j, initSignals, deferred)
}

// forwarded are the signals the init passes on to the command's process
// group: what the runtime sends at the deadline or when the task ends
// (SIGTERM), and what a terminal or a supervisor would.
var forwarded = []os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2}

// runInit starts the command as the helper's child and stays as its init:
// it forwards signals to the command's process group, reaps, and exits with
// the command's exit code (128+N for signal N), having written the command's
// own end on the status pipe. The helper is pid 1 of the command's PID
// namespace wherever one was made, and pid 1 ignores a signal it has no
// handler for: a command that were pid 1 itself would let the deadline's
// SIGTERM pass unseen. When the helper exits (or is killed, with the
// runtime: its parent-death signal), the namespace's other processes die.
//
// The command is started on this locked thread, so it inherits the
// thread's Landlock domain, seccomp filter, capabilities and no_new_privs,
// in a session of its own: no controlling terminal, so /dev/tty is ENXIO
// and TIOCSTI has no terminal of its own to reach.
//
// The rlimits are the init's own too, inherited by the command at fork —
// but for a race-detector build (tests), whose shadow memory cannot live
// under RLIMIT_AS: there the init sets that limit on the command just after
// it starts (prlimit), and leaves its own alone.
func runInit(path string, j job, sigs chan os.Signal, deferred []Rlimit) error {
	status := os.NewFile(uintptr(j.StatusFD), "status")
	// A command of the same uid cannot read or write the init's memory or
	// take its descriptors (the status pipe) through /proc.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("dumpable: %w", err)
	}
	// Where the helper is not pid 1 (no PID namespace on this host),
	// orphans of the command are reparented here and reaped.
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	pid, err := syscall.ForkExec(path, j.Args, &syscall.ProcAttr{
		Env: j.Env, Files: []uintptr{0, 1, 2},
		// The command dies with its init even where no namespace holds.
		Sys: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return fmt.Errorf("exec %s: %w", path, err)
	}
	for _, rl := range deferred {
		lim := &unix.Rlimit{Cur: rl.Value, Max: rl.Value}
		if err := unix.Prlimit(pid, rl.Resource, lim, nil); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			return fmt.Errorf("rlimit %s: %w", rl.Name, err)
		}
	}
	// The helper's short-lived setup ran without a collector; the init
	// lives as long as the command.
	debug.SetGCPercent(100)
	exited := make(chan syscall.WaitStatus, 1)
	go func() {
		for {
			var ws syscall.WaitStatus
			wpid, err := syscall.Wait4(-1, &ws, 0, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				return
			}
			if wpid == pid {
				exited <- ws
				return
			}
		}
	}()
	for {
		select {
		case s := <-sigs:
			_ = unix.Kill(-pid, s.(syscall.Signal))
		case ws := <-exited:
			// What the command left in its group ends with it, as the
			// runtime ends a group outside containment.
			_ = unix.Kill(-pid, unix.SIGKILL)
			code, sig := ws.ExitStatus(), 0
			if ws.Signaled() {
				sig = int(ws.Signal())
				code = 128 + sig
			}
			var b [statusBytes]byte
			binary.LittleEndian.PutUint32(b[:4], uint32(code))
			binary.LittleEndian.PutUint32(b[4:], uint32(sig))
			_, _ = status.Write(b[:])
			os.Exit(code)
		}
	}
}

func signalName(n int) string { return unix.SignalName(syscall.Signal(n)) }

// dropCapabilities empties the bounding, ambient, inheritable, permitted
// and effective sets: a uid-0 command would regain the bounding set at exec.
func dropCapabilities() error {
	last := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			// Without CAP_SETPCAP (an unprivileged caller outside a user
			// namespace) the bounding set cannot shrink, but a non-zero uid
			// regains nothing from it at exec.
			if errors.Is(err, unix.EPERM) && os.Geteuid() != 0 {
				break
			}
			if errors.Is(err, unix.EINVAL) {
				break
			}
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// rootBase is the mount point of a sealed root's tmpfs while it is composed:
// a directory no work folder lives under.
func rootBase() string {
	if isDir("/sys") {
		return "/sys"
	}
	return "/mnt"
}

// lockedFlags are the flags of the mount holding p that a read-only
// remount in a user namespace must repeat (mount_namespaces(7)).
func lockedFlags(p string) uintptr {
	var st unix.Statfs_t
	if unix.Statfs(p, &st) != nil {
		return 0
	}
	var f uintptr
	for _, m := range []struct{ st, ms int64 }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if st.Flags&m.st != 0 {
			f |= uintptr(m.ms)
		}
	}
	return f
}

func bind(src, dst string, dir, write, exec bool) error {
	if dir {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		f.Close()
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	st, err := os.Stat(src)
	if err == nil && st.Mode()&os.ModeCharDevice != 0 && write {
		// A device node bound read-write needs no remount: nodev would
		// make it unopenable, and exec and setuid mean nothing for a
		// character device (execve refuses anything but a regular file).
		return nil
	}
	flags := uintptr(unix.MS_REMOUNT|unix.MS_BIND|unix.MS_NOSUID) | lockedFlags(src)
	// nodev everywhere but on the device nodes themselves (/dev/null,
	// /dev/zero, …): with it a bound node cannot be opened at all.
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		flags |= unix.MS_NODEV
	}
	if !write {
		flags |= unix.MS_RDONLY
	}
	if !exec {
		flags |= unix.MS_NOEXEC
	}
	if err := unix.Mount("", dst, "", flags, ""); err != nil {
		return fmt.Errorf("remount %s: %w", src, err)
	}
	return nil
}

// bindReadOnlyDir binds src read-only (nosuid, nodev, noexec) over dst,
// the same directory as seen inside the composed root. Both ends are opened
// with O_NOFOLLOW and the mount is made from and onto those descriptors, so
// a src the command replaced with a symbolic link (to anywhere on the host)
// is never followed: absent, a link or not a directory, nothing is bound
// (nothing of the runtime's is there to protect).
func bindReadOnlyDir(src, dst string) error {
	const how = unix.O_PATH | unix.O_NOFOLLOW | unix.O_DIRECTORY | unix.O_CLOEXEC
	sfd, err := unix.Open(src, how, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return nil
		}
		return err
	}
	defer unix.Close(sfd)
	dfd, err := unix.Open(dst, how, 0)
	if err != nil {
		return fmt.Errorf("the mount point: %w", err)
	}
	defer unix.Close(dfd)
	tree, err := unix.OpenTree(sfd, "", unix.OPEN_TREE_CLONE|unix.O_CLOEXEC|unix.AT_EMPTY_PATH)
	if errors.Is(err, unix.ENOSYS) {
		// Before the new mount API (Linux 5.12 for mount_setattr): the
		// same through the descriptors' /proc links, the remount through
		// the new mount's own descriptor.
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", sfd), fmt.Sprintf("/proc/self/fd/%d", dfd), "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind: %w", err)
		}
		nfd, err := unix.Open(dst, how, 0)
		if err != nil {
			return err
		}
		defer unix.Close(nfd)
		flags := uintptr(unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC) | lockedFlags(src)
		return unix.Mount("", fmt.Sprintf("/proc/self/fd/%d", nfd), "", flags, "")
	}
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, attr); err != nil {
		return fmt.Errorf("mount_setattr: %w", err)
	}
	if err := unix.MoveMount(tree, "", dfd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// noexecWritable binds each writable directory of the plan onto itself,
// remounted nosuid, nodev and noexec, in the helper's own mount namespace:
// the kernel then refuses an executable mapping of a file there (ld.so
// <file>), which Landlock does not see.
func noexecWritable(p *Plan) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("mount(/, MS_PRIVATE): %w", err)
	}
	for _, e := range p.Paths {
		if e.Write && e.Dir && !e.Exec {
			if err := bind(e.Path, e.Path, true, true, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyable reports whether e is a small read-only file of /etc, which a
// sealed root gets as a copy rather than a bind mount.
func copyable(e Path) bool {
	if e.Write || e.Exec || e.Dir || !strings.HasPrefix(e.Path, "/etc/") {
		return false
	}
	st, err := os.Stat(e.Path) // through a link: resolv.conf often is one
	return err == nil && st.Mode().IsRegular() && st.Size() <= 1<<20
}

func copyInto(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// composeRoot builds the sealed root on a tmpfs and pivots into it: the
// plan's paths at their own absolute paths, a private /dev and /proc, a
// private /tmp, nothing else.
func composeRoot(p *Plan) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("mount(/, MS_PRIVATE): %w", err)
	}
	base := rootBase()
	if err := unix.Mount("tmpfs", base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m,mode=0755"); err != nil {
		return fmt.Errorf("tmpfs root: %w", err)
	}
	if err := os.Mkdir(base+"/tmp", 0o1777); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", base+"/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=64m,mode=1777"); err != nil {
		return fmt.Errorf("tmpfs /tmp: %w", err)
	}
	// /dev before the plan's paths, as /tmp: a work folder under either
	// (a tmpfs in /dev/shm) is bound onto the private one, not hidden by it.
	if err := os.MkdirAll(base+"/dev", 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", base+"/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "size=64k,mode=0755"); err != nil {
		return fmt.Errorf("tmpfs /dev: %w", err)
	}
	for _, d := range p.Devices {
		if _, err := os.Stat(d); err != nil {
			continue
		}
		// mknod is refused in a user namespace: bind the host's nodes.
		if err := bind(d, base+d, false, true, false); err != nil {
			if d == "/dev/tty" {
				continue // no controlling terminal to bind
			}
			return err
		}
	}
	for _, l := range [][2]string{{"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}} {
		_ = os.Symlink(l[0], base+"/dev/"+l[1])
	}
	for _, e := range p.Paths {
		dst := base + e.Path
		fi, err := os.Lstat(e.Path)
		if err != nil {
			continue // a system dir this host lacks
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0 && (e.Path == "/bin" || e.Path == "/sbin" || strings.HasPrefix(e.Path, "/lib")):
			// merged /usr: /bin -> usr/bin stays a link into the bound /usr
			t, err := os.Readlink(e.Path)
			if err != nil {
				return err
			}
			if err := os.Symlink(t, dst); err != nil {
				return err
			}
		case e.Synthetic != "":
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			content := e.Synthetic
			if uid := os.Getuid(); uid != 0 && filepath.Base(e.Path) == "passwd" {
				content += fmt.Sprintf("murmur:x:%d:%d:murmur:/nonexistent:/bin/sh\n", uid, os.Getgid())
			} else if gid := os.Getgid(); gid != 0 && filepath.Base(e.Path) == "group" {
				content += fmt.Sprintf("murmur:x:%d:\n", gid)
			}
			if err := os.WriteFile(dst, []byte(content), 0o644); err != nil {
				return err
			}
		case copyable(e):
			// A small /etc file is copied into the root: two syscalls
			// instead of a bind and its read-only remount (the root is
			// remounted read-only at the end, so the copy is too).
			if err := copyInto(e.Path, dst); err != nil {
				return err
			}
		default:
			if err := bind(e.Path, dst, fi.IsDir(), e.Write, e.Exec); err != nil {
				return err
			}
		}
	}
	for _, d := range p.ReadOnly {
		if err := bindReadOnlyDir(d, base+d); err != nil {
			return fmt.Errorf("binding %s read-only: %w", d, err)
		}
	}
	if err := os.Mkdir(base+"/proc", 0o555); err != nil {
		return err
	}
	if err := unix.Mount("proc", base+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("private /proc: %w", err)
	}
	if err := os.Mkdir(base+"/.oldroot", 0o700); err != nil {
		return err
	}
	if err := unix.PivotRoot(base, base+"/.oldroot"); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Unmount("/.oldroot", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the old root: %w", err)
	}
	if err := os.Remove("/.oldroot"); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("remounting the root read-only: %w", err)
	}
	return nil
}
