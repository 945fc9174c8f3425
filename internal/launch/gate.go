package launch

import (
	"context"
	"strings"
	"time"

	"github.com/murmur-go/murmur/internal/delegate"
	"github.com/murmur-go/murmur/internal/hooks"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/wit"
)

// gateConfig is the inventory's policy gate (docs/policy.md): the policy
// hooks the dispatcher holds, and the tools: keys marked approval:
// required. Without either the gate asks nothing.
func gateConfig(m *manifest.Manifest, d *hooks.Dispatcher) tools.GateConfig {
	var g tools.GateConfig
	if d.HasPolicy() {
		g.Policy = policyHooks{d}
	}
	for _, t := range m.Tools {
		if t.Approval.Or("none") == manifest.ApprovalRequired {
			if g.Approval == nil {
				g.Approval = map[string]bool{}
			}
			g.Approval[t.Tool] = true
		}
	}
	if m.Lifecycle.InputTimeoutSecs.Set {
		g.InputTimeout = time.Duration(m.Lifecycle.InputTimeoutSecs.V) * time.Second
	}
	return g
}

// policyHooks is the dispatcher as the gate's Policy.
type policyHooks struct{ d *hooks.Dispatcher }

func (p policyHooks) CheckCall(ctx context.Context, r wit.CallRequest) (bool, string, string) {
	v := p.d.CheckCall(ctx, r)
	return v.Denied, v.Hook, v.Reason
}

// approvalModelNames are the model's names of the tools marked approval:
// required (session_start.approval_required[]), by the rule the model's
// tool names follow: the bare name when no other tool shares it.
func approvalModelNames(m *manifest.Manifest) []string {
	names := inventoryNames(m)
	bare := map[string]int{}
	for _, n := range names {
		bare[manifest.Bare(n)]++
	}
	out := []string{}
	for _, t := range m.Tools {
		if t.Approval.Or("none") != manifest.ApprovalRequired {
			continue
		}
		if bare[manifest.Bare(t.Tool)] == 1 {
			out = append(out, manifest.Bare(t.Tool))
		} else {
			out = append(out, strings.ReplaceAll(t.Tool, "/", "__"))
		}
	}
	return out
}

// inventoryNames are the names of the tools an agent's inventory holds,
// as the manifest declares them.
func inventoryNames(m *manifest.Manifest) []string {
	var names []string
	for _, a := range m.Artifacts {
		if k := a.RuntimeKind(); k == manifest.RuntimeTool || k == manifest.RuntimeSkill {
			names = append(names, a.Name)
		}
	}
	names = append(names, m.Capabilities.Shell.Allow...)
	if len(m.Capabilities.Spawn.Allow) > 0 {
		names = append(names, delegate.ToolName)
	}
	return names
}

// inputTimeoutSecs is lifecycle.input_timeout_secs (nil: none).
func inputTimeoutSecs(m *manifest.Manifest) *int {
	if !m.Lifecycle.InputTimeoutSecs.Set {
		return nil
	}
	v := m.Lifecycle.InputTimeoutSecs.V
	return &v
}

// GateLines are --explain-scope's lines about the policy gate: the hooks
// that may be policy hooks (which of them export the gate is known once
// their components are compiled, at the session's start), and the tools
// whose calls wait for an operator.
func (p *Plan) GateLines() []string {
	var hooks []string
	for _, a := range p.Manifest.Artifacts {
		if a.RuntimeKind() == manifest.RuntimeHook {
			hooks = append(hooks, a.Name)
		}
	}
	policy := "none"
	if len(hooks) > 0 {
		policy = strings.Join(hooks, ", ") + " (each one whose component exports " + wit.IfacePolicyGate + ", asked in this order)"
	}
	approval := "none"
	if names := approvalModelNames(p.Manifest); len(names) > 0 {
		approval = strings.Join(names, ", ")
	}
	return []string{"policy hooks: " + policy, "operator approval: " + approval}
}
