package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/trace"
)

// Part is one kind of work a task hands off and waits for in §18's round:
// its delegations (delegate-task) or its member calls (call-member).
type Part interface {
	// Claim takes the task's work not yet read into a continuation for
	// this round; nil when there is none.
	Claim(taskID string) Claim
	// InFlight is the task's work still outstanding, in id order, for a
	// cancel's residue.
	InFlight(taskID string) []string
	// TaskEnded ends what the task still has outstanding and forgets what
	// it never read, once the task has ended with exit status status.
	TaskEnded(taskID, status string)
}

// Claim is one part's share of a round.
type Claim interface {
	// Outstanding is how many of the round's items have not ended, and a
	// channel closed at the part's next change.
	Outstanding() (int, <-chan struct{})
	// Deliver marks the round's items read and returns their ids and
	// blocks, in id order; called once nothing is outstanding.
	Deliver() (ids, blocks []string)
	// Abandon ends the round's outstanding items and leaves its arrived
	// ones unread: the task has no turn left (noTurn) or was cancelled.
	Abandon(noTurn bool)
	// Release drops what the claim holds (its timers) once the wait is over.
	Release()
}

// Round is the agent's Waiter made of its two parts (either may be nil):
// delegations and member calls wait together, and their outcomes come
// back as one continuation, delegations first (docs/formations.md).
type Round struct {
	Delegations Part
	MemberCalls Part
	// Recorder writes task_waiting and task_continued.
	Recorder *trace.Recorder
}

// Waiter returns r as a Waiter, or nil when it has no part.
func (r Round) Waiter() Waiter {
	if r.Delegations == nil && r.MemberCalls == nil {
		return nil
	}
	return r
}

// kind is one part's words and where its residue goes.
type kind struct {
	part                Part
	waiting, continuing string // fmt texts with one %d
	residue             func(ev door.Events, ids []string)
}

func (r Round) kinds() []kind {
	return []kind{
		{r.Delegations, "waiting on delegate-task: %d delegation(s) outstanding", "continuing with %d delegation outcome(s)",
			func(ev door.Events, ids []string) { ev.Delegations(ids) }},
		{r.MemberCalls, "waiting on call-member: %d call(s) outstanding", "continuing with %d member answer(s)",
			func(ev door.Events, ids []string) { ev.MemberCalls(ids) }},
	}
}

// Await waits, spending no tokens, for every item of the round and
// returns the one continuation (Waiter).
func (r Round) Await(ctx context.Context, taskID string, turnsLeft int, ev door.Events) (string, bool) {
	ks := r.kinds()
	claims := make([]Claim, len(ks))
	any := false
	for i, k := range ks {
		if k.part != nil {
			if c := k.part.Claim(taskID); c != nil {
				claims[i], any = c, true
			}
		}
	}
	if !any {
		return "", false
	}
	defer func() {
		for _, c := range claims {
			if c != nil {
				c.Release()
			}
		}
	}()
	abandon := func(noTurn bool) {
		for _, c := range claims {
			if c != nil {
				c.Abandon(noTurn)
			}
		}
	}
	if turnsLeft < 1 {
		abandon(true)
		return "", false
	}
	// A part with nothing in the round leaves its channel nil: a case
	// never taken.
	counts, last := make([]int, len(ks)), []int(nil)
	chans := make([]<-chan struct{}, len(ks))
	for {
		total := 0
		for i, c := range claims {
			counts[i], chans[i] = 0, nil
			if c != nil {
				counts[i], chans[i] = c.Outstanding()
			}
			total += counts[i]
		}
		if total == 0 {
			break
		}
		if last == nil {
			r.Recorder.Emit(trace.TaskWaiting{TaskID: taskID, Outstanding: counts[0], MemberCalls: counts[1]})
			ev.Phase(door.PhaseWaiting)
		}
		if !equal(counts, last) {
			var texts []string
			for i, k := range ks {
				if counts[i] > 0 {
					texts = append(texts, fmt.Sprintf(k.waiting, counts[i]))
				}
				if k.part != nil {
					k.residue(ev, k.part.InFlight(taskID))
				}
			}
			ev.Status(strings.Join(texts, "; "))
			last = append(last[:0:0], counts...)
		}
		select {
		case <-ctx.Done():
			abandon(false)
			return "", false
		case <-chans[0]:
		case <-chans[1]:
		}
	}
	var texts, blocks []string
	delivered := make([][]string, len(ks))
	for i, c := range claims {
		if c == nil {
			continue
		}
		ids, bs := c.Deliver()
		delivered[i] = ids
		blocks = append(blocks, bs...)
		if len(ids) > 0 {
			texts = append(texts, fmt.Sprintf(ks[i].continuing, len(ids)))
		}
	}
	ev.Status(strings.Join(texts, "; "))
	line := trace.TaskContinued{TaskID: taskID, Delegations: []string{}, MemberCalls: []string{}}
	if delivered[0] != nil {
		line.Delegations = delivered[0]
	}
	if delivered[1] != nil {
		line.MemberCalls = delivered[1]
	}
	r.Recorder.Emit(line)
	return strings.Join(blocks, "\n\n"), true
}

// TaskEnded tells each part the task has ended (Waiter).
func (r Round) TaskEnded(taskID, status string) {
	for _, p := range []Part{r.Delegations, r.MemberCalls} {
		if p != nil {
			p.TaskEnded(taskID, status)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
