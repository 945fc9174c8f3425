package hooks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// Policy hooks (docs/policy.md): a hook whose component exports
// murmur:policy/gate@0.1.0 is asked before each call the manifest allows
// runs. The hooks are asked in manifest order and the first that does not
// allow the call decides; a hook that errs, traps, runs past its deadline,
// hits a limit, answers something the runtime cannot read or denies
// without a reason denies (fail-closed). Each ask is a hook call like a
// lifecycle event's: the hook's deadline, limits and grants, its warm
// instance, one hook_call line (event check-call, output allow or deny).

// Verdict is the policy hooks' answer to one call.
type Verdict struct {
	// Denied is true when a policy hook did not allow the call.
	Denied bool
	// Hook is the policy hook that denied it.
	Hook string
	// Reason is why, as the model and the call_denied line are told.
	Reason string
}

// maxReason bounds a hook's reason or error in what the model is told.
const maxReason = 1 << 10

// PolicyNames lists the policy hooks in manifest order
// (session_start.policy_hooks[]).
func (d *Dispatcher) PolicyNames() []string {
	if d == nil {
		return nil
	}
	out := make([]string, len(d.policy))
	for i, h := range d.policy {
		out[i] = h.name
	}
	return out
}

// HasPolicy reports whether any hook is a policy hook: without one every
// call is allowed and the gate asks nothing.
func (d *Dispatcher) HasPolicy() bool { return d != nil && len(d.policy) > 0 }

// CheckCall asks the policy hooks about one call, in manifest order, one
// call at a time across the session; the first that does not allow it
// decides, and later hooks are not asked.
func (d *Dispatcher) CheckCall(ctx context.Context, r wit.CallRequest) Verdict {
	if !d.HasPolicy() {
		return Verdict{}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, h := range d.policy {
		if why, denied := d.check(ctx, h, r); denied {
			return Verdict{Denied: true, Hook: h.name, Reason: why}
		}
	}
	return Verdict{}
}

// check asks one policy hook and records the ask; it returns the <why> of
// a call it did not allow.
func (d *Dispatcher) check(ctx context.Context, h *hook, r wit.CallRequest) (string, bool) {
	cannot := ", and a policy hook that cannot answer denies"
	if h.stopped {
		d.record(Call{Hook: h.name, Event: wit.HookCheckCall, Status: StatusNotCalled})
		return fmt.Sprintf("the policy hook %s was stopped at its deadline earlier in this session and is no longer asked, so every call is denied", h.name), true
	}
	h.inTok, h.outTok = 0, 0
	start := time.Now()
	var dec wit.Decision
	var err error
	if h.inst == nil {
		// An earlier ending poisoned its instance: this call gets a fresh one.
		h.inst, err = h.engine.Instantiate(ctx, h.comp, h.rc)
	}
	if err == nil {
		dec, err = wit.CheckCall(ctx, h.inst, h.gate, r)
	} else {
		err = &wit.UnreadableError{Why: "it could not be instantiated: " + err.Error()}
	}
	c := Call{Hook: h.name, Event: wit.HookCheckCall, DurationMS: time.Since(start).Milliseconds(), Status: StatusOK,
		InputTokens: h.inTok, OutputTokens: h.outTok}
	if err == nil {
		out := wit.DecisionAllow
		if dec.Deny {
			out = wit.DecisionDeny
		}
		c.Output = &out
		d.record(c)
		switch {
		case !dec.Deny:
			return "", false
		case strings.TrimSpace(dec.Reason) == "":
			return fmt.Sprintf("the policy hook %s denied it without giving a reason", h.name), true
		}
		return fmt.Sprintf("the policy hook %s denied it: %s", h.name, cut(dec.Reason, maxReason)), true
	}
	var why string
	var he *wit.HookError
	var un *wit.UnreadableError
	switch {
	case errors.As(err, &he):
		c.Status = StatusError
		c.Error = &he.Message
		why = fmt.Sprintf("the policy hook %s failed (%s)%s", h.name, cut(he.Message, maxReason), cannot)
	case errors.As(err, &un):
		c.Status = StatusError
		c.Error = &un.Why
		why = fmt.Sprintf("the policy hook %s gave no answer the runtime can read (%s)%s", h.name, cut(un.Why, maxReason), cannot)
	default:
		e := grant.EndingOf(err)
		reason := e.Reason
		if reason == "" {
			reason = err.Error()
		}
		c.Error = &reason
		switch e.Status {
		case trace.EndTrapped:
			c.Status = StatusTrapped
			why = fmt.Sprintf("the policy hook %s trapped (%s)%s", h.name, cut(reason, maxReason), cannot)
		case trace.EndDeadlineExceeded:
			c.Status = StatusDeadlineExceeded
			why = fmt.Sprintf("the policy hook %s did not answer within its deadline of %ds%s", h.name, int(h.rc.Limits.Deadline/time.Second), cannot)
		case trace.EndResourceLimit:
			c.Status = StatusResourceLimit
			why = fmt.Sprintf("the policy hook %s hit a resource limit (%s)%s", h.name, cut(reason, maxReason), cannot)
		default:
			c.Status = StatusError
			why = fmt.Sprintf("the policy hook %s gave no answer the runtime can read (%s)%s", h.name, cut(reason, maxReason), cannot)
		}
		if h.inst != nil {
			h.inst.Close()
			h.inst = nil
		}
		if e.WaitedOnRuntime {
			h.stopped = true
			if d.rec != nil {
				d.rec.CallDeadline(h.name, wit.HookCheckCall, h.rc.Limits.Deadline)
			}
		}
	}
	d.record(c)
	d.logFailure(h, c)
	return why, true
}

// cut shortens s to at most n bytes on a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
