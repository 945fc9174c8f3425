package contain

import (
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"time"
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
	// statusW is the helper's end of the status pipe, statusR the
	// runtime's: the helper stays as the command's init and writes the
	// command's own wait status there.
	statusW, statusR *os.File
	status           *commandStatus
}

// Wait waits for the command, then ends whatever it left in its cgroups.
// Its exit status is the helper's, which exits with the command's exit
// code, or 128+N when signal N ended it (CommandStatus has the signal).
func (c *Cmd) Wait() error {
	err := c.Cmd.Wait()
	c.status = readStatus(c.statusR)
	c.done()
	return err
}

// CommandStatus is the command's own wait status as its init reported it;
// false when the init did not (it was killed, or never ran the command).
func (c *Cmd) CommandStatus() (exitCode int, signal string, ok bool) {
	if c.status == nil {
		return 0, "", false
	}
	return c.status.code, c.status.signal, true
}

// commandStatus is a command's end as its init saw it.
type commandStatus struct {
	code   int    // the exit code, 128+N for signal N
	signal string // "SIGTERM" when a signal ended it
}

func (c *Cmd) done() {
	if c.release != nil {
		c.release()
		c.release = nil
	}
	if c.statusR != nil {
		c.statusR.Close()
		c.statusR = nil
	}
}

// Start starts the helper (or, off Linux, the command).
func (c *Cmd) Start() error {
	err := c.Cmd.Start()
	if err != nil {
		c.done()
	}
	for _, f := range []**os.File{&c.planFile, &c.netFile, &c.statusW} {
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

// statusBytes is the size of the status the init writes: the exit code and
// the signal number (0: none), each a little-endian uint32.
const statusBytes = 8

// readStatus reads what the init wrote once the helper has exited; nil when
// it wrote nothing. Only the init holds the pipe's write end (the command
// gets it close-on-exec), so once it has exited the read does not wait;
// the deadline guards a helper that left it to someone else.
func readStatus(r *os.File) *commandStatus {
	if r == nil {
		return nil
	}
	_ = r.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	var b [statusBytes]byte
	if n, _ := io.ReadFull(r, b[:]); n != statusBytes {
		return nil
	}
	s := &commandStatus{code: int(binary.LittleEndian.Uint32(b[:4]))}
	if sig := binary.LittleEndian.Uint32(b[4:]); sig != 0 {
		s.signal = signalName(int(sig))
	}
	return s
}
