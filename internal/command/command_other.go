//go:build !linux

package command

import "os/exec"

// awaitExit reaps the leader: without waitid's WNOWAIT the group is killed
// just after the reap, when its id could in principle have been reused.
func awaitExit(c *exec.Cmd) (reaped bool, err error) {
	return true, c.Wait()
}

// closeInherited is a no-op here: descriptors mur inherited without
// close-on-exec reach commands off Linux.
func closeInherited() {}
