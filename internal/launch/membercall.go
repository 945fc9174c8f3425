package launch

import (
	"strings"

	"github.com/murmur-go/murmur/internal/agent"
	"github.com/murmur-go/murmur/internal/delegate"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/membercall"
	"github.com/murmur-go/murmur/internal/trace"
)

// memberToolNames are call-member and end-without-answer when the member's
// channel holds a callee (docs/formations.md), for tools_declared.
func memberToolNames(p *Plan) []string {
	if len(p.callees.Names()) == 0 {
		return nil
	}
	return []string{membercall.CallToolName, membercall.EndToolName}
}

// addMemberTools makes the member-call runtime of an agent member with at
// least one callee and adds its two tools; a declared tool of either name
// is E-MAN-026.
func (k *agentRun) addMemberTools(r *run) error {
	p, sess := r.p, r.sess
	mc := membercall.New(membercall.Config{Callees: p.callees, Deadline: delegate.Deadline(p.Manifest, p.lookup),
		RuntimeDir: sess.RuntimeDir, Recorder: r.rec, Log: r.opts.Log})
	if mc == nil {
		return nil
	}
	for _, e := range mc.Tools() {
		if _, err := k.inv.Lookup(e.Name()); err == nil {
			return diag.New("E-MAN-026", "%s is the name of a runtime tool this formation member has (it may call %s): a declared tool cannot share it",
				e.Name(), strings.Join(p.callees.Names(), ", ")).WithHint("rename the declared tool")
		}
		if err := k.inv.Add(e); err != nil {
			return err
		}
	}
	k.calls = mc
	return nil
}

// waiter is the task's round: its delegations and its member calls.
func (k *agentRun) waiter(dl *spawnWiring, rec *trace.Recorder) agent.Waiter {
	rd := agent.Round{Recorder: rec}
	if dl.rt != nil {
		rd.Delegations = dl.rt
	}
	if k.calls != nil {
		rd.MemberCalls = k.calls
	}
	return rd.Waiter()
}

// endings is the member-call runtime as the loop's Endings, nil without one.
func (k *agentRun) endings() agent.Endings {
	if k.calls == nil {
		return nil
	}
	return k.calls
}
