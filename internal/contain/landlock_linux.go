package contain

import (
	"fmt"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Landlock rights, split into file and directory sets: a directory right
// on a regular file is EINVAL.
const (
	llReadFile = llsys.AccessFSReadFile
	llReadDir  = llsys.AccessFSReadFile | llsys.AccessFSReadDir
	llWrite    = llsys.AccessFSWriteFile | llsys.AccessFSTruncate
	llWriteDir = llWrite | llsys.AccessFSRemoveDir | llsys.AccessFSRemoveFile | llsys.AccessFSMakeDir |
		llsys.AccessFSMakeReg | llsys.AccessFSMakeFifo | llsys.AccessFSMakeSym | llsys.AccessFSRefer
	llExec = llsys.AccessFSExecute
)

// applyLandlock restricts the calling thread to the plan's paths. ABI v6
// (best effort) also scopes signals and abstract unix sockets to the
// command's own domain, so it cannot signal its runtime. Network rights are
// not handled here: the network namespace is what holds egress.
func applyLandlock(p *Plan) error {
	cfg := landlock.V6.BestEffort()
	cfg.HandledAccessNet = 0
	var rules []landlock.Rule
	for _, e := range p.Paths {
		var a landlock.AccessFSSet
		if e.Dir {
			a = llReadDir
			if e.Write {
				a |= llWriteDir
			}
		} else {
			a = llReadFile
			if e.Write {
				a |= llWrite
			}
		}
		if e.Exec {
			a |= llExec
		}
		r := landlock.PathAccess(a, e.Path).IgnoreIfMissing()
		if e.Write && e.Dir {
			r = r.WithRefer()
		}
		rules = append(rules, r)
	}
	for _, d := range p.Devices {
		rules = append(rules, landlock.PathAccess(llReadFile|llWrite, d).IgnoreIfMissing().WithIoctlDev())
	}
	if p.Namespaces {
		// A sealed root's /proc is private to the command's pid namespace,
		// and its /tmp a tmpfs of its own.
		rules = append(rules, landlock.PathAccess(llReadDir, "/proc"), landlock.PathAccess(llReadDir|llWriteDir, "/tmp").WithRefer())
	}
	// The ruleset, then restrict_self on this thread only: the helper
	// execs from it next (no_new_privs is set on it already). The
	// all-threads variant (Config.Restrict) signals every thread through
	// psx, which hangs in a PID namespace that still sees the host's /proc.
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("the ruleset: %w", err)
	}
	if fd < 0 {
		return nil // nothing this kernel can restrict
	}
	defer unix.Close(fd)
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}
