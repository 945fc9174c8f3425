package wasmhost

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// Data-segment coalescing: a Go-kit component's main module has ~32,000
// active data segments (Go's linker ends a segment at every short run of
// zeros) for ~0.8 MB of data, and wasmtime initialises memory segment by
// segment on every instantiation: evaluating each offset, checking it
// against the memory's size and copying, ~20–25 % of a Go-kit tool call's
// CPU in the bookkeeping alone. Before compiling, coalesceData merges
// runs of such segments into one, writing the short gaps between them as
// zeros. The memory's content after initialisation is the same: the module
// defines its memory (it is not imported, so it starts zeroed and nothing
// else wrote it), every gap filled lies past the end of everything earlier
// segments wrote, and the merged segment ends where its last part did, so a
// segment out of bounds still fails instantiation. Modules it cannot prove
// this for (an imported memory, a data count section — memory.init and
// data.drop name segments by index —, passive segments, offsets that are not
// i32 constants) are left as they are.

// coalesceGap is the longest run of zeros written to join two segments.
const coalesceGap = 64

const (
	secImport    = 2
	secMemory    = 5
	secData      = 11
	secDataCount = 12
)

var (
	coreHeader      = []byte("\x00asm\x01\x00\x00\x00")
	errNotCoalesced = errors.New("not coalesced")
)

// coalesceData returns the component with its core modules' data segments
// coalesced, or wasm itself when nothing changed or it cannot be parsed
// (wasmtime then reports what is wrong with it).
func coalesceData(wasm []byte) []byte {
	if len(wasm) < 8 || !bytes.HasPrefix(wasm, []byte("\x00asm")) || bytes.Equal(wasm[4:8], coreHeader[4:8]) {
		return wasm
	}
	out, changed, err := coalesceComponent(wasm)
	if err != nil || !changed {
		return wasm
	}
	return out
}

type section struct {
	id   byte
	body []byte
}

func readSections(b []byte) ([]section, error) {
	var secs []section
	for i := 8; i < len(b); {
		id := b[i]
		n, w := binary.Uvarint(b[i+1:])
		if w <= 0 || n > uint64(len(b)-i-1-w) {
			return nil, errNotCoalesced
		}
		start := i + 1 + w
		secs = append(secs, section{id, b[start : start+int(n)]})
		i = start + int(n)
	}
	return secs, nil
}

func writeSections(header []byte, secs []section) []byte {
	n := len(header)
	for _, s := range secs {
		n += 1 + binary.MaxVarintLen32 + len(s.body)
	}
	out := append(make([]byte, 0, n), header...)
	for _, s := range secs {
		out = append(out, s.id)
		out = binary.AppendUvarint(out, uint64(len(s.body)))
		out = append(out, s.body...)
	}
	return out
}

// coalesceComponent rewrites the core modules (section 1) of a component,
// and of its nested components (section 4).
func coalesceComponent(b []byte) ([]byte, bool, error) {
	secs, err := readSections(b)
	if err != nil {
		return nil, false, err
	}
	changed := false
	for k, s := range secs {
		var body []byte
		var ch bool
		switch s.id {
		case 1:
			body, ch = coalesceModule(s.body)
		case 4:
			body, ch, err = coalesceComponent(s.body)
			if err != nil {
				return nil, false, err
			}
		}
		if ch {
			secs[k].body, changed = body, true
		}
	}
	if !changed {
		return b, false, nil
	}
	return writeSections(b[:8], secs), true, nil
}

type dataSeg struct {
	off  uint32
	data []byte
}

// coalesceModule returns the module with its data section rewritten, or
// false when it is left as it is.
func coalesceModule(b []byte) ([]byte, bool) {
	if !bytes.HasPrefix(b, coreHeader) {
		return nil, false
	}
	secs, err := readSections(b)
	if err != nil {
		return nil, false
	}
	dataAt, ownMemory := -1, false
	for k, s := range secs {
		switch s.id {
		case secDataCount:
			return nil, false
		case secMemory:
			ownMemory = true
		case secImport:
			if importsMemory(s.body) {
				return nil, false
			}
		case secData:
			dataAt = k
		}
	}
	if dataAt < 0 || !ownMemory {
		return nil, false
	}
	segs, ok := readData(secs[dataAt].body)
	if !ok || len(segs) < 2 {
		return nil, false
	}
	// Each entry of merged is one contiguous range written in full (its
	// gaps are its own zeros), in the original order.
	var merged []dataSeg
	for _, s := range segs {
		if n := len(merged); n > 0 && n <= maxMergedRuns {
			last := &merged[n-1]
			lastEnd := uint64(last.off) + uint64(len(last.data))
			gapEnd := uint64(s.off)
			// Joined only when no earlier segment wrote into the gap: its
			// zeros then stand where a fresh memory has zeros anyway.
			if gapEnd >= lastEnd && gapEnd-lastEnd <= coalesceGap && !writtenBefore(merged[:n-1], lastEnd, gapEnd) {
				last.data = append(last.data, make([]byte, gapEnd-lastEnd)...)
				last.data = append(last.data, s.data...)
				continue
			}
		}
		merged = append(merged, dataSeg{s.off, append([]byte(nil), s.data...)})
	}
	if len(merged) == len(segs) {
		return nil, false
	}
	var body []byte
	body = binary.AppendUvarint(body, uint64(len(merged)))
	for _, s := range merged {
		body = append(body, 0, 0x41) // active, memory 0; i32.const
		body = appendSleb(body, int64(int32(s.off)))
		body = append(body, 0x0b)
		body = binary.AppendUvarint(body, uint64(len(s.data)))
		body = append(body, s.data...)
	}
	secs[dataAt].body = body
	return writeSections(b[:8], secs), true
}

// maxMergedRuns bounds the search of writtenBefore: past it (a module
// whose segments do not join) the rest is kept as it is.
const maxMergedRuns = 4096

// writtenBefore tells whether any of runs writes into [from, to).
func writtenBefore(runs []dataSeg, from, to uint64) bool {
	if from == to {
		return false
	}
	for _, r := range runs {
		if uint64(r.off) < to && uint64(r.off)+uint64(len(r.data)) > from {
			return true
		}
	}
	return false
}

// readData parses a data section made only of active segments for memory 0
// at i32.const offsets (flag 0).
func readData(b []byte) ([]dataSeg, bool) {
	n, w := binary.Uvarint(b)
	if w <= 0 {
		return nil, false
	}
	i := w
	segs := make([]dataSeg, 0, min(n, uint64(len(b)/4)))
	for range n {
		if i+2 > len(b) || b[i] != 0 || b[i+1] != 0x41 {
			return nil, false
		}
		off, w := sleb(b[i+2:])
		if w <= 0 || i+2+w >= len(b) || b[i+2+w] != 0x0b {
			return nil, false
		}
		i += 2 + w + 1
		ln, w2 := binary.Uvarint(b[i:])
		if w2 <= 0 || ln > uint64(len(b)-i-w2) {
			return nil, false
		}
		i += w2
		segs = append(segs, dataSeg{uint32(off), b[i : i+int(ln)]})
		i += int(ln)
	}
	return segs, i == len(b)
}

// importsMemory tells whether an import section imports a memory (or
// cannot be parsed: then it is treated as one that does).
func importsMemory(b []byte) bool {
	n, w := binary.Uvarint(b)
	if w <= 0 {
		return true
	}
	i := w
	name := func() bool {
		l, w := binary.Uvarint(b[i:])
		if w <= 0 || l > uint64(len(b)-i-w) {
			return false
		}
		i += w + int(l)
		return true
	}
	limits := func() bool {
		if i >= len(b) {
			return false
		}
		flag := b[i]
		i++
		for range 1 + int(flag&1) {
			_, w := binary.Uvarint(b[i:])
			if w <= 0 {
				return false
			}
			i += w
		}
		return true
	}
	for range n {
		if i >= len(b) || !name() || !name() || i >= len(b) {
			return true
		}
		kind := b[i]
		i++
		switch kind {
		case 0x00, 0x04: // func, tag: a type index (a tag after its 0x00 attribute)
			if kind == 0x04 {
				i++
			}
			if i > len(b) {
				return true
			}
			if _, w := binary.Uvarint(b[i:]); w <= 0 {
				return true
			} else {
				i += w
			}
		case 0x01: // table: a plain reference type, then limits
			if i >= len(b) || (b[i] != 0x70 && b[i] != 0x6f) {
				return true
			}
			i++
			if !limits() {
				return true
			}
		case 0x02:
			return true
		case 0x03: // global: a one-byte value type, then mutability
			if i >= len(b) || b[i] < 0x6f || b[i] > 0x7f {
				return true
			}
			i += 2
		default:
			return true
		}
	}
	return i > len(b)
}

func sleb(b []byte) (int64, int) {
	var r int64
	var s uint
	for i, x := range b {
		if i >= 10 {
			return 0, -1
		}
		r |= int64(x&0x7f) << s
		s += 7
		if x < 0x80 {
			if s < 64 && x&0x40 != 0 {
				r |= -1 << s
			}
			return r, i + 1
		}
	}
	return 0, -1
}

func appendSleb(b []byte, v int64) []byte {
	for {
		x := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && x&0x40 == 0) || (v == -1 && x&0x40 != 0) {
			return append(b, x)
		}
		b = append(b, x|0x80)
	}
}
