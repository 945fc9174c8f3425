package command

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Process is a long-lived native command the runtime speaks to over its
// standard input and output (an MCP server, docs/mcp.md): built and
// wrapped exactly as Run builds a command — its exact environment, its
// working directory, descriptors 0–2 only, its own process group,
// containment through Spec.Wrap — and, because it outlives any one call,
// started with the parent-death signal SIGKILL, so a runtime that is
// killed leaves no process behind. Its stderr is copied to Spec.Log.
type Process struct {
	// Stdin and Stdout are the command's standard input and output.
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
	// Pid is the process the runtime started (the containment helper when
	// wrapped).
	Pid int

	c        *exec.Cmd
	exited   chan struct{}
	drained  chan struct{}
	mu       sync.Mutex
	res      Result
	start    time.Time
	errBytes int64
}

// Start starts s as a long-lived process. Deadline, Limit and Stdin of s
// are not used: the caller ends it with Stop.
func Start(s Spec) (*Process, error) {
	env := s.Env
	if env == nil {
		env = []string{}
	}
	c := &exec.Cmd{Path: s.Path, Args: append([]string{s.Path}, s.Args...), Env: env, Dir: s.Dir}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("command %s: stdin pipe: %w", s.Path, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeFiles(inR, inW)
		return nil, fmt.Errorf("command %s: stdout pipe: %w", s.Path, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeFiles(inR, inW, outR, outW)
		return nil, fmt.Errorf("command %s: stderr pipe: %w", s.Path, err)
	}
	c.Stdin, c.Stdout, c.Stderr = inR, outW, errW
	if s.Wrap != nil {
		if err := s.Wrap(c); err != nil {
			runAfterExit(c)
			closeFiles(inR, inW, outR, outW, errR, errW)
			closeFiles(c.ExtraFiles...)
			return nil, fmt.Errorf("command %s: %w", s.Path, err)
		}
	}
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Setpgid, c.SysProcAttr.Pgid = true, 0
	// A runtime killed outright (SIGKILL) takes the process with it; the
	// containment helper sets the same on the command it runs.
	c.SysProcAttr.Pdeathsig = syscall.SIGKILL
	closeInherited()
	p := &Process{c: c, exited: make(chan struct{}), drained: make(chan struct{}), start: time.Now()}
	err = c.Start()
	closeFiles(inR, outW, errW)
	closeFiles(c.ExtraFiles...)
	if err != nil {
		runAfterExit(c)
		closeFiles(inW, outR, errR)
		return nil, fmt.Errorf("command %s: %w", s.Path, err)
	}
	p.Stdin, p.Stdout, p.Pid = inW, outR, c.Process.Pid
	go func() {
		defer close(p.drained)
		buf := make([]byte, 32<<10)
		log := s.Log
		for {
			n, err := errR.Read(buf)
			if n > 0 {
				p.mu.Lock()
				p.errBytes += int64(n)
				p.mu.Unlock()
				if log != nil {
					if _, werr := log.Write(buf[:n]); werr != nil {
						log = nil
					}
				}
			}
			if err != nil {
				errR.Close()
				return
			}
		}
	}()
	go func() {
		reaped, werr := awaitExit(c)
		// What the leader left in its group ends with it.
		_ = unix.Kill(-p.Pid, unix.SIGKILL)
		if !reaped {
			werr = c.Wait()
		}
		code, sig := exitOf(c.ProcessState, werr)
		if f, ok := statusFrom.Load(c); ok {
			if fc, fs, ok := f.(func() (int, string, bool))(); ok {
				code, sig = fc, fs
			}
		}
		runAfterExit(c)
		p.mu.Lock()
		p.res.ExitCode, p.res.Signal, p.res.Duration = code, sig, time.Since(p.start)
		p.mu.Unlock()
		close(p.exited)
	}()
	return p, nil
}

// Exited is closed once the process has ended (and its group and cgroups
// with it).
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Result is how the process ended; valid once Exited is closed.
func (p *Process) Result() Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.res
	r.StderrBytes = p.errBytes
	return r
}

// StderrBytes is how much the process has written to its stderr so far.
func (p *Process) StderrBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errBytes
}

// Stop ends the process as the MCP stdio shutdown goes: its standard input
// is closed; after grace its process group gets SIGTERM, after grace more
// SIGKILL. It returns once the process has ended and its stderr is drained
// (bounded by grace, in case something that left the group holds it).
func (p *Process) Stop(grace time.Duration) Result {
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	_ = p.Stdin.Close()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		_ = unix.Kill(-p.Pid, unix.SIGTERM)
		t.Reset(grace)
		select {
		case <-p.exited:
		case <-t.C:
			p.mu.Lock()
			p.res.Killed = true
			p.mu.Unlock()
			_ = unix.Kill(-p.Pid, unix.SIGKILL)
			<-p.exited
		}
	}
	_ = p.Stdout.Close()
	select {
	case <-p.drained:
	case <-time.After(grace):
	}
	return p.Result()
}

// Kill ends the process group at once and waits for its end.
func (p *Process) Kill() Result {
	_ = p.Stdin.Close()
	_ = unix.Kill(-p.Pid, unix.SIGKILL)
	<-p.exited
	_ = p.Stdout.Close()
	select {
	case <-p.drained:
	case <-time.After(DefaultKillGrace):
	}
	return p.Result()
}

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
