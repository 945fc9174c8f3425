//go:build wasip1 && murmur_policy

package guest

// The policy world's export. It is compiled in only with the build tag
// murmur_policy (scripts/build-component.sh sets it for world policy-hook), so
// no other component's core module changes.

//go:wasmexport murmur:policy/gate@0.1.0#check-call
func exportCheckCall(p uint32) uint32 {
	var req CallRequest
	guard(func() { req = readCallRequest(linear, p) })
	callPins.release()
	collectorOn()
	defer collectorOff()
	if gateFn == nil {
		fatal("guest: no gate registered: call guest.Gate(check) from an init function")
	}
	var d Decision
	var err error
	guard(func() { d, err = gateFn(req) })
	var ret uint32
	guard(func() { ret = writeDecisionResult(linear, d, err) })
	return ret // pinned in callPins until post-return
}

// Post-return of check-call: it must not allocate.
//
//go:wasmexport cabi_post_murmur:policy/gate@0.1.0#check-call
func postCheckCall(uint32) { callPins.release() }
