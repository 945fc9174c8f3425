package contain

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
}

func init() {
	// Per-thread state (Landlock, seccomp, capabilities, no_new_privs) is
	// set on the thread that then execs: keep the helper on one thread.
	if len(os.Args) > 1 && (os.Args[1] == initArg || os.Args[1] == probeArg) {
		runtime.LockOSThread()
	}
}

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
	// Without a cgroup to kill whole, a PID namespace is what ends a
	// descendant that left the command's process group: it dies with the
	// command, its pid 1.
	pidns := p.Namespaces || (cg == nil && Probe().Namespaces)
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
	_, err = w.Write(b)
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("containment plan pipe: %w", err)
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
	cmd := &Cmd{Cmd: c, planFile: r}
	if p.NetNS {
		if p.egress == nil {
			r.Close()
			return nil, fmt.Errorf("containment plan: a network namespace with no egress proxy to serve it")
		}
		child, parent, err := netSocketpair()
		if err != nil {
			r.Close()
			return nil, err
		}
		c.ExtraFiles = append(c.ExtraFiles, child)
		cmd.netFile = child
		// The hand-off waits on the runtime's end: it returns at once
		// when the helper's end closes unused (a failed start).
		go handOff(parent, p.egress)
	}
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
	for _, rl := range p.Rlimits {
		lim := &syscall.Rlimit{Cur: rl.Value, Max: rl.Value}
		// syscall.Setrlimit, so that syscall.Exec keeps RLIMIT_NOFILE.
		if err := syscall.Setrlimit(rl.Resource, lim); err != nil {
			return fmt.Errorf("rlimit %s: %w", rl.Name, err)
		}
	}
	if err := loadSeccomp(p); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	err = syscall.Exec(path, j.Args, j.Env)
	return fmt.Errorf("exec %s: %w", path, err)
}

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
