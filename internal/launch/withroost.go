package launch

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/murmur-go/murmur/internal/delegate"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
)

// mur run --with-roost (docs/roost.md): a mur-roost started as a child of
// this run, ended after it. The daemon is the same binary a user starts by
// hand, run as a process (never linked): its flags and its lines are its own.

const (
	// RoostBinary is the daemon's executable name.
	RoostBinary = "mur-roost"
	// DefaultRoostPort is --roost-port's default (the daemon's own).
	DefaultRoostPort = 7700
	// roostHealthWait bounds the wait for the daemon's GET /health.
	roostHealthWait = 5 * time.Second
	// roostStopGrace is how long SIGTERM has before SIGKILL.
	roostStopGrace = 5 * time.Second
)

// RoostConfig says how to start the daemon for one run.
type RoostConfig struct {
	// Port is the loopback port it listens on.
	Port int
	// SpawnAllow is every --spawn-allow it is given: the run's own capsule
	// first, then those given to mur run.
	SpawnAllow []string
	// Output receives the daemon's start-up lines and anything else it
	// prints (mur run's stderr).
	Output io.Writer
	// Lookup reads mur's environment; nil is os.LookupEnv.
	Lookup func(string) (string, bool)
}

// Roost is a running daemon owned by this run.
type Roost struct {
	// URL is its base URL, what MURMUR_ROOST_URL is set to for the run.
	URL string
	// PID is the daemon's process id.
	PID int

	cmd      *exec.Cmd
	exited   chan struct{} // closed once the daemon has been reaped
	waitErr  error
	stopOnce sync.Once
}

// CheckWithRoost refuses --with-roost when MURMUR_ROOST_URL already names
// a daemon: two answers to "which daemon" is a mistake, not a preference.
func CheckWithRoost(lookup func(string) (string, bool)) error {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if delegate.RoostURL(lookup) != "" {
		return diag.New("E-RUN-081", "--with-roost and %s both name a daemon; use one", delegate.EnvRoostURL).
			WithHint("unset %s to let this run start its own mur-roost, or drop --with-roost to use the one it names", delegate.EnvRoostURL)
	}
	return nil
}

// WithRoostURL is lookup with MURMUR_ROOST_URL answered from *url once it
// is set: the run's own daemon, without touching the process environment.
func WithRoostURL(lookup func(string) (string, bool), url *string) func(string) (string, bool) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	return func(k string) (string, bool) {
		if k == delegate.EnvRoostURL && *url != "" {
			return *url, true
		}
		return lookup(k)
	}
}

// StartRoost starts mur-roost (the binary beside mur, else on PATH) on
// 127.0.0.1:cfg.Port and returns once it answers GET /health. A port
// already bound is E-RUN-080: one daemon per host is the spec's rule, so a
// second one is never started silently.
func StartRoost(ctx context.Context, cfg RoostConfig) (*Roost, error) {
	if cfg.Output == nil {
		cfg.Output = io.Discard
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port))
	// Asked here first, so the refusal carries the OS's words and the
	// daemon prints nothing for a start that cannot succeed.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, portTaken(cfg.Port, osError(err))
	}
	ln.Close()

	bin, err := roostBinary()
	if err != nil {
		return nil, err
	}
	args := []string{"--port", strconv.Itoa(cfg.Port)}
	for _, n := range cfg.SpawnAllow {
		args = append(args, "--spawn-allow", n)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = cfg.Output
	tail := &headBuffer{max: 4 << 10}
	cmd.Stderr = io.MultiWriter(cfg.Output, tail)
	cmd.SysProcAttr = roostProcAttr()
	r := &Roost{URL: "http://" + addr, cmd: cmd, exited: make(chan struct{})}

	// The parent-death signal is tied to the thread that started the
	// child: this goroutine keeps that thread until the daemon is reaped,
	// so the signal fires when mur dies, not when the Go scheduler retires
	// a thread.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(r.exited)
			return
		}
		started <- nil
		r.waitErr = cmd.Wait()
		close(r.exited)
	}()
	if err := <-started; err != nil {
		return nil, diag.Wrap(err, "E-RUN-043", "mur-roost (--with-roost) could not start: %s", bin)
	}
	r.PID = cmd.Process.Pid

	hctx, cancel := context.WithTimeout(ctx, roostHealthWait)
	defer cancel()
	c := &roostapi.Client{BaseURL: r.URL}
	for {
		if c.Health(hctx) == nil {
			return r, nil
		}
		select {
		case <-r.exited:
			if cause, ok := listenFailure(tail.String(), addr); ok {
				return nil, portTaken(cfg.Port, errors.New(cause))
			}
			return nil, diag.New("E-RUN-043", "mur-roost (--with-roost) exited before answering GET /health on %s: %v", r.URL, r.waitErr).
				WithHint("its own lines above say why; start it by hand (%s --port %d) to see them alone", bin, cfg.Port)
		case <-hctx.Done():
			r.Stop()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, diag.New("E-RUN-043", "mur-roost (--with-roost) did not answer GET /health on %s within %v", r.URL, roostHealthWait).
				WithHint("start it by hand (%s --port %d) and use MURMUR_ROOST_URL=%s", bin, cfg.Port, r.URL)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop ends the daemon: SIGTERM, then SIGKILL after 5 s. It returns once
// the process is reaped; calling it again does nothing.
func (r *Roost) Stop() {
	r.stopOnce.Do(func() {
		select {
		case <-r.exited:
			return
		default:
		}
		r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.exited:
		case <-time.After(roostStopGrace):
			r.cmd.Process.Kill()
			<-r.exited
		}
	})
}

// roostBinary is mur-roost beside the running mur, else on PATH.
func roostBinary() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), RoostBinary)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(RoostBinary)
	if err != nil {
		return "", diag.New("E-RUN-043", "--with-roost: %s is neither beside mur nor on PATH", RoostBinary).
			WithHint("install it with scripts/install.sh (it puts %s beside mur), or go build -o <mur's dir> ./cmd/%s", RoostBinary, RoostBinary)
	}
	return p, nil
}

func portTaken(port int, cause error) error {
	return diag.New("E-RUN-080", "mur-roost cannot listen on 127.0.0.1:%d: %v; a daemon may already run there — use it with MURMUR_ROOST_URL=http://127.0.0.1:%d, or pick --roost-port", port, cause, port)
}

// osError keeps the OS's words of a listen error (as mur-roost prints it).
func osError(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		var sc *os.SyscallError
		if errors.As(op.Err, &sc) {
			return sc.Err
		}
		return op.Err
	}
	return err
}

// listenFailure finds the daemon's own refusal to listen on addr in what it
// printed (another process took the port between the check above and the
// daemon's listen) and returns the OS's words.
func listenFailure(out, addr string) (cause string, ok bool) {
	_, after, ok := strings.Cut(out, "mur-roost: cannot listen on "+addr+": ")
	cause, _, _ = strings.Cut(after, "\n")
	return cause, ok
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.max - len(h.b); n > 0 {
		if len(p) < n {
			n = len(p)
		}
		h.b = append(h.b, p[:n]...)
	}
	return len(p), nil
}

func (h *headBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return string(h.b)
}
