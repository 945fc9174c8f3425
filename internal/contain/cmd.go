package contain

import (
	"os"
	"os/exec"
)

// ExitSetup is the exit status of a helper that could not apply its plan;
// its stderr says why ("contain: ..."). The command never ran then.
const ExitSetup = 125

// Cmd is a command under a plan. Use Start (then Wait) or Run: they close
// the parent's copies of the helper's descriptors (ExtraFiles) once it has
// them. A caller that copies the exec.Cmd's fields into its own must close
// the ExtraFiles itself after starting, as command.Run does: a network
// namespace's hand-off waits for that.
type Cmd struct {
	*exec.Cmd
	planFile *os.File
	netFile  *os.File // the helper's end of the network namespace hand-off
	release  func()   // ends and removes the command's cgroups
}

// Wait waits for the command, then ends whatever it left in its cgroups.
func (c *Cmd) Wait() error {
	err := c.Cmd.Wait()
	c.done()
	return err
}

func (c *Cmd) done() {
	if c.release != nil {
		c.release()
		c.release = nil
	}
}

// Start starts the helper (or, off Linux, the command).
func (c *Cmd) Start() error {
	err := c.Cmd.Start()
	if err != nil {
		c.done()
	}
	for _, f := range []**os.File{&c.planFile, &c.netFile} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
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
