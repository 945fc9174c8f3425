package contain

import (
	"os"
	"os/exec"
)

// ExitSetup is the exit status of a helper that could not apply its plan;
// its stderr says why ("contain: ..."). The command never ran then.
const ExitSetup = 125

// Cmd is a command under a plan. Use Start (then Wait) or Run: they close
// the parent's end of the plan's descriptor once the helper has it.
type Cmd struct {
	*exec.Cmd
	planFile *os.File
}

// Start starts the helper (or, off Linux, the command).
func (c *Cmd) Start() error {
	err := c.Cmd.Start()
	if c.planFile != nil {
		c.planFile.Close()
		c.planFile = nil
	}
	return err
}

// Run starts the command and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}
