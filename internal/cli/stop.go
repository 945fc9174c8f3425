package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/running"
)

func init() { register(newStopCmd) }

// killGrace is how long mur stop waits after SIGTERM before SIGKILL, and
// after SIGKILL before it gives up: SIGKILL comes 5 s after SIGTERM, as
// mur stop --help says.
const killGrace = 5 * time.Second

func newStopCmd(stdout, stderr io.Writer) *cobra.Command {
	var timeout time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stop SESSION",
		Short: "Stop a running capsule session",
		Long: `Stop the running session SESSION: a full session id, a suffix of at least
4 characters that ends one running session's id, or @N, the Nth newest session
of this project as 'mur trace ls' numbers them, while it runs.

An agent capsule (its record has a URL) is asked through its door's
murmur.StopSession: its live and queued tasks end canceled and it winds down.
mur waits up to --timeout for its process to exit, then sends SIGTERM, then
SIGKILL 5 s later. A script capsule gets SIGTERM, then SIGKILL 5 s later.
Before any signal, mur checks the pid still belongs to the session's process
(pid and process start), so a reused pid is never signalled.

Prints 'stopped: SESSION', then 'canceled:' task ids and 'terminated:'
delegation ids when there are any, and a 'signalled:' line for each signal it
had to send; exits 0 once the session's process is gone. A record whose
process is already gone is pruned ('not running: SESSION').

SESSION may also be a formation id (frm_…, as 'mur ps' shows it): its
launcher gets SIGTERM (SIGKILL after --timeout) and closes every member's
lifeline, members started by hand are stopped one by one, and mur waits until
every member process is gone, then prints 'stopped: FORMATION', the launcher's
line and one 'member:' line per member with its ending.

With --json it prints one JSON object instead: {"session_id","state"} where
state is "stopped" or "not_running", with "canceled", "terminated" and
"signalled" lists (empty when there were none).`,
		Example: `  mur stop ses_0194a3c1e2f47b7d9a2c55e013f0b6d2   # a full id, as mur ps prints it
  mur stop 13f0b6d2                               # the last 8 or more characters of one
  mur stop @1                                     # this project's newest session
  mur stop --timeout 30s @1 --json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout < 0 {
				return usageError{fmt.Errorf("--timeout %v is negative", timeout)}
			}
			homeDir, err := home.Dir()
			if err != nil {
				return err
			}
			return runStop(cmd.Context(), home.Running(homeDir), args[0], timeout, asJSON, stdout, stderr)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "how long an agent session may take to wind down before SIGTERM")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what happened as one JSON object")
	cmd.ValidArgsFunction = completeRunningSessions
	return cmd
}

// stopReport is what mur stop prints once the session is gone.
type stopReport struct {
	session    string
	canceled   []string
	terminated []string
	signalled  []string // one line per signal sent, in order
}

// stopJSON is mur stop --json's object.
type stopJSON struct {
	SessionID  string   `json:"session_id"`
	State      string   `json:"state"` // stopped | not_running
	Canceled   []string `json:"canceled"`
	Terminated []string `json:"terminated"`
	Signalled  []string `json:"signalled"`
}

func (r stopReport) json(state string) stopJSON {
	orEmpty := func(l []string) []string {
		if l == nil {
			return []string{}
		}
		return l
	}
	return stopJSON{SessionID: r.session, State: state, Canceled: orEmpty(r.canceled), Terminated: orEmpty(r.terminated),
		Signalled: orEmpty(r.signalled)}
}

func (r stopReport) print(w io.Writer) {
	fmt.Fprintf(w, "%s: %s\n", paint(w, "stopped"), r.session)
	if len(r.canceled) > 0 {
		fmt.Fprintf(w, "canceled: %s\n", strings.Join(r.canceled, " "))
	}
	if len(r.terminated) > 0 {
		fmt.Fprintf(w, "terminated: %s\n", strings.Join(r.terminated, " "))
	}
	for _, s := range r.signalled {
		fmt.Fprintf(w, "signalled: %s\n", s)
	}
}

// runStop stops the session ref names, by the records in runningDir.
func runStop(ctx context.Context, runningDir, ref string, timeout time.Duration, asJSON bool, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if strings.HasPrefix(ref, "frm_") {
		return runStopFormation(runningDir, ref, timeout, stdout)
	}
	entries, err := running.Scan(runningDir)
	if err != nil {
		return diag.Wrap(err, "E-RUN-051", "cannot read the running-capsule records").
			WithHint("check the permissions of %s", runningDir)
	}
	e, err := matchSession(entries, ref)
	if err != nil {
		return err
	}
	rec := e.Record
	gone := func() error {
		if !asJSON {
			return pruneStopped(runningDir, e, stdout, stderr, true)
		}
		if err := pruneStopped(runningDir, e, io.Discard, stderr, true); err != nil {
			return err
		}
		return printJSON(stdout, stopReport{session: rec.SessionID}.json("not_running"))
	}
	if e.State == running.Stale {
		return gone()
	}
	p, err := openProc(rec)
	if errors.Is(err, errGone) {
		return gone()
	}
	if err != nil {
		return err
	}
	defer p.close()

	rep := stopReport{session: rec.SessionID}
	deadline := time.Now().Add(timeout)
	asked, why := false, ""
	if rec.URL != nil && *rec.URL != "" {
		// A door that cannot be asked is no reason to give up: SIGTERM
		// winds an agent session down the same way.
		res, err := askStop(ctx, *rec.URL, rec.DoorToken, deadline)
		if err != nil {
			why = fmt.Sprintf(" (murmur.StopSession failed: %v)", err)
		} else {
			asked = true
			rep.canceled, rep.terminated = res.Canceled, res.Terminated
		}
	}
	exited := false
	if asked {
		exited = p.wait(time.Until(deadline))
		why = fmt.Sprintf(" (the session had not exited %v after murmur.StopSession)", timeout)
	}
	if !exited {
		rep.signalled = append(rep.signalled, "SIGTERM"+why)
		if err := p.signal(syscall.SIGTERM); err != nil {
			return err
		}
		exited = p.wait(killGrace)
	}
	if !exited {
		rep.signalled = append(rep.signalled, fmt.Sprintf("SIGKILL (the session had not exited %v after SIGTERM)", killGrace))
		if err := p.signal(syscall.SIGKILL); err != nil {
			return err
		}
		if !p.wait(killGrace) {
			return diag.New("E-RUN-055", "session %s (pid %d) is still running %v after SIGKILL", rec.SessionID, rec.PID, killGrace).
				WithHint("the process may be stuck in the kernel; check it with 'ps -o pid,stat,wchan -p %d'", rec.PID)
		}
	}
	// A session that exited by itself removed its record; one ended by
	// SIGKILL could not, and its process is known to be gone.
	if _, err := os.Stat(e.File); err == nil {
		if err := pruneStopped(runningDir, running.Entry{File: e.File, Record: rec, State: running.Stale}, io.Discard, stderr, false); err != nil {
			return err
		}
	}
	if asJSON {
		return printJSON(stdout, rep.json("stopped"))
	}
	rep.print(stdout)
	return nil
}

// pruneStopped removes the record (and runtime dir) of a session whose
// process is gone; announce says so on stdout.
func pruneStopped(runningDir string, e running.Entry, stdout, stderr io.Writer, announce bool) error {
	if err := os.Remove(e.File); err != nil && !os.IsNotExist(err) {
		fmt.Fprintf(stderr, "%s\n", diag.Warn("W-IO-052", "cannot prune %s: %v", e.File, err))
	} else if announce {
		fmt.Fprintf(stderr, "pruned: %s (%s)\n", e.Record.SessionID, running.Stale)
	}
	removeRuntimeDir(runningDir, e, stderr)
	if announce {
		fmt.Fprintf(stdout, "not running: %s (its process is gone)\n", e.Record.SessionID)
	}
	return nil
}

// matchSession finds the one record ref names (sessionref.go): its full
// session id, a unique suffix of at least minSuffix characters, or @N of
// this project's recorded sessions while it runs. Unreadable records name
// no session and are never matched.
func matchSession(entries []running.Entry, ref string) (running.Entry, error) {
	r, err := parseSessionRef(ref)
	if err != nil {
		return running.Entry{}, err
	}
	const hint = "run 'mur ps' to list the running sessions"
	id := r.id
	if r.ordinal > 0 {
		homeDir, err := home.Dir()
		if err != nil {
			return running.Entry{}, err
		}
		if id, err = ordinalSession(homeDir, r.ordinal); err != nil {
			return running.Entry{}, err
		}
	}
	var live []string
	for _, e := range entries {
		if e.State != running.Unreadable {
			live = append(live, e.Record.SessionID)
		}
	}
	if r.suffix != "" {
		if id, err = pickBySuffix(r.suffix, live, "running session", hint); err != nil {
			return running.Entry{}, err
		}
	}
	for _, e := range entries {
		if e.State != running.Unreadable && e.Record.SessionID == id {
			return e, nil
		}
	}
	if r.ordinal > 0 {
		return running.Entry{}, diag.New("E-RUN-053", "no running session matches %s: it names %s, which is not running", ref, id).WithHint("%s", hint)
	}
	return running.Entry{}, diag.New("E-RUN-053", "no running session matches %q", ref).WithHint("%s", hint)
}

// askStop calls the door's murmur.StopSession at addr (the record's bare
// 127.0.0.1:PORT) and returns its result. The call is bounded by deadline
// and goes to the loopback address directly, never through a proxy.
func askStop(ctx context.Context, addr, token string, deadline time.Time) (doorapi.StopResult, error) {
	// A running record keeps the bare host:port; one written with the scheme is
	// read the same way.
	addr = strings.TrimPrefix(addr, "http://")
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return doorapi.StopResult{}, fmt.Errorf("its record's url %q is not a loopback host:port", addr)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	c := doorapi.NewClient(doorapi.Endpoint(addr), client)
	c.Token = token // a door with network.authentication answers its operator token only
	return c.StopSession(ctx)
}

// errGone says the record's process is no longer there (or its pid now
// belongs to another process).
var errGone = errors.New("the session's process is gone")

// proc is a pidfd on the session's process. Signals and waits go through
// the pidfd, so once openProc has matched it against the record's process
// start, a pid reused later can never receive them.
type proc struct {
	fd  int
	rec running.Record
}

// openProc opens the record's process and checks it is the same process
// (pid and process start) that wrote the record. The check comes after the
// open: the pidfd then refers to a process at least as old as the one
// checked, so a match means the pidfd is the session's.
func openProc(rec running.Record) (*proc, error) {
	fd, err := unix.PidfdOpen(rec.PID, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil, errGone
	}
	if err != nil {
		return nil, diag.Wrap(err, "E-RUN-055", "cannot open process %d of session %s", rec.PID, rec.SessionID).
			WithHint("mur stop needs Linux 5.3 or later (pidfd_open)")
	}
	ps, err := running.ProcessStart(rec.PID)
	switch {
	case errors.Is(err, os.ErrNotExist):
		unix.Close(fd)
		return nil, errGone
	case err != nil:
		unix.Close(fd)
		return nil, diag.Wrap(err, "E-RUN-055", "cannot tell whether pid %d is still session %s's process", rec.PID, rec.SessionID).
			WithHint("nothing was signalled; check /proc/%d is readable", rec.PID)
	case ps != rec.ProcessStart:
		unix.Close(fd)
		return nil, errGone
	}
	return &proc{fd: fd, rec: rec}, nil
}

func (p *proc) close() { unix.Close(p.fd) }

// signal sends sig to the session's process; one that has exited already
// is not an error (the wait that follows sees it gone).
func (p *proc) signal(sig syscall.Signal) error {
	err := unix.PidfdSendSignal(p.fd, sig, nil, 0)
	if err == nil || errors.Is(err, unix.ESRCH) {
		return nil
	}
	return diag.Wrap(err, "E-RUN-055", "cannot send %s to session %s (pid %d)", unix.SignalName(sig), p.rec.SessionID, p.rec.PID).
		WithHint("stop it as the user that started it")
}

// wait reports whether the process exits within d: a pidfd becomes
// readable when its process ends, child of ours or not.
func (p *proc) wait(d time.Duration) bool {
	end := time.Now().Add(d)
	for {
		ms := int(time.Until(end) / time.Millisecond)
		if ms < 0 {
			ms = 0
		}
		fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false
		}
		if n > 0 {
			return true
		}
		if ms == 0 {
			return false
		}
	}
}
