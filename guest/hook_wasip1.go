//go:build wasip1 && murmur_hook

package guest

import "runtime"

// The hook world's exports and its one import. They are compiled in only with the
// build tag murmur_hook (scripts/build-component.sh sets it for world hook), so a
// capsule's or a tool's core module is unchanged by them.

//go:wasmimport murmur:runtime/inference@0.2.0 run-inference
func rawRunInference(msgPtr, msgLen, sDisc, sPtr, sLen, mDisc, mPtr, mLen, ret uint32)

const fnRunInference = "murmur:runtime/inference@0.2.0#run-inference"

// RunInference makes one call through the capsule's driver (counted in the
// session's tokens). The runtime's refusal (a spend ceiling, a driver error) is a
// *HostError; the hook goes on.
func RunInference(req InferenceRequest) (InferenceResponse, error) {
	keep := make([]string, 0, 2*len(req.Messages))
	var list uint32
	if n := uint32(len(req.Messages)); n > 0 {
		list = importMem.alloc(n*sizeMessage, 4)
		for i, msg := range req.Messages {
			role, content := validString(msg.Role), validString(msg.Content)
			keep = append(keep, role, content)
			e := list + uint32(i)*sizeMessage
			putU32(linear, e, ptrOf(role))
			putU32(linear, e+4, uint32(len(role)))
			putU32(linear, e+8, ptrOf(content))
			putU32(linear, e+12, uint32(len(content)))
		}
	}
	s, m := optToFlat(req.SystemPrompt), optToFlat(req.Model)
	var res InferenceResponse
	var errMsg string
	var isErr bool
	call(sizeInferenceResult, func(ret uint32) {
		rawRunInference(list, uint32(len(req.Messages)), s.disc, ptrOf(s.s), uint32(len(s.s)),
			m.disc, ptrOf(m.s), uint32(len(m.s)), ret)
	}, func(ret uint32) { res, errMsg, isErr = readInferenceResult(linear, ret) })
	runtime.KeepAlive(keep)
	runtime.KeepAlive(s.s)
	runtime.KeepAlive(m.s)
	if isErr {
		return InferenceResponse{}, &HostError{Func: fnRunInference, Message: errMsg}
	}
	return res, nil
}

// hookCall runs one lifecycle function: lift copies the parameters out (before
// the pins are released), fn runs with the collector on, and the result stays
// pinned until post-return.
func hookCall(lift func(), fn func() (HookOutput, error)) uint32 {
	guard(lift)
	callPins.release()
	collectorOn()
	defer collectorOff()
	var out HookOutput
	var err error
	guard(func() { out, err = fn() })
	var p uint32
	guard(func() { p = writeHookResult(linear, out, err) })
	return p
}

//go:wasmexport murmur:hook/lifecycle@0.5.0#on-stage
func exportOnStage(ptr, n uint32) uint32 {
	var e StageEvent
	return hookCall(func() { e = StageEvent{ShellAllow: stringsFlat(linear, ptr, n)} },
		func() (HookOutput, error) { return run(hooks.OnStage, e) })
}

//go:wasmexport murmur:hook/lifecycle@0.5.0#on-session-start
func exportOnSessionStart(nP, nL, vP, vL, sP, sL, mP, mL, cP, cL uint32) uint32 {
	var e SessionContext
	return hookCall(func() {
		e = SessionContext{CapsuleName: strFlat(linear, nP, nL), CapsuleVersion: strFlat(linear, vP, vL),
			SessionID: strFlat(linear, sP, sL), Model: strFlat(linear, mP, mL), Capabilities: stringsFlat(linear, cP, cL)}
	}, func() (HookOutput, error) { return run(hooks.OnSessionStart, e) })
}

//go:wasmexport murmur:hook/lifecycle@0.5.0#on-task-start
func exportOnTaskStart(tP, tL, cP, cL, sP, sL uint32, inBytes uint64) uint32 {
	var e TaskStartEvent
	return hookCall(func() {
		e = TaskStartEvent{TaskID: strFlat(linear, tP, tL), ContextID: strFlat(linear, cP, cL),
			Source: strFlat(linear, sP, sL), InputBytes: inBytes}
	}, func() (HookOutput, error) { return run(hooks.OnTaskStart, e) })
}

//go:wasmexport murmur:hook/lifecycle@0.5.0#on-inference
func exportOnInference(p uint32) uint32 {
	var e InferenceEvent
	return hookCall(func() { e = readInferenceEvent(linear, p) },
		func() (HookOutput, error) { return run(hooks.OnInference, e) })
}

//go:wasmexport murmur:hook/lifecycle@0.5.0#on-tool-call
func exportOnToolCall(turn, nP, nL uint32, in, out, dur uint64, sP, sL uint32) uint32 {
	var e ToolEvent
	return hookCall(func() {
		e = ToolEvent{Turn: turn, ToolName: strFlat(linear, nP, nL), InputBytes: in, OutputBytes: out,
			DurationMS: dur, Status: strFlat(linear, sP, sL)}
	}, func() (HookOutput, error) { return run(hooks.OnToolCall, e) })
}

//go:wasmexport murmur:hook/lifecycle@0.5.0#on-shell
func exportOnShell(turn, bP, bL, cP, cL, code, oP, oL, eP, eL uint32, oBytes, eBytes, dur uint64) uint32 {
	var e ShellEvent
	return hookCall(func() {
		e = ShellEvent{Turn: turn, Binary: strFlat(linear, bP, bL), Command: strFlat(linear, cP, cL), ExitCode: int32(code),
			Stdout: strFlat(linear, oP, oL), Stderr: strFlat(linear, eP, eL), StdoutBytes: oBytes, StderrBytes: eBytes, DurationMS: dur}
	}, func() (HookOutput, error) { return run(hooks.OnShell, e) })
}

//go:wasmexport murmur:hook/lifecycle@0.5.0#on-compaction
func exportOnCompaction(lP, lL uint32, tokens uint64, threshold float64, mD, mP, mL, sD, sP, sL uint32) uint32 {
	var e CompactionEvent
	return hookCall(func() {
		e = CompactionEvent{Messages: messagesFlat(linear, lP, lL), SessionTokens: tokens, Threshold: threshold,
			Model: optFromFlat(linear, mD, mP, mL), SystemPrompt: optFromFlat(linear, sD, sP, sL)}
	}, func() (HookOutput, error) { return run(hooks.OnCompaction, e) })
}

//go:wasmexport murmur:hook/lifecycle@0.5.0#on-task-end
func exportOnTaskEnd(tP, tL, sP, sL uint32) uint32 {
	var e TaskEndEvent
	return hookCall(func() { e = TaskEndEvent{TaskID: strFlat(linear, tP, tL), ExitStatus: strFlat(linear, sP, sL)} },
		func() (HookOutput, error) { return run(hooks.OnTaskEnd, e) })
}

//go:wasmexport murmur:hook/lifecycle@0.5.0#on-session-end
func exportOnSessionEnd(turns uint32, in, out uint64, tools, shells uint32, dur uint64, sP, sL uint32) uint32 {
	var e SessionEndEvent
	return hookCall(func() {
		e = SessionEndEvent{TotalTurns: turns, TotalInputTokens: in, TotalOutputTokens: out, TotalToolCalls: tools,
			TotalShellCalls: shells, DurationMS: dur, ExitStatus: strFlat(linear, sP, sL)}
	}, func() (HookOutput, error) { return run(hooks.OnSessionEnd, e) })
}

// Post-return of every lifecycle function: it must not allocate.

//go:wasmexport cabi_post_murmur:hook/lifecycle@0.5.0#on-stage
func postOnStage(uint32) { callPins.release() }

//go:wasmexport cabi_post_murmur:hook/lifecycle@0.5.0#on-session-start
func postOnSessionStart(uint32) { callPins.release() }

//go:wasmexport cabi_post_murmur:hook/lifecycle@0.5.0#on-task-start
func postOnTaskStart(uint32) { callPins.release() }

//go:wasmexport cabi_post_murmur:hook/lifecycle@0.5.0#on-inference
func postOnInference(uint32) { callPins.release() }

//go:wasmexport cabi_post_murmur:hook/lifecycle@0.5.0#on-tool-call
func postOnToolCall(uint32) { callPins.release() }

//go:wasmexport cabi_post_murmur:hook/lifecycle@0.5.0#on-shell
func postOnShell(uint32) { callPins.release() }

//go:wasmexport cabi_post_murmur:hook/lifecycle@0.5.0#on-compaction
func postOnCompaction(uint32) { callPins.release() }

//go:wasmexport cabi_post_murmur:hook/lifecycle@0.5.0#on-task-end
func postOnTaskEnd(uint32) { callPins.release() }

//go:wasmexport cabi_post_murmur:hook/lifecycle@0.5.0#on-session-end
func postOnSessionEnd(uint32) { callPins.release() }
