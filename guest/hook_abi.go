//go:build !wasip1 || murmur_hook || murmur_policy

package guest

import (
	"encoding/binary"
	"math"
)

// Canonical-ABI layouts of the hook world (see abi.go for the conventions):
//
//	message, tool-manifest        16 bytes   0: string, 8: string
//	inference-event (by pointer,  80 bytes   0: turn u32, 8: input-tokens u64, 16: output-tokens u64,
//	  17 flat values)                        24: decision, 32: tool-name, 44: prompt, 56: output, 68: tools
//	result<hook-output, string>   16 bytes   0: disc u8, 4: hook-output (0: case u8, 4: payload) or string
//	result<inference-response,    40 bytes   0: disc u8, 8: text, 16: model-used, 24: input-tokens u64,
//	  string>                                32: output-tokens u64 (err: string at 8)
const (
	sizeMessage         = 16
	sizeHookResult      = 16
	sizeInferenceResult = 40
)

func u64(m mem, p uint32) uint64 { return binary.LittleEndian.Uint64(m.bytes(p, 8)) }

func strFlat(m mem, ptr, n uint32) string { return stringAt(m, ptr, n) }

func stringsFlat(m mem, ptr, n uint32) []string {
	out := []string{}
	if n == 0 {
		return out
	}
	m.bytes(ptr, n*sizeString) // bounds check once
	for i := uint32(0); i < n; i++ {
		out = append(out, readString(m, ptr+i*sizeString))
	}
	return out
}

func messagesFlat(m mem, ptr, n uint32) []HookMessage {
	out := []HookMessage{}
	if n == 0 {
		return out
	}
	m.bytes(ptr, n*sizeMessage)
	for i := uint32(0); i < n; i++ {
		e := ptr + i*sizeMessage
		out = append(out, HookMessage{Role: readString(m, e), Content: readString(m, e+8)})
	}
	return out
}

func readInferenceEvent(m mem, p uint32) InferenceEvent {
	return InferenceEvent{
		Turn: u32(m, p), InputTokens: u64(m, p+8), OutputTokens: u64(m, p+16), Decision: readString(m, p+24),
		ToolName: readOptString(m, p+32), Prompt: readOptString(m, p+44), Output: readOptString(m, p+56), Tools: readOptString(m, p+68),
	}
}

func f64(bits uint64) float64 { return math.Float64frombits(bits) }

// writeHookResult lays out result<hook-output, string> in fresh memory.
func writeHookResult(m mem, out HookOutput, err error) uint32 {
	p := m.alloc(sizeHookResult, 4)
	clear(m.bytes(p, sizeHookResult))
	if err != nil {
		putU8(m, p, 1)
		writeString(m, p+4, err.Error())
		return p
	}
	if out.Kind > OutputReopenTask {
		panic("guest: HookOutput.Kind " + itoa(uint32(out.Kind)) + " is not a hook-output case")
	}
	putU8(m, p+4, uint8(out.Kind))
	switch out.Kind {
	case OutputReplaceContext:
		writePairs(m, p+8, len(out.Messages), func(i int) (string, string) { return out.Messages[i].Role, out.Messages[i].Content })
	case OutputWriteManifests:
		writePairs(m, p+8, len(out.Manifests), func(i int) (string, string) {
			return out.Manifests[i].BinaryName, out.Manifests[i].Content
		})
	case OutputArtifact, OutputReopenTask:
		writeString(m, p+8, out.Text)
	}
	return p
}

// writePairs writes a list of two-string records and stores its (ptr, len) at p.
func writePairs(m mem, p uint32, n int, at func(int) (string, string)) {
	var list uint32
	if n > 0 {
		list = m.alloc(uint32(n)*sizeMessage, 4)
		for i := 0; i < n; i++ {
			a, b := at(i)
			writeString(m, list+uint32(i)*sizeMessage, a)
			writeString(m, list+uint32(i)*sizeMessage+8, b)
		}
	}
	putU32(m, p, list)
	putU32(m, p+4, uint32(n))
}

// readInferenceResult reads result<inference-response, string> at p.
func readInferenceResult(m mem, p uint32) (InferenceResponse, string, bool) {
	switch d := u8(m, p); d {
	case 0:
		return InferenceResponse{Text: readString(m, p+8), ModelUsed: readString(m, p+16),
			InputTokens: u64(m, p+24), OutputTokens: u64(m, p+32)}, "", false
	case 1:
		return InferenceResponse{}, readString(m, p+8), true
	default:
		panic(abiError("result discriminant " + itoa(uint32(d))))
	}
}

// (At the end of the file, so that the wasip1 build's line numbers, and so
// the committed components, do not move.)
//lint:file-ignore U1000 used by the wasip1 build's hook exports (hook_wasip1.go), which staticcheck on the host does not see
