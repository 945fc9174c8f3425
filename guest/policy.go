//go:build !wasip1 || murmur_policy

package guest

// Policy hooks: a component of the policy world (murmur:policy@0.1.0,
// world policy-hook) exports murmur:policy/gate@0.1.0 and may import
// murmur:runtime/inference@0.2.0. The runtime asks its check-call before a
// call the manifest allows runs; the answer can only take away, and a hook
// that errs, traps, runs out of time or memory, or denies without a reason
// denies. Build one with `scripts/build-component.sh <dir> policy-hook
// <out.wasm>`, which compiles the kit's gate export in (build tag
// murmur_policy).

// CallKind is the kind of tool a call goes to, in WIT order (the wire encoding).
type CallKind uint8

// The call kinds.
const (
	CallWASM CallKind = iota
	CallSkill
	CallShell
	CallRuntime
	// CallMCP is a tool of one of the capsule's MCP servers (tool-name is
	// the model's name, mcp__<server>__<tool>).
	CallMCP
)

// String is the kind's WIT name.
func (k CallKind) String() string {
	switch k {
	case CallWASM:
		return "wasm"
	case CallSkill:
		return "skill"
	case CallShell:
		return "shell"
	case CallRuntime:
		return "runtime"
	case CallMCP:
		return "mcp"
	}
	return "call-kind(" + itoa(uint32(k)) + ")"
}

// CallRequest is the call the runtime asks about.
type CallRequest struct {
	TaskID     string
	Turn       uint32
	ToolCallID string
	// ToolName is the model's name for the tool (delegate-task for a plan's
	// capsule steps too).
	ToolName string
	Kind     CallKind
	// Input is the call's input as compact JSON ("null" for a shell step,
	// whose words are in Argv).
	Input string
	// Binary is a shell call's resolved absolute path; nil otherwise.
	Binary *string
	// Argv is the exact argv a shell call would run; nil otherwise.
	Argv []string
	// PlanID and StepID are set for a plan's steps.
	PlanID, StepID *string
}

// Decision is a policy hook's answer. There is no case that grants anything.
type Decision struct {
	deny   bool
	reason string
}

// Allow lets the call go on (to the next policy hook, then the operator).
func Allow() Decision { return Decision{} }

// Deny stops the call; reason is what the model and the trace are told. A
// blank reason denies all the same, and the record says none was given.
func Deny(reason string) Decision { return Decision{deny: true, reason: reason} }

// Denied reports whether d denies, and why.
func (d Decision) Denied() (bool, string) { return d.deny, d.reason }

var gateFn func(CallRequest) (Decision, error)

// Gate registers a policy hook's check. Call it from an init function; the
// runtime keeps one instance per hook per session and asks it before every
// call, one at a time, so package variables persist from one call to the
// next. A returned error denies the call (the hook could not answer).
func Gate(fn func(CallRequest) (Decision, error)) { gateFn = fn }

// Canonical-ABI layouts of the policy world (see abi.go for the conventions):
//
//	call-request (by pointer)        88 bytes  0: task-id, 8: turn u32, 12: tool-call-id, 20: tool-name,
//	                                           28: kind u8, 32: input, 40: binary option<string>,
//	                                           52: argv option<list<string>>, 64: plan-id, 76: step-id
//	result<decision, string>         16 bytes  0: disc u8, 4: decision (0: case u8, 8: deny's string)
//	                                           or the error string at 4
const sizeDecisionResult = 16

func readCallRequest(m mem, p uint32) CallRequest {
	r := CallRequest{TaskID: readString(m, p), Turn: u32(m, p+8), ToolCallID: readString(m, p+12),
		ToolName: readString(m, p+20), Kind: CallKind(u8(m, p+28)), Input: readString(m, p+32),
		Binary: readOptString(m, p+40), PlanID: readOptString(m, p+64), StepID: readOptString(m, p+76)}
	if r.Kind > CallMCP {
		panic(abiError("call-kind " + itoa(uint32(r.Kind))))
	}
	switch d := u8(m, p+52); d {
	case 0:
	case 1:
		r.Argv = readStringList(m, p+56)
	default:
		panic(abiError("option discriminant " + itoa(uint32(d))))
	}
	return r
}

// writeDecisionResult lays out result<decision, string> in fresh memory.
func writeDecisionResult(m mem, d Decision, err error) uint32 {
	p := m.alloc(sizeDecisionResult, 4)
	clear(m.bytes(p, sizeDecisionResult))
	switch {
	case err != nil:
		putU8(m, p, 1)
		writeString(m, p+4, err.Error())
	case d.deny:
		putU8(m, p+4, 1)
		writeString(m, p+8, d.reason)
	}
	return p
}

// (At the end of the file, so that the wasip1 build's line numbers, and so
// the committed components, do not move.)
//lint:file-ignore U1000 used by the wasip1 build's gate export (policy_wasip1.go), which staticcheck on the host does not see
