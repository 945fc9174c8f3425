// Package membercall is a formation member's calls to its callees, the members its
// roster lets it call (docs/formations.md): the call-member and
// end-without-answer runtime tools, each call's life at the callee's door
// (offers, busy re-offers, polling, the bound, its ending), and the
// member-call part of the task's round, whose answers come back in the
// task's one continuation beside its delegations' outcomes.
//
// One goroutine owns each call: it makes the offers, reads the callee's
// task and writes the call's lines; the tool waits for its first offer,
// and the round for its ending.
package membercall

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/murmur-go/murmur/internal/agent"
	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/trace"
)

// The spec's timings (§22.10); Config may shorten them for tests.
const (
	PollEvery = 500 * time.Millisecond
	ReadBound = 5 * time.Second
)

// Config is one session's member calls.
type Config struct {
	// Callees is the member's channel view: callee names, tokens, doors.
	Callees *formation.Callees
	// Deadline bounds a call from its first offer (the caller's
	// lifecycle.delegation_deadline_secs or MURMUR_DELEGATION_TIMEOUT_SECS).
	Deadline time.Duration
	// RuntimeDir is where a cut answer is kept whole (member-calls/).
	RuntimeDir string
	Recorder   *trace.Recorder
	// HTTPClient reaches the callees' doors; nil is a client that uses no
	// proxy (the doors are on loopback).
	HTTPClient *http.Client
	Log        *slog.Logger

	// PollEvery, ReadBound and AddressWait are the spec's unless set;
	// Backoff is the wait before the offer after offer n (1-based) was
	// answered busy, before jitter (nil: 1 s, 2 s, 4 s, 8 s, 8 s …).
	PollEvery, ReadBound, AddressWait time.Duration
	Backoff                           func(n int) time.Duration
	// Jitter is the most added to each wait (nil: 250 ms).
	Jitter *time.Duration
}

// Backoff is the spec's wait before the offer after offer n was answered
// busy: 1 s, then 2 s, 4 s, 8 s, 8 s … (jitter is added on top).
func Backoff(n int) time.Duration {
	if n >= 4 {
		return 8 * time.Second
	}
	return time.Second << (n - 1)
}

// Runtime is a session's member calls. Its methods are safe for
// concurrent use.
type Runtime struct {
	cfg    Config
	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	changed chan struct{}
	calls   map[string]*call
	tasks   map[string]*taskInfo
	closed  bool
}

// taskInfo is what the runtime knows of a running task.
type taskInfo struct {
	caller   string  // the formation member that sent it ("" for none)
	noAnswer *string // end-without-answer's reason, once accepted
}

// New makes the member-call runtime; nil when the member has no callee.
func New(cfg Config) *Runtime {
	if len(cfg.Callees.Names()) == 0 {
		return nil
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = PollEvery
	}
	if cfg.ReadBound <= 0 {
		cfg.ReadBound = ReadBound
	}
	if cfg.AddressWait <= 0 {
		cfg.AddressWait = formation.AddressWait
	}
	if cfg.Backoff == nil {
		cfg.Backoff = Backoff
	}
	if cfg.Jitter == nil {
		j := 250 * time.Millisecond
		cfg.Jitter = &j
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: &http.Transport{Proxy: nil}}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	base, cancel := context.WithCancel(context.Background())
	return &Runtime{cfg: cfg, base: base, cancel: cancel, changed: make(chan struct{}),
		calls: map[string]*call{}, tasks: map[string]*taskInfo{}}
}

// Runner notes each task's sender for end-without-answer while it runs.
func (r *Runtime) Runner(next door.Runner) door.Runner {
	if r == nil {
		return next
	}
	return door.RunnerFunc(func(ctx context.Context, t *door.Task, ev door.Events) door.Outcome {
		r.mu.Lock()
		r.tasks[t.ID] = &taskInfo{caller: t.Caller}
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			delete(r.tasks, t.ID)
			r.mu.Unlock()
		}()
		return next.RunTask(ctx, t, ev)
	})
}

// NoAnswer is the reason the task gave end-without-answer, once accepted
// (agent.Endings).
func (r *Runtime) NoAnswer(taskID string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ti := r.tasks[taskID]; ti != nil && ti.noAnswer != nil {
		return *ti.noAnswer, true
	}
	return "", false
}

// changedLocked wakes every waiting round; r.mu is held.
func (r *Runtime) changedLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// pendingLocked is the task's calls not yet read into a continuation and
// not abandoned, in id order.
func (r *Runtime) pendingLocked(taskID string) []*call {
	var out []*call
	for _, c := range r.calls {
		if c.taskID == taskID && !c.consumed && !c.abandoned {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// InFlight is the task's outstanding calls, in id order (agent.Part).
func (r *Runtime) InFlight(taskID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []string{}
	for _, c := range r.pendingLocked(taskID) {
		if !c.ended {
			out = append(out, c.id)
		}
	}
	return out
}

// Claim takes the task's calls not yet read for this round (agent.Part).
func (r *Runtime) Claim(taskID string) agent.Claim {
	r.mu.Lock()
	cs := r.pendingLocked(taskID)
	r.mu.Unlock()
	if len(cs) == 0 {
		return nil
	}
	return &claim{r: r, cs: cs}
}

// TaskEnded abandons what the task still has outstanding and leaves its
// arrived answers unread (agent.Part).
func (r *Runtime) TaskEnded(taskID, _ string) {
	r.mu.Lock()
	cs := r.pendingLocked(taskID)
	r.mu.Unlock()
	r.abandon(cs)
}

// abandon ends the calls still outstanding (their goroutine cancels a
// task the member holds) and marks every one of them unread.
func (r *Runtime) abandon(cs []*call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		c.abandoned = true
		if !c.ended {
			c.cancel()
		}
	}
}

// Close abandons every call still outstanding, as a session's end does,
// and waits a bounded time for their cancels to reach the members.
func (r *Runtime) Close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.closed = true
	var cs []*call
	for _, c := range r.calls {
		cs = append(cs, c)
	}
	r.mu.Unlock()
	r.abandon(cs)
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(r.cfg.ReadBound + time.Second):
	}
	r.cancel()
}

// claim is one round's member calls.
type claim struct {
	r  *Runtime
	cs []*call
}

func (c *claim) Outstanding() (int, <-chan struct{}) {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	n := 0
	for _, cl := range c.cs {
		if !cl.ended {
			n++
		}
	}
	return n, c.r.changed
}

func (c *claim) Deliver() (ids, blocks []string) {
	c.r.mu.Lock()
	for _, cl := range c.cs {
		cl.consumed = true
	}
	c.r.mu.Unlock()
	for _, cl := range c.cs {
		ids = append(ids, cl.id)
		blocks = append(blocks, c.r.block(cl))
	}
	return ids, blocks
}

func (c *claim) Abandon(bool) { c.r.abandon(c.cs) }
func (c *claim) Release()     {}

// client is a door client presenting the callee's formation token.
func (r *Runtime) client(url, token string) *doorapi.Client {
	cl := doorapi.NewClient(doorapi.Endpoint(url), r.cfg.HTTPClient)
	cl.Token = token
	return cl
}

// jitter is 0 to Config.Jitter, uniform.
func (r *Runtime) jitter() time.Duration {
	if *r.cfg.Jitter <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(*r.cfg.Jitter) + 1))
}

func secs(d time.Duration) string { return fmt.Sprintf("%ds", int(d/time.Second)) }
