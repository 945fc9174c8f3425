package contain

import (
	"os/exec"

	"github.com/murmur-go/murmur/internal/command"
)

// Wrap adapts a plan to the command launcher's hook (internal/command's
// Spec.Wrap): the command the launcher built is re-pointed at the
// containment helper, which applies p and execs it; once it has ended, its
// cgroups are killed whole and removed (command.AfterExit), and its result
// is the command's own end as the helper, its init, reports it.
func Wrap(p *Plan) func(*exec.Cmd) error {
	return func(c *exec.Cmd) error {
		cc, err := Command(p, c.Path, c.Args[1:], c.Env, c.Dir)
		if err != nil {
			return err
		}
		c.Path, c.Args, c.Env, c.Dir = cc.Path, cc.Args, cc.Env, cc.Dir
		c.ExtraFiles, c.SysProcAttr = cc.ExtraFiles, cc.SysProcAttr
		// The helper stays as the command's init: the command's own end
		// is what it reports on the status pipe, not the helper's exit.
		if r := cc.statusR; r != nil {
			command.ExitStatusFrom(c, func() (int, string, bool) {
				s := readStatus(r)
				if s == nil {
					return 0, "", false
				}
				return s.code, s.signal, true
			})
		}
		command.AfterExit(c, cc.done)
		return nil
	}
}
