//go:build wasip1

package guest

import "runtime"

// Raw imports, lowered per the canonical ABI: each string is (ptr, len), each
// option<string> is (disc, ptr, len), and a result that flattens to more than one
// value is written by the host to a return area whose address is the last parameter.
// Only the imports a component actually calls end up in its core module, so a
// capsule built with this package does not import murmur:task and a tool does not
// import murmur:tool-registry.

//go:wasmimport murmur:tool-registry/invoke@0.1.0 invoke
func rawInvoke(namePtr, nameLen, dDisc, dPtr, dLen, lDisc, lPtr, lLen, ret uint32)

//go:wasmimport murmur:artifact-manager/manage@0.1.0 list
func rawList(ret uint32)

//go:wasmimport murmur:artifact-manager/manage@0.1.0 describe
func rawDescribe(namePtr, nameLen, ret uint32)

//go:wasmimport murmur:artifact-manager/manage@0.1.0 search
func rawSearch(queryPtr, queryLen, ret uint32)

//go:wasmimport murmur:artifact-manager/manage@0.1.0 pull
func rawPull(namePtr, nameLen, versionPtr, versionLen, ret uint32)

//go:wasmimport murmur:artifact-manager/manage@0.1.0 remove
func rawRemove(namePtr, nameLen, ret uint32)

//go:wasmimport murmur:artifact-manager/manage@0.1.0 diagnostics
func rawDiagnostics(ret uint32)

//go:wasmimport murmur:message/send@0.1.0 send
func rawSend(urlPtr, urlLen, idPtr, idLen, cDisc, cPtr, cLen, textPtr, textLen, ret uint32)

//go:wasmimport murmur:task/task@0.1.0 request-input
func rawRequestInput(promptPtr, promptLen, ret uint32)

//go:wasmimport murmur:text/chunks@0.1.0 emit-chunk
func rawEmitChunk(ptr, n uint32)

//go:wasmimport murmur:text/chunks@0.1.0 emit-thinking-chunk
func rawEmitThinkingChunk(ptr, n uint32)

const (
	fnInvoke      = "murmur:tool-registry/invoke@0.1.0#invoke"
	fnDescribe    = "murmur:artifact-manager/manage@0.1.0#describe"
	fnSearch      = "murmur:artifact-manager/manage@0.1.0#search"
	fnPull        = "murmur:artifact-manager/manage@0.1.0#pull"
	fnRemove      = "murmur:artifact-manager/manage@0.1.0#remove"
	fnDiagnostics = "murmur:artifact-manager/manage@0.1.0#diagnostics"
	fnSend        = "murmur:message/send@0.1.0#send"
)

// call runs one import with a fresh return area of size bytes, decodes it with
// decode, and releases everything the host allocated for the results. The
// collector is off while the host may call cabi_import_realloc (see mem_wasip1.go).
// CallImport makes one import call whose results the host lowers into
// memory (strings, lists): raw calls the import with a return area of size
// bytes at ret; decode reads the results from there. The collector is off
// while the host may allocate (cabi_import_realloc), and what it allocated
// is released once decode returns — so decode must copy what it keeps. It
// is for packages of the kit that bind further WIT imports (wasihttp).
func CallImport(size uint32, raw func(ret uint32), decode func(ret uint32)) { call(size, raw, decode) }

func call(size uint32, raw func(ret uint32), decode func(ret uint32)) {
	ret := importMem.alloc(size, 4)
	defer importPins.release()
	collectorOff()
	raw(ret)
	collectorOn()
	decode(ret)
}

// Invoke runs the tool artifact name (bare or full name, as the capsule's manifest
// declares it) with input and returns its result. A name the manifest does not
// declare, or a tool that fails to run, gives a *HostError; the capsule goes on.
func Invoke(name string, input ToolInput) (ToolResult, error) {
	name = validString(name)
	d, l := optToFlat(input.Data), optToFlat(input.LogPath)
	var res ToolResult
	var errMsg string
	var isErr bool
	call(sizeResultToolRes, func(ret uint32) {
		rawInvoke(ptrOf(name), uint32(len(name)),
			d.disc, ptrOf(d.s), uint32(len(d.s)), l.disc, ptrOf(l.s), uint32(len(l.s)), ret)
	}, func(ret uint32) {
		errMsg, isErr = readResult(linear, ret, func(p uint32) { res = readToolResult(linear, p) })
	})
	runtime.KeepAlive(name)
	runtime.KeepAlive(d.s)
	runtime.KeepAlive(l.s)
	if isErr {
		return ToolResult{}, &HostError{Func: fnInvoke, Message: errMsg}
	}
	return res, nil
}

// ListArtifacts lists the artifacts installed in the project and global stores.
func ListArtifacts() []ArtifactSummary {
	var out []ArtifactSummary
	call(8, rawList, func(ret uint32) { out = readSummaryList(linear, ret) })
	return out
}

// DescribeArtifact returns what the stores know of one artifact.
func DescribeArtifact(name string) (ArtifactInfo, error) {
	name = validString(name)
	var info ArtifactInfo
	var errMsg string
	var isErr bool
	call(sizeResultInfo, func(ret uint32) { rawDescribe(ptrOf(name), uint32(len(name)), ret) }, func(ret uint32) {
		errMsg, isErr = readResult(linear, ret, func(p uint32) { info = readArtifactInfo(linear, p) })
	})
	runtime.KeepAlive(name)
	if isErr {
		return ArtifactInfo{}, &HostError{Func: fnDescribe, Message: errMsg}
	}
	return info, nil
}

// SearchArtifacts searches the stores.
func SearchArtifacts(query string) ([]ArtifactSummary, error) {
	query = validString(query)
	var out []ArtifactSummary
	var errMsg string
	var isErr bool
	call(sizeResultList, func(ret uint32) { rawSearch(ptrOf(query), uint32(len(query)), ret) }, func(ret uint32) {
		errMsg, isErr = readResult(linear, ret, func(p uint32) { out = readSummaryList(linear, p) })
	})
	runtime.KeepAlive(query)
	if isErr {
		return nil, &HostError{Func: fnSearch, Message: errMsg}
	}
	return out, nil
}

// PullArtifact copies an artifact from the global store into the project store,
// where the capsule's install grant covers its name.
func PullArtifact(name, version string) (ArtifactSummary, error) {
	name, version = validString(name), validString(version)
	var out ArtifactSummary
	var errMsg string
	var isErr bool
	call(sizeResultSummary, func(ret uint32) {
		rawPull(ptrOf(name), uint32(len(name)), ptrOf(version), uint32(len(version)), ret)
	}, func(ret uint32) {
		errMsg, isErr = readResult(linear, ret, func(p uint32) { out = readSummary(linear, p) })
	})
	runtime.KeepAlive(name)
	runtime.KeepAlive(version)
	if isErr {
		return ArtifactSummary{}, &HostError{Func: fnPull, Message: errMsg}
	}
	return out, nil
}

// RemoveArtifact removes an artifact from the project store; the bool says whether
// there was one to remove.
func RemoveArtifact(name string) (bool, error) {
	name = validString(name)
	var removed bool
	var errMsg string
	var isErr bool
	call(offResultPayload+sizeString, func(ret uint32) { rawRemove(ptrOf(name), uint32(len(name)), ret) }, func(ret uint32) {
		errMsg, isErr = readResult(linear, ret, func(p uint32) { removed = readBool(linear, p) })
	})
	runtime.KeepAlive(name)
	if isErr {
		return false, &HostError{Func: fnRemove, Message: errMsg}
	}
	return removed, nil
}

// Diagnostics returns the runtime's view of this capsule: its id, what is installed
// and its capabilities (as text).
func Diagnostics() (RuntimeState, error) {
	var st RuntimeState
	var errMsg string
	var isErr bool
	call(sizeResultState, rawDiagnostics, func(ret uint32) {
		errMsg, isErr = readResult(linear, ret, func(p uint32) { st = readRuntimeState(linear, p) })
	})
	if isErr {
		return RuntimeState{}, &HostError{Func: fnDiagnostics, Message: errMsg}
	}
	return st, nil
}

// Send sends an A2A message to the peer at peerURL (which the capsule's network
// grant must cover) and returns the peer's immediate answer.
func Send(peerURL string, m Message) (TaskResult, error) {
	peerURL, id, text := validString(peerURL), validString(m.MessageID), validString(m.Text)
	c := optToFlat(m.ContextID)
	var out TaskResult
	var errMsg string
	var isErr bool
	call(sizeResultTask, func(ret uint32) {
		rawSend(ptrOf(peerURL), uint32(len(peerURL)), ptrOf(id), uint32(len(id)),
			c.disc, ptrOf(c.s), uint32(len(c.s)), ptrOf(text), uint32(len(text)), ret)
	}, func(ret uint32) {
		errMsg, isErr = readResult(linear, ret, func(p uint32) { out = readTaskResult(linear, p) })
	})
	runtime.KeepAlive(peerURL)
	runtime.KeepAlive(id)
	runtime.KeepAlive(text)
	runtime.KeepAlive(c.s)
	if isErr {
		return TaskResult{}, &HostError{Func: fnSend, Message: errMsg}
	}
	return out, nil
}

// RequestInput asks the person or parent running the session for input (tool world).
func RequestInput(prompt string) string {
	prompt = validString(prompt)
	var out string
	call(sizeString, func(ret uint32) { rawRequestInput(ptrOf(prompt), uint32(len(prompt)), ret) },
		func(ret uint32) { out = readString(linear, ret) })
	runtime.KeepAlive(prompt)
	return out
}

// EmitChunk streams a piece of output text (tool and driver worlds).
func EmitChunk(text string) {
	text = validString(text)
	rawEmitChunk(ptrOf(text), uint32(len(text)))
	runtime.KeepAlive(text)
}

// EmitThinkingChunk streams a piece of reasoning text (tool and driver worlds).
func EmitThinkingChunk(text string) {
	text = validString(text)
	rawEmitThinkingChunk(ptrOf(text), uint32(len(text)))
	runtime.KeepAlive(text)
}
