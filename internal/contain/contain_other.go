//go:build !linux

package contain

import (
	"os/exec"
	"runtime"
)

const mechAdvisory = MechNone

func allowList() []string { return nil }

func rlimits(Resources) []Rlimit { return nil }

func compileSeccomp(SeccompPlan) ([]uint64, error) { return nil, nil }

func isDir(string) bool { return false }

func signalName(n int) string { return "" }

func probe() *Report {
	const no = "no Linux kernel containment on " + runtime.GOOS
	return &Report{OS: runtime.GOOS, LandlockBlocker: no, SeccompBlocker: no, NamespacesBlocker: no, NetNSBlocker: no}
}

// MaybeInit does nothing off Linux: there is no helper.
func MaybeInit() {}

// Command runs the command directly off Linux, with the plan's environment:
// advisory's "none" mechanism holds nothing in the kernel.
func Command(p *Plan, path string, args, env []string, dir string) (*Cmd, error) {
	c := exec.Command(path, args...)
	c.Path = path
	c.Env = append(append([]string(nil), env...), p.Env...)
	c.Dir = dir
	return &Cmd{Cmd: c}, nil
}

// ResourcePlane is the rlimits alone off Linux: no cgroups.
func ResourcePlane() (plane, blocker string) {
	return PlaneRlimits, "no cgroups on " + runtime.GOOS
}

// SweepStaleCgroups has nothing to sweep off Linux.
func SweepStaleCgroups() int { return 0 }

// hostFacts: off Linux the probe is a constant answer, never cached.
func hostFacts() []string { return nil }
