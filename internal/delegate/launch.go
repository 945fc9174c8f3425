package delegate

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"golang.org/x/sys/unix"

	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/launch/launchapi"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
	"github.com/murmur-go/murmur/internal/trace"
)

// delegation is one launched child, from its launch to its outcome.
type delegation struct {
	id, taskID, contextID string
	full, bare, version   string
	childDir, logPath     string
	sessionID, recordsDir string // from the child's --json line
	url                   string // the child's door, http://host:port
	childTask             string // the task delivered there
	started               time.Time
	cmd                   *exec.Cmd
	lifeline              *os.File // the write end; never written
	stderrTail            *tail
	exitedCh              chan struct{}
	// doorToken is the operator token minted for the child and handed in
	// its approval line: every request to its door presents it. Never log
	// it.
	doorToken string
	// decided is closed once the call knows whether the delegation started
	// (its delegation_start written) or failed; the launcher builds no
	// outcome before then, and none for a failed one, so a child that
	// exits during its launch is recorded once, as the failed call.
	decided    chan struct{}
	exitStatus string
	script     bool // no door: its task went on standard input
	// step is a plan capsule step's delegation: the step reads its answer
	// with GetTask and assigns its outcome; no completion is posted, no
	// task waits for it (plan.go).
	step *stepState
	// envAllow is the child's own capabilities.env.allow.
	envAllow []string
	// snapshot is the workdir snapshot, nil when none was made.
	snapshot *trace.Snapshot

	// guarded by Runtime.mu
	ending    string  // the terminated reason, once this session ends it
	outcome   *Record // set once the launcher has the outcome
	received  bool    // the child's completion reached the door
	consumed  bool    // the outcome went into a continuation
	abandoned bool    // the task ended; nobody waits for it

	// When each step of the launch ended (the split of the call → started
	// figure, docs/benchmarks.md): the spawn approved, the process started,
	// its --json line read, its task delivered.
	tApproved, tExec, tReady, tDelivered time.Time
	// watchUntil is when the child watch ends the child: tReady plus the
	// deadline.
	watchUntil time.Time
}

func (d *delegation) exited() bool {
	select {
	case <-d.exitedCh:
		return true
	default:
		return false
	}
}

// launch starts the child of an approved spawn and brings it to started:
// its --json line within the launch bound, then (an agent child) its task
// accepted at its door within the delivery bound. Anything short of that
// stops and reaps the child and is returned as the failed call's output.
func (r *Runtime) launch(ctx context.Context, d *delegation, g roostapi.Grant, task, traceparent string) error {
	if r.cfg.ChildEnvAllow != nil {
		allow, err := r.cfg.ChildEnvAllow(d.full, d.version)
		if err != nil {
			return err
		}
		d.envAllow = allow
	}
	hexID := make([]byte, 8)
	rand.Read(hexID)
	d.childDir = filepath.Join(r.cfg.RecordsDir, "children", d.bare+"-"+hex.EncodeToString(hexID))
	if err := os.MkdirAll(filepath.Dir(d.childDir), 0o700); err != nil {
		return fmt.Errorf("the child's directory cannot be made: %w", err)
	}
	if err := os.Mkdir(d.childDir, 0o700); err != nil {
		return fmt.Errorf("the child's directory cannot be made: %w", err)
	}
	if r.cfg.Snapshot != nil && slices.Contains(r.cfg.WorkdirSnapshot, d.full) {
		snap, err := r.cfg.Snapshot(ctx, d.full, d.version, d.childDir)
		if err != nil {
			return fmt.Errorf("the workdir snapshot failed: %w", err)
		}
		d.snapshot = snap
	}
	logDir := filepath.Join(r.cfg.RecordsDir, "logs", "children")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return fmt.Errorf("the child's log directory cannot be made: %w", err)
	}
	d.logPath = filepath.Join(logDir, d.id+".log")
	logFile, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("the child's log cannot be opened: %w", err)
	}
	// Minted for every child, before the parent knows its kind (as the
	// task field): a child whose door declares network.authentication takes
	// it as its operator token, any other ignores it.
	if d.doorToken, err = doorapi.NewOperatorToken(); err != nil {
		logFile.Close()
		return fmt.Errorf("the child's door token cannot be made: %w", err)
	}
	lr, lw, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return fmt.Errorf("the spawner lifeline cannot be made: %w", err)
	}
	bin := r.cfg.MurBinary
	cmd := exec.Command(bin, "run", "--capsule", d.full, "--capsule-version", d.version,
		"--workdir", d.childDir, "--json", "--"+launchapi.FlagSpawnApprovalStdin)
	cmd.Dir = d.childDir
	cmd.Env = r.childEnv(d)
	cmd.ExtraFiles = []*os.File{lr} // launchapi.LifelineFD
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	d.stderrTail = &tail{w: logFile}
	cmd.Stderr = d.stderrTail
	stdin, err := cmd.StdinPipe()
	if err != nil {
		lr.Close()
		lw.Close()
		logFile.Close()
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		lr.Close()
		lw.Close()
		logFile.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		lr.Close()
		lw.Close()
		logFile.Close()
		return fmt.Errorf("%s cannot be started: %w", bin, err)
	}
	lr.Close() // the child holds the only read end; this process the only write end
	d.cmd, d.lifeline, d.started = cmd, lw, time.Now()
	d.tExec = d.started
	d.exitedCh = make(chan struct{})
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		err := cmd.Wait()
		logFile.Close()
		d.exitStatus = exitText(cmd.ProcessState, err)
		lw.Close()
		close(d.exitedCh)
		<-d.decided
		r.childExited(d)
	}()
	_, _ = stdin.Write(launchapi.Launched{Approval: g.Approval, ParentTier: r.cfg.Tier, Snapshot: d.snapshot, Task: scriptTask(task),
		SpawnedBy: r.cfg.SessionID, DelegationID: d.id, DoorToken: d.doorToken}.Line())
	stdin.Close()

	rd, err := readReady(stdout, d.exitedCh)
	if err != nil {
		return r.abort(d, err)
	}
	d.tReady = time.Now()
	go io.Copy(io.Discard, stdout) // nothing else is printed on stdout; keep the pipe drained
	d.sessionID, d.recordsDir = rd.SessionID, rd.RecordsDir
	if rd.URL == nil {
		d.script = true
		d.tDelivered = d.tReady
		return nil // a script child reads its task from standard input
	}
	d.url = "http://" + *rd.URL
	if err := deliver(ctx, d, task, traceparent); err != nil {
		return r.abort(d, err)
	}
	d.tDelivered = time.Now()
	return nil
}

// scriptTask is the stdin line's task: only a script child takes it there,
// and the parent cannot tell which kind it launched before the --json
// line; an agent child ignores the field.
func scriptTask(task string) string { return task }

// abort stops and reaps a child that did not reach started.
func (r *Runtime) abort(d *delegation, why error) error {
	r.mu.Lock()
	d.ending = "launch"
	r.mu.Unlock()
	endChildren([]*delegation{d})
	return why
}

// readReady reads the child's first stdout line within the launch bound.
func readReady(stdout io.Reader, exited <-chan struct{}) (launchapi.Ready, error) {
	type got struct {
		line string
		err  error
	}
	ch := make(chan got, 1)
	go func() {
		l, err := bufio.NewReaderSize(stdout, 16<<10).ReadString('\n')
		ch <- got{l, err}
	}()
	t := time.NewTimer(LaunchBound)
	defer t.Stop()
	var g got
	select {
	case g = <-ch:
	case <-t.C:
		return launchapi.Ready{}, fmt.Errorf("the child printed no --json line within the launch bound of %s", LaunchBound)
	}
	if g.err != nil && strings.TrimSpace(g.line) == "" {
		<-exited
		return launchapi.Ready{}, fmt.Errorf("the child exited before it was ready")
	}
	return launchapi.ParseReady(g.line)
}

// door is the client of the child's door: it presents the child's door
// token, which an authenticated door requires and a public one ignores.
func (d *delegation) door() *doorapi.Client {
	c := doorapi.NewClient(doorapi.Endpoint(d.url), nil)
	c.Token = d.doorToken
	return c
}

// deliver sends an agent child its task (x-murmur-task-origin: delegation,
// returnImmediately), retrying while its listener comes up, within the
// delivery bound. The child is started once it answers with a task that is
// not rejected.
func deliver(ctx context.Context, d *delegation, task, traceparent string) error {
	door := d.door()
	t := doorapi.Task{
		Message:     &a2a.Message{ID: ids.New(ids.Event), Role: a2a.MessageRoleUser, Parts: a2a.ContentParts{a2a.NewTextPart(task)}},
		Origin:      doorapi.OriginDelegation,
		TraceParent: traceparent, ReturnImmediately: true,
	}
	deadline := time.Now().Add(DeliveryBound)
	var last error
	for verified := false; ; {
		// The task goes only to the door that answers as the child's
		// session: the address it reported may be a port it freed and
		// another process took since.
		if !verified {
			last = sameSession(ctx, door, d.sessionID)
			verified = last == nil
		}
		if verified {
			if d.childTask, last = sendTask(ctx, door, t); last == nil {
				return nil
			}
		}
		var perm permanent
		if errors.As(last, &perm) || time.Now().After(deadline) || d.exited() {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("the child did not accept its task: %w", last)
}

type permanent struct{ error }

// sameSession asks the door's agent card which session it serves.
func sameSession(ctx context.Context, door *doorapi.Client, want string) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sid, err := door.CardSessionID(cctx)
	if err != nil {
		return err
	}
	if sid != want {
		return fmt.Errorf("the door at its address answers as session %s, not its %s", sid, want)
	}
	return nil
}

// sendTask makes one attempt. An answer settles the call (a refusal is
// permanent); a request that got no answer is worth another try.
func sendTask(ctx context.Context, door *doorapi.Client, t doorapi.Task) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := door.SendTask(cctx, t)
	var refused *doorapi.RefusalError
	if errors.As(err, &refused) {
		// An authenticated door that does not take the parent's token (a
		// child that did not take door_token) answers the same every time.
		return "", permanent{fmt.Errorf("its door refused the task: %w", err)}
	}
	if code, answered := doorapi.CodeOf(err); answered {
		return "", permanent{fmt.Errorf("its door refused the task (%d): %s (lifecycle.task_acceptance)", code, err.Error())}
	}
	if err != nil {
		return "", err
	}
	switch r := res.(type) {
	case *a2a.Task:
		if r.Status.State == a2a.TaskStateRejected {
			return "", permanent{fmt.Errorf("its door rejected the task (lifecycle.task_acceptance)")}
		}
		return string(r.ID), nil
	}
	return "", permanent{fmt.Errorf("its door answered no task")}
}

// childEnv is the child's whole environment, built from nothing
// (docs/delegation.md, the child's environment); MURMUR_SPAWNER goes
// last so no env.allow name displaces it.
func (r *Runtime) childEnv(d *delegation) []string {
	look := r.cfg.Lookup
	var env []string
	runtimeNames := map[string]bool{"PATH": true, "HOME": true, "USER": true, "LOGNAME": true,
		EnvRoostURL: true, EnvHostWarnings: true, EnvSpawnerLifeline: true, EnvSpawner: true, EnvFormationID: true,
		trace.EnvCollector: true}
	for _, name := range r.cfg.EnvAllow {
		// A name reaches the child only when both its env.allow and the
		// parent's list it (and the parent holds it): every other
		// variable the parent holds is absent from the child.
		if runtimeNames[name] || strings.HasPrefix(name, "MURMUR_FORMATION_") || !slices.Contains(d.envAllow, name) {
			continue
		}
		if v, ok := look(name); ok {
			env = append(env, name+"="+v)
		}
	}
	path, _ := look("PATH")
	home, _ := look("HOME")
	env = append(env, "PATH="+path, "HOME="+home)
	for _, n := range []string{"USER", "LOGNAME"} {
		if v, ok := look(n); ok {
			env = append(env, n+"="+v)
		}
	}
	if r.cfg.FormationID != "" {
		env = append(env, EnvFormationID+"="+r.cfg.FormationID)
	}
	// The runtime's collector (a container's): the child's spans join the
	// same trace wherever they are exported from.
	if v, ok := look(trace.EnvCollector); ok && v != "" {
		env = append(env, trace.EnvCollector+"="+v)
	}
	env = append(env, EnvHostWarnings+"=1", EnvSpawnerLifeline+"="+strconv.Itoa(launchapi.LifelineFD), EnvRoostURL+"="+r.cfg.RoostURL)
	if d.step == nil { // a plan step's child posts no completion: it has no handle
		sp := Spawner{URL: r.cfg.DoorURL, SessionID: r.cfg.SessionID, ContextID: d.contextID, DelegationID: d.id}
		env = append(env, EnvSpawner+"="+sp.EnvValue())
	}
	return env
}

// endChildren ends children all at once: SIGTERM to each one's process
// group, one grace, then SIGKILL to the groups; it returns once every one
// has exited. The group, not the launched process alone, so whatever the
// child started in it is ended with it.
func endChildren(ds []*delegation) {
	for _, d := range ds {
		if d.cmd != nil && d.cmd.Process != nil && !d.exited() {
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
		}
	}
	grace := time.NewTimer(EndGrace)
	defer grace.Stop()
	for _, d := range ds {
		if d.exitedCh == nil {
			continue
		}
		select {
		case <-d.exitedCh:
			continue
		case <-grace.C:
		}
		// The grace is shared: past it, kill what is left at once.
		for _, e := range ds {
			if e.cmd != nil && e.cmd.Process != nil && !e.exited() {
				_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
			}
		}
		break
	}
	for _, d := range ds {
		if d.exitedCh != nil {
			<-d.exitedCh
		}
	}
}

func exitText(ps *os.ProcessState, err error) string {
	if ps == nil {
		if err != nil {
			return err.Error()
		}
		return "unknown"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		// "killed by SIGKILL", not Signal.String's "killed by killed".
		return "killed by " + unix.SignalName(ws.Signal())
	}
	return fmt.Sprintf("exit status %d", ps.ExitCode())
}

// tail copies the child's stderr to its log and keeps the last lines.
type tail struct {
	mu    sync.Mutex
	w     io.Writer
	lines []string
	part  string
}

const tailLines = 20

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = t.w.Write(p)
	s := t.part + string(p)
	parts := strings.Split(s, "\n")
	t.part = parts[len(parts)-1]
	for _, l := range parts[:len(parts)-1] {
		t.lines = append(t.lines, l)
		if len(t.lines) > tailLines {
			t.lines = t.lines[1:]
		}
	}
	return len(p), nil
}

func (t *tail) Last() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	l := append([]string(nil), t.lines...)
	if t.part != "" {
		l = append(l, t.part)
	}
	if len(l) > tailLines {
		l = l[len(l)-tailLines:]
	}
	return strings.Join(l, "\n")
}
