package contain

import (
	"strings"
	"sync"
)

// Report is what the probe found on this host: each mechanism usable or not,
// with the specific blocker kept for messages.
type Report struct {
	OS string `json:"os"`
	// LandlockABI is the kernel's Landlock ABI version, 0 when unusable.
	LandlockABI     int    `json:"landlock_abi"`
	LandlockBlocker string `json:"landlock_blocker,omitempty"`
	Seccomp         bool   `json:"seccomp"`
	SeccompBlocker  string `json:"seccomp_blocker,omitempty"`
	// Namespaces: a child could be cloned into new user + mount + pid
	// namespaces, have its id maps written and mount a private tree.
	Namespaces        bool   `json:"namespaces"`
	NamespacesBlocker string `json:"namespaces_blocker,omitempty"`
	NetNS             bool   `json:"netns"`
	NetNSBlocker      string `json:"netns_blocker,omitempty"`
	// HostWarnings are what a launch warns of as W-SEC-013 (once per
	// process tree): the host restricts user namespaces, or leaves them
	// unrestricted host-wide under AppArmor rather than granting them to
	// mur by a profile.
	HostWarnings []string `json:"host_warnings,omitempty"`
}

var (
	probeOnce sync.Once
	probed    *Report
)

// Probe tests the host once per process, by really trying each mechanism
// (never by a kernel version), and returns the cached report.
func Probe() *Report { return ProbeCached("") }

// Best is the strongest class this host delivers.
func (r *Report) Best() string {
	switch {
	case r.Lacks(Sealed) == "":
		return Sealed
	case r.Lacks(Scoped) == "":
		return Scoped
	}
	return Advisory
}

// Lacks says what this host lacks for class, "" when it delivers it. The
// text is for E-CAP-003, which names the floor, this and Best().
func (r *Report) Lacks(class string) string {
	var miss []string
	need := func(ok bool, blocker string) {
		if !ok {
			miss = append(miss, blocker)
		}
	}
	switch class {
	case Sealed:
		need(r.Namespaces, r.NamespacesBlocker)
		fallthrough
	case Scoped:
		need(r.LandlockABI > 0, r.LandlockBlocker)
		need(r.Seccomp, r.SeccompBlocker)
	case Advisory:
	default:
		return "unknown containment class " + class
	}
	return strings.Join(miss, "; ")
}

// MechanismFor is the mechanism string a class applies on this OS.
func MechanismFor(class string) string {
	switch class {
	case Sealed:
		return MechSealed
	case Scoped:
		return MechScoped
	}
	return mechAdvisory
}
