// Package command is the one place that builds and runs a capsule's native
// command (a shell tool's, docs/agent-capsules.md; held the same at every
// containment tier, docs/containment.md): its exact
// environment, its working directory, its descriptors (0, 1 and 2 only, stdin
// /dev/null unless given), its own process group, and its end — at the
// deadline, or when the caller's context ends, the whole group gets SIGTERM,
// then SIGKILL after the grace; when the command's first process exits,
// whatever it left running in its group is killed outright, so no descendant
// outlives the command.
//
// Containment (internal/contain) wraps every command through Spec.Wrap,
// which is handed the exec.Cmd this package built and may rewrite it (to
// start the containment helper in its place) before it starts.
//
// A process that leaves the group (setsid, setpgid) is beyond a process
// group's reach; what ends those is the wrapper's cleanup (AfterExit):
// containment kills the command's cgroups whole, and the command's PID
// namespace ends with its init. A wrapper whose process stays between the
// runtime and the command reports the command's own end (ExitStatusFrom).
package command

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultKillGrace is how long a command has between SIGTERM and SIGKILL.
const DefaultKillGrace = 2 * time.Second

// Spec is one command to run.
type Spec struct {
	// Path is the program's absolute path (already resolved on PATH).
	Path string
	// Args are argv[1:]; argv[0] is Path.
	Args []string
	// Env is the command's whole environment: nothing of the caller's own
	// environment is added to it, even when it is empty.
	Env []string
	// Dir is the working directory; "" is the caller's.
	Dir string
	// Stdin is the command's standard input; nil is /dev/null.
	Stdin *os.File
	// Deadline bounds the command's run; 0 is none.
	Deadline time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL; 0 is
	// DefaultKillGrace.
	KillGrace time.Duration
	// Limit bounds how many bytes of each stream Result keeps; 0 keeps none.
	Limit int
	// Log, when set, receives the whole of both streams as they arrive
	// (interleaved). Writes are serialised; a failing Log is dropped, not
	// fatal.
	Log io.Writer
	// Wrap, when set, is called with the built exec.Cmd just before it
	// starts: containment's hook. It may replace Path, Args, Env, Dir,
	// ExtraFiles and SysProcAttr (Run then sets Setpgid on whatever
	// SysProcAttr it left); it must leave Stdin, Stdout and Stderr. Run
	// closes the ExtraFiles it set once the process has started: they are
	// the child's now.
	Wrap func(*exec.Cmd) error
}

var afterExit sync.Map // *exec.Cmd → []func()

// AfterExit registers f to run once the command c has ended: its leader
// exited and its process group was killed, before Run waits for the
// streams (so a descendant that escaped the group and still holds a pipe
// is ended by f, not waited for). A Spec.Wrap calls it with the exec.Cmd it
// was handed; f also runs when the command fails to start.
func AfterExit(c *exec.Cmd, f func()) {
	v, _ := afterExit.LoadOrStore(c, &[]func(){})
	fs := v.(*[]func())
	*fs = append(*fs, f)
}

var statusFrom sync.Map // *exec.Cmd → func() (int, string, bool)

// ExitStatusFrom registers f as where the command's own end comes from when
// the process c starts is not the command itself but stays between the
// runtime and it (containment's init): f gives the command's exit code
// (128+N for signal N) and the signal's name, false to keep the process's
// own status (an init killed before it could report). A Spec.Wrap calls it
// with the exec.Cmd it was handed.
func ExitStatusFrom(c *exec.Cmd, f func() (code int, signal string, ok bool)) {
	statusFrom.Store(c, f)
}

func runAfterExit(c *exec.Cmd) {
	defer statusFrom.Delete(c)
	v, ok := afterExit.LoadAndDelete(c)
	if !ok {
		return
	}
	for _, f := range *v.(*[]func()) {
		f()
	}
}

// Result is how a command ended and what it wrote.
type Result struct {
	// ExitCode is the exit status; 128+N when signal N ended the process.
	ExitCode int
	// Signal names the signal that ended the process ("SIGKILL"), else "".
	Signal string
	// Stdout and Stderr are the first Spec.Limit bytes of each stream.
	Stdout, Stderr []byte
	// StdoutBytes and StderrBytes are each stream's whole size.
	StdoutBytes, StderrBytes int64
	// Duration is from start to the process's exit.
	Duration time.Duration
	// TimedOut is set when the deadline ended the command; Canceled when
	// the caller's context did.
	TimedOut, Canceled bool
	// Killed is set when the command was still running after the grace
	// and got SIGKILL.
	Killed bool
}

// Truncated reports whether either stream was cut at the limit.
func (r Result) Truncated() bool {
	return r.StdoutBytes > int64(len(r.Stdout)) || r.StderrBytes > int64(len(r.Stderr))
}

// Run starts the command and waits for it and for its whole process group.
// The error is non-nil only when the command could not start; how it ended
// (any exit code, a signal, the deadline) is the Result.
func Run(ctx context.Context, s Spec) (Result, error) {
	grace := s.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	env := s.Env
	if env == nil {
		env = []string{} // nil would be the caller's own environment
	}
	c := &exec.Cmd{Path: s.Path, Args: append([]string{s.Path}, s.Args...), Env: env, Dir: s.Dir}
	if s.Stdin != nil {
		c.Stdin = s.Stdin
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("command %s: stdout pipe: %w", s.Path, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return Result{}, fmt.Errorf("command %s: stderr pipe: %w", s.Path, err)
	}
	c.Stdout, c.Stderr = outW, errW
	closeAll := func(fs ...*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	if s.Wrap != nil {
		err := s.Wrap(c)
		if err != nil {
			runAfterExit(c)
			closeAll(outR, outW, errR, errW)
			closeAll(c.ExtraFiles...)
			return Result{}, fmt.Errorf("command %s: %w", s.Path, err)
		}
	}
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Setpgid, c.SysProcAttr.Pgid = true, 0
	closeInherited()

	start := time.Now()
	err = c.Start()
	closeAll(outW, errW)
	closeAll(c.ExtraFiles...)
	if err != nil {
		runAfterExit(c)
		closeAll(outR, errR)
		return Result{}, fmt.Errorf("command %s: %w", s.Path, err)
	}
	pid := c.Process.Pid

	var res Result
	var logMu sync.Mutex
	log := s.Log
	var wg sync.WaitGroup
	drain := func(r *os.File, keep *[]byte, total *int64) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				*total += int64(n)
				if room := s.Limit - len(*keep); room > 0 {
					*keep = append(*keep, buf[:min(n, room)]...)
				}
				logMu.Lock()
				if log != nil {
					if _, werr := log.Write(buf[:n]); werr != nil {
						log = nil
					}
				}
				logMu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}
	wg.Add(2)
	go drain(outR, &res.Stdout, &res.StdoutBytes)
	go drain(errR, &res.Stderr, &res.StderrBytes)

	exited := make(chan struct{})
	var reaped bool
	var werr error
	go func() {
		reaped, werr = awaitExit(c)
		close(exited)
	}()

	var deadline <-chan time.Time
	if s.Deadline > 0 {
		t := time.NewTimer(s.Deadline)
		defer t.Stop()
		deadline = t.C
	}
	var kill <-chan time.Time
	done := ctx.Done()
wait:
	for {
		select {
		case <-exited:
			break wait
		case <-deadline:
			res.TimedOut, deadline, done = true, nil, nil
		case <-done:
			res.Canceled, deadline, done = true, nil, nil
		case <-kill:
			res.Killed, kill = true, nil
			_ = unix.Kill(-pid, unix.SIGKILL)
			continue
		}
		// The deadline or the context: the whole group, then the grace.
		_ = unix.Kill(-pid, unix.SIGTERM)
		t := time.NewTimer(grace)
		defer t.Stop()
		kill = t.C
	}
	res.Duration = time.Since(start)
	// What the leader left in its group ends with it.
	_ = unix.Kill(-pid, unix.SIGKILL)
	if !reaped {
		werr = c.Wait()
	}
	res.ExitCode, res.Signal = exitOf(c.ProcessState, werr)
	if f, ok := statusFrom.Load(c); ok {
		if code, sig, ok := f.(func() (int, string, bool))(); ok {
			res.ExitCode, res.Signal = code, sig
		}
	}
	runAfterExit(c)

	// The group is gone, so the pipes close; a process that left the group
	// may still hold them, so wait for the streams at most the grace.
	streams := make(chan struct{})
	go func() { wg.Wait(); close(streams) }()
	select {
	case <-streams:
	case <-time.After(grace):
		closeAll(outR, errR)
		<-streams
	}
	closeAll(outR, errR)
	return res, nil
}

func exitOf(ps *os.ProcessState, err error) (int, string) {
	if ps == nil {
		return -1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig := ws.Signal()
		return 128 + int(sig), unix.SignalName(sig)
	}
	return ps.ExitCode(), ""
}
