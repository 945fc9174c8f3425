package contain

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"

	seccomp "github.com/elastic/go-seccomp-bpf"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// probeArg is the hidden first argument of the probe child: it tries the
// mounts a sealed root needs inside the namespaces it was cloned into.
const probeArg = "__murmur-contain-probe"

// Exit statuses of the probe child.
const (
	probeOK          = 0
	probeMountDenied = 40
	probeProcDenied  = 41
)

func probe() *Report {
	r := &Report{OS: "linux"}
	if v, err := llsys.LandlockGetABIVersion(); err != nil || v < 1 {
		r.LandlockBlocker = landlockBlocker(err)
	} else {
		r.LandlockABI = v
	}
	if seccomp.Supported() {
		r.Seccomp = true
	} else {
		r.SeccompBlocker = "no seccomp filter mode (the kernel or an outer filter refuses seccomp(SECCOMP_SET_MODE_FILTER))"
	}
	r.Namespaces, r.NamespacesBlocker = probeNamespaces()
	r.NetNS, r.NetNSBlocker = probeNetNS()
	r.HostWarnings = hostWarnings(r)
	return r
}

// hostWarnings are W-SEC-013's texts for this host.
func hostWarnings(r *Report) []string {
	var out []string
	if !r.Namespaces {
		out = append(out, "this host restricts user namespaces ("+r.NamespacesBlocker+"): no command can be sealed here, and the strongest tier is "+r.Best())
	}
	if apparmorOn() {
		if b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && strings.TrimSpace(string(b)) == "0" {
			out = append(out, "unprivileged user namespaces are unrestricted host-wide (AppArmor is on and kernel.apparmor_restrict_unprivileged_userns=0) rather than granted to mur by an AppArmor profile of its own")
		}
	}
	return out
}

func apparmorOn() bool {
	b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled")
	return err == nil && strings.TrimSpace(string(b)) == "Y"
}

func landlockBlocker(err error) string {
	switch {
	case errors.Is(err, unix.ENOSYS):
		return "no Landlock (the kernel was built without it)"
	case errors.Is(err, unix.EOPNOTSUPP):
		return "no Landlock (built in but not enabled: add landlock to the lsm= boot list)"
	case err != nil:
		return "no Landlock: " + err.Error()
	}
	return "no Landlock"
}

func idMaps() ([]syscall.SysProcIDMap, []syscall.SysProcIDMap) {
	return []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		[]syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
}

func selfExe() (string, error) {
	// /proc/self/exe, not os.Args[0]: the binary may have been started by a
	// relative path or replaced on disk since.
	return "/proc/self/exe", nil
}

func probeChild(mode string, flags uintptr, maps bool) (int, string, error) {
	self, _ := selfExe()
	c := exec.Command(self, probeArg, mode)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags, Pdeathsig: syscall.SIGKILL}
	if maps {
		c.SysProcAttr.UidMappings, c.SysProcAttr.GidMappings = idMaps()
		c.SysProcAttr.GidMappingsEnableSetgroups = false
		if os.Getuid() != 0 {
			// As for the helper: a non-zero uid keeps its namespace
			// capabilities across the child's execve only as ambient ones.
			c.SysProcAttr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
		}
	}
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), strings.TrimSpace(stderr.String()), nil
	}
	return 0, strings.TrimSpace(stderr.String()), err
}

func userNSDenied(err error) string {
	msg := "unprivileged user namespaces denied (clone(CLONE_NEWUSER): " + err.Error() + ")"
	if b, _ := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); strings.TrimSpace(string(b)) == "1" {
		msg += "; AppArmor's restrict_unprivileged_userns is on (sysctl kernel.apparmor_restrict_unprivileged_userns=0, or a profile that allows userns)"
	}
	if b, _ := os.ReadFile("/proc/sys/user/max_user_namespaces"); strings.TrimSpace(string(b)) == "0" {
		msg += "; user.max_user_namespaces is 0"
	}
	return msg
}

func probeNamespaces() (bool, string) {
	code, msg, err := probeChild("ns", unix.CLONE_NEWUSER|unix.CLONE_NEWNS|unix.CLONE_NEWPID, true)
	if err != nil {
		if _, _, err2 := probeChild("none", unix.CLONE_NEWUSER, false); err2 != nil {
			return false, userNSDenied(err2)
		}
		return false, "user namespace id map denied (writing uid_map/gid_map: " + err.Error() + ")"
	}
	switch code {
	case probeOK:
		return true, ""
	case probeMountDenied:
		return false, "mount denied in a new user + mount namespace (" + msg + ")"
	case probeProcDenied:
		return false, "a private /proc mount denied in a new pid namespace (" + msg + ")"
	}
	return false, fmt.Sprintf("the probe child exited %d without answering (does main call contain.MaybeInit first?) %s", code, msg)
}

func probeNetNS() (bool, string) {
	code, msg, err := probeChild("none", unix.CLONE_NEWUSER|unix.CLONE_NEWNET, true)
	if err != nil {
		return false, "network namespaces denied (clone(CLONE_NEWUSER|CLONE_NEWNET): " + err.Error() + ")"
	}
	if code != probeOK {
		return false, fmt.Sprintf("the probe child exited %d without answering (does main call contain.MaybeInit first?) %s", code, msg)
	}
	return true, ""
}

// probeMain is the probe child: it tries the mounts a sealed root needs.
func probeMain(mode string) {
	if mode != "ns" {
		os.Exit(probeOK)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fmt.Fprintf(os.Stderr, "mount(/, MS_REC|MS_PRIVATE): %v", err)
		os.Exit(probeMountDenied)
	}
	base := rootBase()
	if err := unix.Mount("tmpfs", base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=64k,mode=0755"); err != nil {
		fmt.Fprintf(os.Stderr, "mount tmpfs on %s: %v", base, err)
		os.Exit(probeMountDenied)
	}
	if err := os.Mkdir(base+"/proc", 0o555); err != nil {
		fmt.Fprintf(os.Stderr, "mkdir: %v", err)
		os.Exit(probeMountDenied)
	}
	if err := unix.Mount("proc", base+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		fmt.Fprintf(os.Stderr, "mount proc: %v", err)
		os.Exit(probeProcDenied)
	}
	os.Exit(probeOK)
}
