//go:build wasip1 && murmur_policy && !murmur_hook

package guest

import "runtime"

// run-inference for a policy hook built without the lifecycle exports: the same
// import as hook_wasip1.go's, which a build with both tags takes instead.

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
