package guest

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"
)

// This file is the canonical-ABI layout of the murmur 0.1 types (component model,
// string-encoding=utf8, 32-bit memory): where each field sits in linear memory and
// how values are read from and written to it. It works on the mem interface so that
// the same code runs in the guest (over real linear memory) and in host-side tests
// (over a byte slice), which is how the layouts are checked without a runtime.
//
// Layouts (offset: field), all little-endian, align 4 unless noted:
//
//	string                8 bytes   0: ptr u32, 4: len u32 (bytes)
//	option<string>       12 bytes   0: disc u8 (0 none, 1 some), 4: string
//	list<T>               8 bytes   0: ptr u32, 4: len u32 (elements)
//	tool-result          52 bytes   0: status u8, 4: summary, 16: data, 28: data-path,
//	                                40: truncated u8, 44: metadata list<tuple<string,string>>
//	tuple<string,string> 16 bytes   0: key, 8: value
//	artifact-summary     20 bytes   0: name, 8: version, 16: runtime u8
//	artifact-info        60 bytes   0: name, 8: version, 16: description, 24: tags,
//	                                32: runtime u8, 36: input-schema, 48: output-schema
//	runtime-state        24 bytes   0: capsule-id, 8: installed, 16: capabilities
//	task-result          24 bytes   0: task-id, 8: context-id, 16: state
//	result<T, string>   4+size(T)   0: disc u8 (0 ok, 1 err), 4: payload
const (
	sizeString        = 8
	sizeOptString     = 12
	sizeToolResult    = 52
	sizePair          = 16
	sizeSummary       = 20
	sizeArtifactInfo  = 60
	sizeRuntimeState  = 24
	sizeTaskResult    = 24
	offResultPayload  = 4
	sizeResultToolRes = offResultPayload + sizeToolResult
	sizeResultInfo    = offResultPayload + sizeArtifactInfo
	sizeResultState   = offResultPayload + sizeRuntimeState
	sizeResultTask    = offResultPayload + sizeTaskResult
	sizeResultSummary = offResultPayload + sizeSummary
	sizeResultList    = offResultPayload + 8
)

// mem is linear memory as the codecs see it.
type mem interface {
	// bytes returns the n bytes at ptr; it panics with an abiError when they are
	// outside memory.
	bytes(ptr, n uint32) []byte
	// alloc returns size bytes aligned to align that stay valid until the kit
	// releases them (after the host has read them).
	alloc(size, align uint32) uint32
}

// abiError reports memory contents that break the canonical ABI (a host bug or a
// corrupted memory). The glue panics with it; in a component a panic is a trap.
type abiError string

func (e abiError) Error() string { return "guest: canonical ABI: " + string(e) }

func u8(m mem, p uint32) uint8   { return m.bytes(p, 1)[0] }
func u32(m mem, p uint32) uint32 { return binary.LittleEndian.Uint32(m.bytes(p, 4)) }

func putU8(m mem, p uint32, v uint8)   { m.bytes(p, 1)[0] = v }
func putU32(m mem, p uint32, v uint32) { binary.LittleEndian.PutUint32(m.bytes(p, 4), v) }

// readString copies the string whose (ptr, len) pair is at p.
func readString(m mem, p uint32) string { return stringAt(m, u32(m, p), u32(m, p+4)) }

// stringAt copies n bytes at ptr into a Go string. The canonical ABI only hands over
// valid UTF-8; anything else is reported rather than passed on.
func stringAt(m mem, ptr, n uint32) string {
	if n == 0 {
		return ""
	}
	s := string(m.bytes(ptr, n))
	if !utf8.ValidString(s) {
		panic(abiError("string is not valid UTF-8"))
	}
	return s
}

func readOptString(m mem, p uint32) *string {
	switch d := u8(m, p); d {
	case 0:
		return nil
	case 1:
		s := readString(m, p+4)
		return &s
	default:
		panic(abiError("option discriminant " + itoa(uint32(d))))
	}
}

func readBool(m mem, p uint32) bool { return u8(m, p) != 0 }

// listAt checks that the list whose (ptr, len) pair is at p, of elements of size
// bytes, lies in memory, then returns its length and calls fn with the address of
// each element. Checking before anything is allocated keeps a corrupt length from
// exhausting the guest's heap.
func listAt(m mem, p, size uint32, fn func(elem uint32)) int {
	ptr, n := u32(m, p), u32(m, p+4)
	if n == 0 {
		return 0
	}
	total := uint64(n) * uint64(size)
	if uint64(ptr)+total > 1<<32 {
		panic(abiError("list out of range"))
	}
	m.bytes(ptr, uint32(total)) // bounds check once
	for i := uint32(0); i < n; i++ {
		fn(ptr + i*size)
	}
	return int(n)
}

func readStatus(m mem, p uint32) Status {
	s := Status(u8(m, p))
	if s > StatusError {
		panic(abiError("status discriminant " + itoa(uint32(s))))
	}
	return s
}

func readRuntimeType(m mem, p uint32) RuntimeType {
	r := RuntimeType(u8(m, p))
	if r > RuntimeNative {
		panic(abiError("runtime-type discriminant " + itoa(uint32(r))))
	}
	return r
}

func readToolResult(m mem, p uint32) ToolResult {
	r := ToolResult{
		Status:    readStatus(m, p),
		Summary:   readOptString(m, p+4),
		Data:      readOptString(m, p+16),
		DataPath:  readOptString(m, p+28),
		Truncated: readBool(m, p+40),
	}
	listAt(m, p+44, sizePair, func(e uint32) {
		r.Metadata = append(r.Metadata, Pair{Key: readString(m, e), Value: readString(m, e+8)})
	})
	return r
}

func readSummary(m mem, p uint32) ArtifactSummary {
	return ArtifactSummary{Name: readString(m, p), Version: readString(m, p+8), Runtime: readRuntimeType(m, p+16)}
}

// readSummaryList reads a list<artifact-summary> whose (ptr, len) pair is at p.
func readSummaryList(m mem, p uint32) []ArtifactSummary {
	out := []ArtifactSummary{}
	listAt(m, p, sizeSummary, func(e uint32) { out = append(out, readSummary(m, e)) })
	return out
}

func readStringList(m mem, p uint32) []string {
	out := []string{}
	listAt(m, p, sizeString, func(e uint32) { out = append(out, readString(m, e)) })
	return out
}

func readArtifactInfo(m mem, p uint32) ArtifactInfo {
	return ArtifactInfo{
		Name:         readString(m, p),
		Version:      readString(m, p+8),
		Description:  readString(m, p+16),
		Tags:         readStringList(m, p+24),
		Runtime:      readRuntimeType(m, p+32),
		InputSchema:  readOptString(m, p+36),
		OutputSchema: readOptString(m, p+48),
	}
}

func readRuntimeState(m mem, p uint32) RuntimeState {
	return RuntimeState{
		CapsuleID:    readString(m, p),
		Installed:    readSummaryList(m, p+8),
		Capabilities: readString(m, p+16),
	}
}

func readTaskResult(m mem, p uint32) TaskResult {
	return TaskResult{TaskID: readString(m, p), ContextID: readString(m, p+8), State: readString(m, p+16)}
}

// readResult reads a result<T, string> at p: ok calls okFn with the payload's
// address; err returns the error message.
func readResult(m mem, p uint32, okFn func(payload uint32)) (errMsg string, isErr bool) {
	switch d := u8(m, p); d {
	case 0:
		okFn(p + offResultPayload)
		return "", false
	case 1:
		return readString(m, p+offResultPayload), true
	default:
		panic(abiError("result discriminant " + itoa(uint32(d))))
	}
}

// validString makes s acceptable to the canonical ABI, which traps on invalid UTF-8:
// invalid bytes become U+FFFD, as Go's own string conversions do.
func validString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// writeString copies s into fresh memory and stores its (ptr, len) pair at p.
func writeString(m mem, p uint32, s string) {
	s = validString(s)
	var ptr uint32
	if len(s) > 0 {
		ptr = m.alloc(uint32(len(s)), 1)
		copy(m.bytes(ptr, uint32(len(s))), s)
	}
	putU32(m, p, ptr)
	putU32(m, p+4, uint32(len(s)))
}

func writeOptString(m mem, p uint32, s *string) {
	if s == nil {
		putU8(m, p, 0)
		putU32(m, p+4, 0)
		putU32(m, p+8, 0)
		return
	}
	putU8(m, p, 1)
	writeString(m, p+4, *s)
}

// writeToolResult lays r out in fresh memory and returns its address: the return
// area of the exported murmur:tool/run#run.
func writeToolResult(m mem, r ToolResult) uint32 {
	if r.Status > StatusError {
		panic("guest: ToolResult.Status " + itoa(uint32(r.Status)) + " is not passed, failed or error")
	}
	p := m.alloc(sizeToolResult, 4)
	clear(m.bytes(p, sizeToolResult))
	putU8(m, p, uint8(r.Status))
	writeOptString(m, p+4, r.Summary)
	writeOptString(m, p+16, r.Data)
	writeOptString(m, p+28, r.DataPath)
	if r.Truncated {
		putU8(m, p+40, 1)
	}
	var list uint32
	if n := uint32(len(r.Metadata)); n > 0 {
		list = m.alloc(n*sizePair, 4)
		for i, kv := range r.Metadata {
			e := list + uint32(i)*sizePair
			writeString(m, e, kv.Key)
			writeString(m, e+8, kv.Value)
		}
	}
	putU32(m, p+44, list)
	putU32(m, p+48, uint32(len(r.Metadata)))
	return p
}

// toolInputFromFlat lifts the flattened tool-input parameters of the exported
// murmur:tool/run#run: (data disc, ptr, len, log-path disc, ptr, len).
func toolInputFromFlat(m mem, dDisc, dPtr, dLen, lDisc, lPtr, lLen uint32) ToolInput {
	return ToolInput{Data: optFromFlat(m, dDisc, dPtr, dLen), LogPath: optFromFlat(m, lDisc, lPtr, lLen)}
}

func optFromFlat(m mem, disc, ptr, n uint32) *string {
	switch disc {
	case 0:
		return nil
	case 1:
		s := stringAt(m, ptr, n)
		return &s
	default:
		panic(abiError("option discriminant " + itoa(disc)))
	}
}

// flatOpt is an option<string> flattened for an import call: (disc, ptr, len).
// The string must stay alive until the call returns.
type flatOpt struct {
	disc uint32
	s    string
}

func optToFlat(s *string) flatOpt {
	if s == nil {
		return flatOpt{}
	}
	return flatOpt{disc: 1, s: validString(*s)}
}
