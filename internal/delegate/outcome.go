package delegate

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/murmur-go/murmur/internal/agent"
	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/trace"
)

// MaxOutcomeBytes is how much of a child's answer an outcome block holds.
const MaxOutcomeBytes = 64 << 10

// Reasons a delegation is terminated (the outcome's reason: line).
const (
	ReasonCancelled = "the delegating task was cancelled"
	ReasonNoTurn    = "the delegating task had no inference turn left to read this outcome"
)

func reasonEnded(status string) string {
	return fmt.Sprintf("the delegating task ended %s before this sub-capsule finished", status)
}

func (r *Runtime) reasonBackstop() string {
	return fmt.Sprintf("no outcome reached the delegating task within %ds of this sub-capsule starting", int((r.cfg.Deadline+BackstopExtra)/time.Second))
}

func (r *Runtime) reasonDeadline() string {
	return fmt.Sprintf("the sub-capsule was still running at lifecycle.delegation_deadline_secs (%ds)", int(r.cfg.Deadline/time.Second))
}

// changed wakes every waiter; r.mu is held.
func (r *Runtime) changedLocked() {
	if r.changed != nil {
		close(r.changed)
	}
	r.changed = make(chan struct{})
}

// watch is the child watch: past the deadline a child still running is
// ended and its terminated outcome goes to the task. The deadline counts
// from the moment the child reported itself ready (its --json line), not
// from its task's delivery.
func (r *Runtime) watch(d *delegation) {
	t := time.NewTimer(time.Until(d.watchUntil))
	defer t.Stop()
	select {
	case <-d.exitedCh:
	case <-t.C:
		r.end([]*delegation{d}, r.reasonDeadline(), false)
	}
}

// end ends children with reason; abandon marks them as no task's to read.
func (r *Runtime) end(ds []*delegation, reason string, abandon bool) {
	var live []*delegation
	r.mu.Lock()
	for _, d := range ds {
		if abandon {
			d.abandoned = true
		}
		if d.outcome == nil && d.ending == "" {
			d.ending = reason
			live = append(live, d)
		}
	}
	r.mu.Unlock()
	endChildren(live)
}

// endAll ends children a session's end leaves running.
func (r *Runtime) endAll(ds []*delegation, reason string) { r.end(ds, reason, true) }

// childExited builds the delegation's outcome once its process has exited:
// the launcher's terminated record for a child this session ended, the
// child's own completion.json otherwise, or the launcher's crashed record
// when the child left none. Whichever is written first is the outcome.
func (r *Runtime) childExited(d *delegation) {
	r.mu.Lock()
	ending, launchFailed, abandoned := d.ending, d.ending == "launch", d.abandoned
	r.mu.Unlock()
	if launchFailed {
		return
	}
	if d.step != nil {
		r.stepChildExited(d)
		return
	}
	dur := time.Since(d.started).Milliseconds()
	rec := Record{Completion: Completion{DelegationID: d.id, CapsuleName: d.full, CapsuleVersion: d.version, SessionID: d.sessionID,
		Workdir: d.childDir, DurationMS: dur}, ReportedBy: "launcher"}
	switch own, err := ReadRecord(d.recordsDir); {
	case ending != "":
		rec.Status = StatusTerminated
		rec.Detail = "the parent ended this delegation; " + d.exitStatus + tailDetail(d)
	case err == nil && own.ReportedBy == "child" && own.DelegationID == d.id:
		rec = own
	default:
		rec.Status = StatusCrashed
		rec.Detail = "the child exited without recording a completion; " + d.exitStatus + tailDetail(d)
	}
	if p := r.resultPath(d); rec.ResultPath == "" && p != "" {
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			rec.ResultPath = p
		}
	}
	switch {
	case abandoned && rec.ReportedBy == "launcher":
		// Its task ended it: the record is posted to nobody.
		rec.Delivered, rec.DeliveryError = false, DeliveryTaskEnded
	case !rec.Delivered:
		rec.Delivered, rec.DeliveryError = true, "" // delivered to the waiting task in process
	}
	if d.recordsDir != "" {
		if err := WriteRecord(d.recordsDir, rec); err != nil {
			r.cfg.Log.Warn("the launcher's completion record could not be written", "delegation_id", d.id, "error", err)
		}
	}
	var reason *string
	if ending != "" {
		reason = &ending
	}
	r.cfg.Recorder.Emit(trace.Delegation{DelegationID: d.id, Capsule: d.bare, Version: d.version,
		ChildSessionID: d.sessionID, DurationMS: dur, Outcome: rec.Status, Reason: reason})
	r.mu.Lock()
	d.outcome = &rec
	r.changedLocked()
	r.mu.Unlock()
	if r.stopListener != nil {
		r.writeOutcome(d)
	}
}

// DeliveryTaskEnded is the delivery_error of a launcher record whose
// delegating task ended the delegation.
const DeliveryTaskEnded = "the delegating task ended"

func tailDetail(d *delegation) string {
	if t := d.stderrTail.Last(); t != "" {
		return "\n" + t
	}
	return ""
}

// resultPath is where the child leaves its answer: an agent child's records
// dir, a script child's work folder.
func (r *Runtime) resultPath(d *delegation) string {
	if d.script {
		return filepath.Join(d.childDir, "out", "result.txt")
	}
	if d.recordsDir == "" {
		return ""
	}
	return filepath.Join(d.recordsDir, "out", "result.txt")
}

// InFlight lists the task's delegations whose outcome has not arrived, in id order.
func (r *Runtime) InFlight(taskID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, d := range r.dels {
		if d.taskID == taskID && d.outcome == nil && !d.abandoned {
			out = append(out, d.id)
		}
		// A plan step's delegation is the task's until its step returns.
		if d.step != nil && d.step.taskID == taskID && !d.step.returned {
			out = append(out, d.id)
		}
	}
	sort.Strings(out)
	return out
}

// pending is the task's delegations not yet read into a continuation.
func (r *Runtime) pendingLocked(taskID string) []*delegation {
	var out []*delegation
	for _, d := range r.dels {
		if d.taskID == taskID && !d.consumed && !d.abandoned {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// Claim takes the task's delegations not yet read into a continuation for
// this round of §18's wait (agent.Part); nil when it has none. While the
// round waits, a backstop ends a child whose outcome has not arrived
// within the deadline and BackstopExtra of its start.
func (r *Runtime) Claim(taskID string) agent.Claim {
	r.mu.Lock()
	ds := r.pendingLocked(taskID)
	r.mu.Unlock()
	if len(ds) == 0 {
		return nil
	}
	c := &claim{r: r, ds: ds}
	c.backstop = time.AfterFunc(time.Until(earliest(ds).Add(r.cfg.Deadline+BackstopExtra)), c.endLate)
	return c
}

// claim is one round's delegations.
type claim struct {
	r        *Runtime
	ds       []*delegation
	backstop *time.Timer
}

// endLate ends the children past their backstop; another's may come later.
func (c *claim) endLate() {
	r := c.r
	var late []*delegation
	waiting := false
	r.mu.Lock()
	for _, d := range c.ds {
		if d.outcome == nil {
			waiting = true
			if time.Since(d.started) >= r.cfg.Deadline+BackstopExtra {
				late = append(late, d)
			}
		}
	}
	r.mu.Unlock()
	r.end(late, r.reasonBackstop(), false)
	if waiting {
		c.backstop.Reset(time.Second)
	}
}

func (c *claim) Outstanding() (int, <-chan struct{}) {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, d := range c.ds {
		if d.outcome == nil {
			n++
		}
	}
	if r.changed == nil {
		r.changedLocked()
	}
	return n, r.changed
}

func (c *claim) Deliver() (ids, blocks []string) {
	r := c.r
	r.mu.Lock()
	for _, d := range c.ds {
		d.consumed = true
	}
	r.mu.Unlock()
	for _, d := range c.ds {
		ids = append(ids, d.id)
		blocks = append(blocks, r.block(d))
	}
	return ids, blocks
}

func (c *claim) Abandon(noTurn bool) {
	reason := ReasonCancelled
	if noTurn {
		reason = ReasonNoTurn
	}
	c.r.end(c.ds, reason, true)
}

func (c *claim) Release() { c.backstop.Stop() }

// TaskEnded ends the task's delegations still running when it ends
// (status is task_end's exit_status) and forgets its unread outcomes.
func (r *Runtime) TaskEnded(taskID, status string) {
	r.mu.Lock()
	ds := r.pendingLocked(taskID)
	r.mu.Unlock()
	reason := reasonEnded(status)
	if status == trace.EndCanceled {
		reason = ReasonCancelled
	}
	r.end(ds, reason, true)
}

// block is one outcome as the model reads it.
func (r *Runtime) block(d *delegation) string {
	o := d.outcome
	var b strings.Builder
	fmt.Fprintf(&b, "[delegate-task] delegation %s to %s@%s ended %s:\n", d.id, d.bare, d.version, o.Status)
	fmt.Fprintf(&b, "<untrusted-content source=delegation:%s>\n", d.bare)
	var in strings.Builder
	fmt.Fprintf(&in, "Delegated capsule finished.\ndelegation_id: %s\ncapsule: %s@%s\nsession_id: %s\nstatus: %s\nduration_ms: %d\n",
		d.id, d.bare, d.version, d.sessionID, o.Status, o.DurationMS)
	if o.Status == StatusTerminated {
		fmt.Fprintf(&in, "reason: %s\n", d.ending)
	}
	if (o.Status == StatusCrashed || o.Status == StatusTerminated) && o.Detail != "" {
		in.WriteString("detail:\n")
		for _, l := range strings.Split(o.Detail, "\n") {
			in.WriteString("  " + l + "\n")
		}
	}
	fmt.Fprintf(&in, "workdir: %s\n", d.childDir)
	in.WriteString(r.resultText(d))
	b.WriteString(agent.Unfence(in.String()))
	b.WriteString("\n</untrusted-content>")
	return b.String()
}

// resultText is the block's result: ending, from the child's result file,
// which is never followed through a link or read as anything but a
// regular file: it is opened without following a link and without
// blocking (a FIFO would otherwise hang the task), and checked on the
// descriptor itself, so a file swapped after a look is not read either.
func (r *Runtime) resultText(d *delegation) string {
	const none = "result: none (the child wrote no result file)"
	p := r.resultPath(d)
	if p == "" {
		return none
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return none
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return none
	}
	if st.Size() == 0 {
		return "result: (the child's result file is empty)"
	}
	head := make([]byte, MaxOutcomeBytes+utf8.UTFMax)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if n <= MaxOutcomeBytes {
		return "result:\n" + string(head)
	}
	kept := MaxOutcomeBytes
	for kept > 0 && !utf8.RuneStart(head[kept]) {
		kept--
	}
	where := fmt.Sprintf("the whole answer is delegations/%s.txt in the runtime directory", d.id)
	if err := r.keepWhole(d.id, f, st.Size()); err != nil {
		where = "the whole answer could not be kept in the runtime directory: " + err.Error()
	}
	return fmt.Sprintf("result:\n%s […]\n[cut at %d of %d bytes; %s]", head[:kept], kept, st.Size(), where)
}

// MaxKeptBytes bounds the copy of a cut answer in the runtime directory: a
// child cannot fill the parent's disk (or a tmpfs) by leaving a huge or
// sparse result file; its own copy stays in its records.
const MaxKeptBytes = 256 << 20

// keepWhole copies a cut answer (the open result file) to
// delegations/<id>.txt in the runtime dir, read-only.
func (r *Runtime) keepWhole(id string, in *os.File, size int64) error {
	if size > MaxKeptBytes {
		return fmt.Errorf("it is %d bytes, over the %d-byte ceiling of a kept answer", size, MaxKeptBytes)
	}
	dir := filepath.Join(r.cfg.RuntimeDir, "delegations")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if _, err := in.Seek(0, io.SeekStart); err != nil {
		return err
	}
	dst := filepath.Join(dir, id+".txt")
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o400)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, io.LimitReader(in, MaxKeptBytes))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
	}
	return err
}

// HandleCompletion answers a completion at the door (door.CompletionHandler).
func (r *Runtime) HandleCompletion(_ context.Context, c *door.Completion) (any, error) {
	if c.Session != r.cfg.SessionID {
		return nil, door.Misaddressed(c.Session, r.cfg.SessionID)
	}
	notAwaited := func(msg string) error {
		return &door.RPCError{Code: doorapi.CodeCompletionNotAwaited, Reason: doorapi.ReasonCompletionNotAwaited, Domain: doorapi.MurmurDomain,
			Message: msg, Metadata: map[string]string{"delegation_id": c.DelegationID}}
	}
	if c.DelegationID == "" {
		return nil, notAwaited("completion names no delegation in x-murmur-delegation-id, so no task in this session is waiting for it")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.dels[c.DelegationID]
	// A delegation this session is ending is answered so even when its
	// task has ended (which is why it is being ended): its launcher, not
	// this completion, records the outcome. Once that record exists and
	// nobody reads it, the delegation is one no task waits for.
	switch {
	case d != nil && d.ending != "" && (d.outcome == nil || !(d.abandoned || d.consumed)):
		return nil, notAwaited(fmt.Sprintf("delegation %s is being ended by this session; its launcher records the outcome", c.DelegationID))
	case d == nil || d.abandoned || d.consumed:
		return nil, notAwaited(fmt.Sprintf("no task in this session is waiting for delegation %s", c.DelegationID))
	}
	d.received = true
	return doorapi.CompletionReceipt{DelegationID: d.id, Received: true}, nil
}

func earliest(ds []*delegation) time.Time {
	t := ds[0].started
	for _, d := range ds[1:] {
		if d.started.Before(t) {
			t = d.started
		}
	}
	return t
}
