package contain

import (
	"os/exec"

	"github.com/murmur-go/murmur/internal/command"
)

// Wrap adapts a plan to the command launcher's hook (internal/command's
// Spec.Wrap): the command the launcher built is re-pointed at the
// containment helper, which applies p and execs it; once it has ended, its
// cgroups are killed whole and removed (command.AfterExit).
func Wrap(p *Plan) func(*exec.Cmd) error {
	return func(c *exec.Cmd) error {
		cc, err := Command(p, c.Path, c.Args[1:], c.Env, c.Dir)
		if err != nil {
			return err
		}
		c.Path, c.Args, c.Env, c.Dir = cc.Path, cc.Args, cc.Env, cc.Dir
		c.ExtraFiles, c.SysProcAttr = cc.ExtraFiles, cc.SysProcAttr
		if cc.release != nil {
			command.AfterExit(c, cc.release)
		}
		return nil
	}
}
