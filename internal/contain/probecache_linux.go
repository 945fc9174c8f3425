package contain

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// hostFacts are what can change the probe's answer without a reboot, and
// what identifies the boot and the kernel: a cached report is read only
// where every one of them is as it was when it was written.
func hostFacts() []string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return nil
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return nil
	}
	facts := []string{
		"kernel=" + unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Version[:]) + " " + unix.ByteSliceToString(u.Machine[:]),
		"boot=" + strings.TrimSpace(string(boot)),
		"uid=" + strconv.Itoa(os.Getuid()) + "/" + strconv.Itoa(os.Geteuid()),
		"gid=" + strconv.Itoa(os.Getgid()),
	}
	// Capabilities, no_new_privs and an outer seccomp filter: a process
	// started under another filter (a container's) probes differently.
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			for _, p := range []string{"CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:", "NoNewPrivs:", "Seccomp:", "Seccomp_filters:"} {
				if strings.HasPrefix(l, p) {
					facts = append(facts, strings.Join(strings.Fields(l), " "))
				}
			}
		}
	}
	// The namespaces this process is in: the same HOME seen from inside a
	// container is another host to the probe.
	for _, ns := range []string{"user", "mnt", "pid", "net", "cgroup", "ipc", "uts"} {
		t, _ := os.Readlink("/proc/self/ns/" + ns)
		facts = append(facts, "ns."+ns+"="+t)
	}
	for _, f := range []string{
		"/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
		"/proc/sys/kernel/unprivileged_userns_clone",
		"/proc/sys/user/max_user_namespaces",
		"/proc/sys/user/max_mnt_namespaces",
		"/proc/sys/user/max_pid_namespaces",
		"/proc/sys/user/max_net_namespaces",
		"/proc/sys/kernel/seccomp/actions_avail",
		"/sys/module/apparmor/parameters/enabled",
		"/sys/kernel/security/lsm",
	} {
		b, err := os.ReadFile(f)
		v := "absent"
		if err == nil {
			v = strings.TrimSpace(string(b))
		}
		facts = append(facts, f+"="+v)
	}
	return facts
}
