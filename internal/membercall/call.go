package membercall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/murmur-go/murmur/internal/agent"
	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/trace"
)

// The endings of a call (member_call.status, §22.10).
const (
	StatusCompleted   = "completed"
	StatusNoAnswer    = "no_answer"
	StatusFailed      = "failed"
	StatusRejected    = "rejected"
	StatusTimedOut    = "timed_out"
	StatusUnreachable = "unreachable"
	StatusAbandoned   = "abandoned"
)

// call is one call-member call. Its goroutine alone writes the fields
// below the line; they are read under Runtime.mu.
type call struct {
	id, taskID, member, text string
	parent, traceparent      string // the calling turn's line; the span to send
	cancel                   context.CancelFunc
	first                    chan offer // the first offer's result, for the tool

	// Under Runtime.mu.
	start               time.Time
	offers              int
	memberTask          string
	ended               bool
	status, answer      string // answer: what the continuation's block says
	consumed, abandoned bool
}

// offer is what one SendMessage got.
type offer struct {
	kind   string // "started", "busy", StatusRejected, StatusFailed, or noAnswer
	taskID string
	msg    string
}

const noAnswer = "no-answer"

// busyText matches §11's two busy texts, the only ones re-offered.
var busyText = regexp.MustCompile(`^task rejected: (capsule is busy|the queue is full \(lifecycle\.queue_depth \d+\))$`)

// send makes one offer of the call's task.
func (r *Runtime) send(ctx context.Context, c *call, url, token string) offer {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.ReadBound)
	defer cancel()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(c.text))
	res, err := r.client(url, token).SendTask(cctx, doorapi.Task{Message: msg, Origin: doorapi.OriginPeer,
		TraceParent: c.traceparent, ReturnImmediately: true})
	if err != nil {
		var ref *doorapi.RefusalError
		if errors.As(err, &ref) || strings.Contains(err.Error(), "unexpected HTTP status") {
			return offer{kind: StatusFailed, msg: "the member's door refused the call: " + err.Error()}
		}
		if code, answered := doorapi.CodeOf(err); answered {
			return offer{kind: StatusFailed, msg: fmt.Sprintf("the member's door answered SendMessage with error %d: %s", code, err)}
		}
		return offer{kind: noAnswer, msg: "the member's door did not answer: " + err.Error()}
	}
	t, ok := res.(*a2a.Task)
	if !ok {
		return offer{kind: StatusFailed, msg: "the member's door answered with a message, not a task"}
	}
	if t.Status.State == a2a.TaskStateRejected {
		text := statusText(t.Status.Message)
		if busyText.MatchString(text) {
			return offer{kind: "busy", msg: text}
		}
		return offer{kind: StatusRejected, msg: text}
	}
	return offer{kind: "started", taskID: string(t.ID)}
}

func statusText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		b.WriteString(p.Text())
	}
	return b.String()
}

// run is the call's goroutine: the first offer (its result to the tool),
// the re-offers while the member is busy, then the polling until the
// member's task ends, the bound passes or the call is abandoned.
func (r *Runtime) run(ctx context.Context, c *call, token string) {
	defer r.wg.Done()
	bound := time.NewTimer(r.cfg.Deadline)
	defer bound.Stop()
	url, err := r.cfg.Callees.Address(ctx, c.member, r.cfg.AddressWait)
	if err != nil {
		if ctx.Err() != nil {
			r.end(c, StatusAbandoned, "", "the calling task ended")
			c.first <- offer{kind: StatusAbandoned}
			return
		}
		o := offer{kind: StatusFailed, msg: err.Error()}
		r.end(c, StatusFailed, "", o.msg)
		c.first <- o
		return
	}
	o := r.next(ctx, c, url, token)
	if ctx.Err() != nil {
		if o.kind == "started" {
			r.cancelMember(r.client(url, token), c)
		}
		r.end(c, StatusAbandoned, "", "the calling task ended")
		c.first <- offer{kind: StatusAbandoned}
		return
	}
	switch o.kind {
	case StatusFailed, StatusRejected:
		r.end(c, o.kind, "", o.msg)
		c.first <- o
		return
	case noAnswer:
		o.kind = StatusFailed
		r.end(c, StatusFailed, "", o.msg)
		c.first <- o
		return
	}
	c.first <- o
	misses := 0
	for o.kind == "busy" {
		r.mu.Lock()
		n := c.offers
		r.mu.Unlock()
		wait := time.NewTimer(r.cfg.Backoff(n) + r.jitter())
		select {
		case <-ctx.Done():
			wait.Stop()
			r.end(c, StatusAbandoned, "", "the calling task ended")
			return
		case <-bound.C:
			wait.Stop()
			r.endBusy(c)
			return
		case <-wait.C:
		}
		o = r.next(ctx, c, url, token)
		switch o.kind {
		case "busy":
			misses = 0
		case noAnswer:
			if misses++; misses >= 2 {
				r.end(c, StatusUnreachable, "", "the member's door stopped answering")
				return
			}
			o.kind = "busy" // offered again on the same schedule
		case StatusFailed, StatusRejected:
			if ctx.Err() != nil {
				r.end(c, StatusAbandoned, "", "the calling task ended")
				return
			}
			r.end(c, StatusRejected, "", "the member did not take the task: "+o.msg)
			return
		}
	}
	r.poll(ctx, c, url, token, bound)
}

// next makes the next offer and writes its line.
func (r *Runtime) next(ctx context.Context, c *call, url, token string) offer {
	r.mu.Lock()
	c.offers++
	n := c.offers
	r.mu.Unlock()
	o := r.send(ctx, c, url, token)
	switch o.kind {
	case "busy":
		r.cfg.Recorder.EmitUnder(c.parent, trace.MemberCallBusy{TaskID: c.taskID, CallID: c.id, Member: c.member,
			Offer: n, WaitedMS: time.Since(c.start).Milliseconds()})
	case "started":
		r.mu.Lock()
		c.memberTask = o.taskID
		r.mu.Unlock()
		r.cfg.Recorder.EmitUnder(c.parent, trace.MemberCallStart{TaskID: c.taskID, CallID: c.id, Member: c.member,
			MemberTaskID: o.taskID, Offers: n})
	}
	return o
}

// endBusy ends a call whose member was still busy at the bound.
func (r *Runtime) endBusy(c *call) {
	r.mu.Lock()
	n := c.offers
	r.mu.Unlock()
	r.end(c, StatusRejected, "", fmt.Sprintf("the member stayed busy for %s over %d offers", secs(time.Since(c.start)), n))
}

// poll reads the member's task every PollEvery until it ends.
func (r *Runtime) poll(ctx context.Context, c *call, url, token string, bound *time.Timer) {
	cl := r.client(url, token)
	tick := time.NewTicker(r.cfg.PollEvery)
	defer tick.Stop()
	misses := 0
	for {
		select {
		case <-ctx.Done():
			r.cancelMember(cl, c)
			r.end(c, StatusAbandoned, "", "the calling task ended")
			return
		case <-bound.C:
			r.cancelMember(cl, c)
			r.end(c, StatusTimedOut, "", fmt.Sprintf("no answer within %s; the member's task was cancelled", secs(r.cfg.Deadline)))
			return
		case <-tick.C:
		}
		rctx, cancel := context.WithTimeout(ctx, r.cfg.ReadBound)
		raw, err := cl.GetTask(rctx, c.memberTask)
		cancel()
		var rpcErr *doorapi.Error
		var ref *doorapi.RefusalError
		switch {
		case ctx.Err() != nil:
			continue // the select above ends it
		case errors.As(err, &rpcErr), errors.As(err, &ref):
			r.end(c, StatusFailed, "", "the member's door answered GetTask with an error: "+err.Error())
			return
		case err != nil:
			if misses++; misses >= 2 {
				r.end(c, StatusUnreachable, "", "the member's door stopped answering")
				return
			}
			continue
		}
		misses = 0
		if status, answer, reason, done := ended(raw); done {
			r.end(c, status, answer, reason)
			return
		}
	}
}

// cancelMember sends CancelTask for the task the member holds, bounded.
func (r *Runtime) cancelMember(cl interface {
	CancelTask(context.Context, string) error
}, c *call) {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.ReadBound)
	defer cancel()
	if err := cl.CancelTask(ctx, c.memberTask); err != nil {
		r.cfg.Log.Debug("call-member: the member's task could not be cancelled", "call_id", c.id, "error", err)
	}
}

// ended reads a GetTask answer: the call's ending once the member's task
// has ended, with its answer (completed) or the reason its block gives.
func ended(raw json.RawMessage) (status, answer, reason string, done bool) {
	var t a2a.Task
	if json.Unmarshal(raw, &t) != nil {
		return "", "", "", false
	}
	msg := statusText(t.Status.Message)
	switch t.Status.State {
	case a2a.TaskStateCompleted:
		answer := msg
		for _, a := range t.Artifacts {
			if a.ID == "response" || a.Name == "response" {
				var b strings.Builder
				for _, p := range a.Parts {
					b.WriteString(p.Text())
				}
				answer = b.String()
			}
		}
		return StatusCompleted, answer, "", true
	case a2a.TaskStateFailed:
		if why, ok := strings.CutPrefix(msg, agent.NoAnswerPrefix); ok {
			return StatusNoAnswer, "", "the member ended its task without an answer: " + why, true
		}
		return StatusFailed, "", msg, true
	case a2a.TaskStateCanceled:
		if msg == "" {
			msg = "the member's task was cancelled"
		}
		return StatusFailed, "", msg, true
	case a2a.TaskStateRejected:
		return StatusRejected, "", "the member did not take the task: " + msg, true
	}
	return "", "", "", false
}

// end records the call's ending once: its member_call line, and a change
// for the round. reason is the `none (…)` text of an ending without an
// answer; an abandoned call is never delivered.
func (r *Runtime) end(c *call, status, answer, reason string) {
	r.mu.Lock()
	if c.ended {
		r.mu.Unlock()
		return
	}
	c.ended, c.status = true, status
	if status == StatusCompleted {
		c.answer = answer
	} else {
		c.answer = "none (" + reason + ")"
	}
	if status == StatusAbandoned {
		c.abandoned = true
	}
	line := trace.MemberCall{TaskID: c.taskID, CallID: c.id, Member: c.member, Status: status, Offers: c.offers,
		DurationMS: time.Since(c.start).Milliseconds()}
	if c.memberTask != "" {
		mt := c.memberTask
		line.MemberTaskID = &mt
	}
	if status == StatusCompleted {
		line.AnswerBytes = len(answer)
	} else {
		line.Reason = &reason
	}
	// The line is written before the round wakes: a continuation never
	// precedes the line of a call it delivers.
	r.cfg.Recorder.EmitUnder(c.parent, line)
	r.changedLocked()
	r.mu.Unlock()
}
