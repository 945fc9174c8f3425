package wit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

// The policy world (docs/policy.md): murmur:policy/gate@0.1.0, exported by a
// policy hook, beside the unchanged murmur:hook@0.5.0. Its check-call is
// asked before a call the manifest allows runs; its decision has no case
// that grants anything.

const (
	// IfacePolicyGate is exported by a policy hook.
	IfacePolicyGate = "murmur:policy/gate@0.1.0"
	// WorldPolicyHook is the policy hook's world (wit/policy/policy.wit).
	WorldPolicyHook = "murmur:policy/policy-hook@0.1.0"
	// HookCheckCall is the gate's one function, and the event of its
	// hook_call lines.
	HookCheckCall = "check-call"

	// DecisionAllow and DecisionDeny are the decision's cases (a hook_call
	// line's output).
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
)

// CallKinds are call-kind's cases, in WIT order: a tool's kind as the gate
// names it.
var CallKinds = []string{"wasm", "skill", "shell", "runtime", "mcp"}

// CallRequest is murmur:policy/gate's call-request.
type CallRequest struct {
	TaskID     string
	Turn       uint32
	ToolCallID string
	ToolName   string
	// Kind is one of CallKinds.
	Kind string
	// Input is the call's input as compact JSON.
	Input string
	// Binary and Argv are set for shell kinds.
	Binary *string
	Argv   []string
	// PlanID and StepID are set for a plan's steps.
	PlanID, StepID *string
}

// Value returns the WIT value of r.
func (r CallRequest) Value() wasmhost.Value {
	argv := wasmhost.None
	if r.Argv != nil {
		argv = wasmhost.Some(strList(r.Argv))
	}
	return wasmhost.Record{{Name: "task-id", Value: r.TaskID}, {Name: "turn", Value: r.Turn},
		{Name: "tool-call-id", Value: r.ToolCallID}, {Name: "tool-name", Value: r.ToolName},
		{Name: "kind", Value: wasmhost.Enum(r.Kind)}, {Name: "input", Value: r.Input},
		{Name: "binary", Value: optS(r.Binary)}, {Name: "argv", Value: argv},
		{Name: "plan-id", Value: optS(r.PlanID)}, {Name: "step-id", Value: optS(r.StepID)}}
}

// Decision is a check-call's ok value: allow, or deny with its reason.
type Decision struct {
	Deny   bool
	Reason string
}

// UnreadableError is a check-call answer the runtime cannot read: not the
// result<decision, string> the WIT gives.
type UnreadableError struct{ Why string }

func (e *UnreadableError) Error() string { return e.Why }

// DecodeDecision converts a guest's result<decision, string>: an err is a
// *HookError, anything not of the WIT's shape an *UnreadableError.
func DecodeDecision(v wasmhost.Value) (Decision, error) {
	res, ok := v.(wasmhost.Result)
	if !ok {
		return Decision{}, &UnreadableError{fmt.Sprintf("want result<decision, string>, got %T", v)}
	}
	if res.IsErr {
		s, ok := res.Value.(string)
		if !ok {
			return Decision{}, &UnreadableError{fmt.Sprintf("err: want string, got %T", res.Value)}
		}
		return Decision{}, &HookError{Message: s}
	}
	vr, ok := res.Value.(wasmhost.Variant)
	if !ok {
		return Decision{}, &UnreadableError{fmt.Sprintf("decision: want variant, got %T", res.Value)}
	}
	switch vr.Case {
	case DecisionAllow:
		if vr.Value != nil {
			return Decision{}, &UnreadableError{"allow carries a payload"}
		}
		return Decision{}, nil
	case DecisionDeny:
		s, ok := vr.Value.(string)
		if !ok {
			return Decision{}, &UnreadableError{fmt.Sprintf("deny: want string, got %T", vr.Value)}
		}
		return Decision{Deny: true, Reason: s}, nil
	}
	return Decision{}, &UnreadableError{fmt.Sprintf("decision: unknown case %q", vr.Case)}
}

// CheckCall asks the policy hook instance exporting iface (the exact name
// HookExports found) about one call. Its error is the engine's typed
// ending, a *HookError for the hook's err(string), or an *UnreadableError.
func CheckCall(ctx context.Context, inst *wasmhost.Instance, iface string, r CallRequest) (Decision, error) {
	v, err := inst.Call(ctx, iface, HookCheckCall, r.Value())
	if err != nil {
		return Decision{}, err
	}
	return DecodeDecision(v)
}

// The WIT types of the policy world, for the shape check.
var (
	pKind         = &wasmhost.Type{Kind: wasmhost.KindEnum, Names: CallKinds}
	pOptList      = &wasmhost.Type{Kind: wasmhost.KindOption, Elem: hStrList}
	checkCallType = &wasmhost.FuncType{
		Params: []wasmhost.Param{{Name: "request", Type: hRecord("task-id", hString, "turn", hU32, "tool-call-id", hString,
			"tool-name", hString, "kind", pKind, "input", hString, "binary", hOptStr, "argv", pOptList,
			"plan-id", hOptStr, "step-id", hOptStr)}},
		Result: &wasmhost.Type{Kind: wasmhost.KindResult, Err: hString, Ok: &wasmhost.Type{Kind: wasmhost.KindVariant,
			Cases: []wasmhost.Case{{Name: DecisionAllow}, {Name: DecisionDeny, Type: hString}}}},
	}
)

// HookExports checks that c is a hook component: it exports
// murmur:hook/lifecycle@0.5.x with all nine lifecycle functions, or
// murmur:policy/gate@0.1.x with check-call, or both, each with its WIT
// signatures, and imports no murmur interface but
// murmur:runtime/inference@0.2.x. It returns the exact names of the
// interfaces it exports ("" for one it does not), or an E-RUN-096
// diagnostic naming what is missing or wrong.
func HookExports(c *wasmhost.Component, name string) (lifecycle, gate string, err error) {
	const family, gateFamily = "murmur:hook/lifecycle@0.5.", "murmur:policy/gate@0.1."
	refuse := func(format string, a ...any) error {
		return diag.New("E-RUN-096", "hook %s is not a hook component: it must export %s (the hook world, %s) or %s (the policy world, %s), or both, in the shapes the WIT gives: %s",
			name, IfaceHookLifecycle, WorldHook, IfacePolicyGate, WorldPolicyHook, fmt.Sprintf(format, a...)).
			WithHint("build it with scripts/build-component.sh <dir> hook <out.wasm> (a lifecycle hook) or <dir> policy-hook <out.wasm> (a policy hook)")
	}
	var fns, gfns map[string]*wasmhost.FuncType
	funcs := func(it wasmhost.Item) map[string]*wasmhost.FuncType {
		m := map[string]*wasmhost.FuncType{}
		for _, x := range it.Exports {
			if x.Kind == wasmhost.ItemFunc {
				m[x.Name] = x.Func
			}
		}
		return m
	}
	for _, it := range c.Exports() {
		switch {
		case it.Kind != wasmhost.ItemInstance:
		case lifecycle == "" && strings.HasPrefix(it.Name, family):
			lifecycle, fns = it.Name, funcs(it)
		case gate == "" && strings.HasPrefix(it.Name, gateFamily):
			gate, gfns = it.Name, funcs(it)
		}
	}
	if lifecycle == "" && gate == "" {
		return "", "", refuse("it exports neither")
	}
	if lifecycle != "" {
		for _, ev := range HookEvents {
			got, ok := fns[ev]
			if !ok {
				return "", "", refuse("%s has no %s function", lifecycle, ev)
			}
			want := &wasmhost.FuncType{Params: []wasmhost.Param{{Type: hookParams[ev]}}, Result: hResult}
			if !sameFunc(got, want) {
				return "", "", refuse("%s is %s, want %s", ev, got, want)
			}
		}
	}
	if gate != "" {
		got, ok := gfns[HookCheckCall]
		if !ok {
			return "", "", refuse("%s has no %s function", gate, HookCheckCall)
		}
		if !sameFunc(got, checkCallType) {
			return "", "", refuse("%s is %s, want %s", HookCheckCall, got, checkCallType)
		}
	}
	for _, it := range c.Imports() {
		if !strings.HasPrefix(it.Name, "murmur:") {
			continue // WASI 0.2: granted as for every component
		}
		if (strings.HasPrefix(it.Name, family) || strings.HasPrefix(it.Name, gateFamily)) && !hasFuncs(it) {
			continue // the types run-inference uses (message), as WIT elaborates the world
		}
		if !strings.HasPrefix(it.Name, "murmur:runtime/inference@0.2.") {
			return "", "", refuse("it imports %s, which neither world has", it.Name)
		}
		for _, m := range it.Exports {
			if m.Kind == wasmhost.ItemFunc && (m.Name != RunInferenceFunc || !sameFunc(m.Func, runInferenceType)) {
				return "", "", refuse("its import %s#%s is %s, want %s: %s", it.Name, m.Name, m.Func, RunInferenceFunc, runInferenceType)
			}
		}
	}
	return lifecycle, gate, nil
}

// IsUnreadable reports whether err is an answer the runtime cannot read.
func IsUnreadable(err error) bool {
	var u *UnreadableError
	return errors.As(err, &u)
}

// ExportsHookLifecycle checks that c is a component of the hook world: what
// HookExports checks, with the lifecycle export required. It returns the
// exported lifecycle interface's exact name, or an E-RUN-096 diagnostic.
func ExportsHookLifecycle(c *wasmhost.Component, name string) (string, error) {
	l, _, err := HookExports(c, name)
	if err == nil && l == "" {
		err = diag.New("E-RUN-096", "hook %s is not a component of the hook world (%s): it does not export %s", name, WorldHook, IfaceHookLifecycle).
			WithHint("build it for world hook (scripts/build-component.sh <dir> hook <out.wasm>)")
	}
	return l, err
}
