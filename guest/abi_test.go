package guest

import (
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// fakeMem is a linear memory for host-side tests: a byte slice with a bump allocator
// that starts past address 0, bounds-checked like the guest's.
type fakeMem struct {
	buf  []byte
	next uint32
}

func newFakeMem(size int) *fakeMem { return &fakeMem{buf: make([]byte, size), next: 64} }

func (f *fakeMem) bytes(ptr, n uint32) []byte {
	if uint64(ptr)+uint64(n) > uint64(len(f.buf)) {
		panic(abiError("memory range out of bounds"))
	}
	return f.buf[ptr : ptr+n]
}

func (f *fakeMem) alloc(size, align uint32) uint32 {
	p := (f.next + align - 1) &^ (align - 1)
	if uint64(p)+uint64(size) > uint64(len(f.buf)) {
		panic("fakeMem: out of memory")
	}
	f.next = p + size
	return p
}

// putStr stores s in f and writes its (ptr, len) pair at p, as a host would.
func (f *fakeMem) putStr(p uint32, s string) {
	ptr := f.alloc(uint32(len(s)), 1)
	copy(f.buf[ptr:], s)
	binary.LittleEndian.PutUint32(f.buf[p:], ptr)
	binary.LittleEndian.PutUint32(f.buf[p+4:], uint32(len(s)))
}

func (f *fakeMem) putOpt(p uint32, s *string) {
	if s == nil {
		f.buf[p] = 0
		return
	}
	f.buf[p] = 1
	f.putStr(p+4, *s)
}

// --- An independent canonical-ABI layout calculator (component model spec,
// "Alignment" and "Element Size"), used to check the offsets the glue hard-codes.

type abiType struct {
	kind   string // prim, string, list, option, result, record, enum
	size   uint32 // prim
	fields []abiType
}

var (
	tU8     = abiType{kind: "prim", size: 1}
	tBool   = tU8
	tString = abiType{kind: "string"}
	tList   = abiType{kind: "list"}
	tEnum   = abiType{kind: "enum"} // fewer than 256 cases
)

func tOption(t abiType) abiType       { return abiType{kind: "option", fields: []abiType{t}} }
func tResult(ok, err abiType) abiType { return abiType{kind: "result", fields: []abiType{ok, err}} }
func tRecord(f ...abiType) abiType    { return abiType{kind: "record", fields: f} }

func alignTo(n, a uint32) uint32 { return (n + a - 1) / a * a }

func (t abiType) align() uint32 {
	switch t.kind {
	case "prim":
		return t.size
	case "string", "list":
		return 4
	case "enum":
		return 1
	case "option", "result", "record":
		a := uint32(1)
		for _, f := range t.fields {
			a = max(a, f.align())
		}
		return a
	}
	panic(t.kind)
}

func (t abiType) sizeOf() uint32 {
	switch t.kind {
	case "prim":
		return t.size
	case "string", "list":
		return 8
	case "enum":
		return 1
	case "option", "result": // variant: u8 discriminant, payload at the max case alignment
		var maxSize, maxAlign uint32 = 0, 1
		for _, f := range t.fields {
			maxSize, maxAlign = max(maxSize, f.sizeOf()), max(maxAlign, f.align())
		}
		return alignTo(alignTo(1, maxAlign)+maxSize, t.align())
	case "record":
		var s uint32
		for _, f := range t.fields {
			s = alignTo(s, f.align()) + f.sizeOf()
		}
		return alignTo(s, t.align())
	}
	panic(t.kind)
}

func (t abiType) offsets() []uint32 {
	var out []uint32
	var s uint32
	for _, f := range t.fields {
		s = alignTo(s, f.align())
		out = append(out, s)
		s += f.sizeOf()
	}
	return out
}

func payloadOffset(t abiType) uint32 { // of an option or result
	var a uint32 = 1
	for _, f := range t.fields {
		a = max(a, f.align())
	}
	return alignTo(1, a)
}

var (
	wToolResult = tRecord(tEnum, tOption(tString), tOption(tString), tOption(tString), tBool, tList)
	wPair       = tRecord(tString, tString)
	wSummary    = tRecord(tString, tString, tEnum)
	wInfo       = tRecord(tString, tString, tString, tList, tEnum, tOption(tString), tOption(tString))
	wState      = tRecord(tString, tList, tString)
	wTaskResult = tRecord(tString, tString, tString)
)

func TestLayoutsMatchCanonicalABI(t *testing.T) {
	tests := []struct {
		name        string
		typ         abiType
		wantSize    uint32
		wantOffsets []uint32 // the offsets abi.go reads and writes
	}{
		{"tool-result", wToolResult, sizeToolResult, []uint32{0, 4, 16, 28, 40, 44}},
		{"tuple<string,string>", wPair, sizePair, []uint32{0, 8}},
		{"artifact-summary", wSummary, sizeSummary, []uint32{0, 8, 16}},
		{"artifact-info", wInfo, sizeArtifactInfo, []uint32{0, 8, 16, 24, 32, 36, 48}},
		{"runtime-state", wState, sizeRuntimeState, []uint32{0, 8, 16}},
		{"task-result", wTaskResult, sizeTaskResult, []uint32{0, 8, 16}},
		{"option<string>", tOption(tString), sizeOptString, nil},
		{"result<tool-result,string>", tResult(wToolResult, tString), sizeResultToolRes, nil},
		{"result<artifact-info,string>", tResult(wInfo, tString), sizeResultInfo, nil},
		{"result<runtime-state,string>", tResult(wState, tString), sizeResultState, nil},
		{"result<task-result,string>", tResult(wTaskResult, tString), sizeResultTask, nil},
		{"result<artifact-summary,string>", tResult(wSummary, tString), sizeResultSummary, nil},
		{"result<list,string>", tResult(tList, tString), sizeResultList, nil},
		{"result<bool,string>", tResult(tBool, tString), offResultPayload + sizeString, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.typ.sizeOf(); got != tt.wantSize {
				t.Errorf("size = %d, glue uses %d", got, tt.wantSize)
			}
			if tt.wantOffsets != nil && !reflect.DeepEqual(tt.typ.offsets(), tt.wantOffsets) {
				t.Errorf("offsets = %v, glue uses %v", tt.typ.offsets(), tt.wantOffsets)
			}
			if tt.typ.kind == "option" || tt.typ.kind == "result" {
				if got := payloadOffset(tt.typ); got != offResultPayload {
					t.Errorf("payload offset = %d, glue uses %d", got, offResultPayload)
				}
			}
			if tt.typ.align() != 4 {
				t.Errorf("align = %d, glue allocates with 4", tt.typ.align())
			}
		})
	}
}

// hostToolResult lays out r the way a host lowering a tool-result would, field by
// field at the calculator's offsets (not through the glue's writer).
func hostToolResult(f *fakeMem, r ToolResult) uint32 {
	off := wToolResult.offsets()
	p := f.alloc(wToolResult.sizeOf(), 4)
	f.buf[p+off[0]] = byte(r.Status)
	f.putOpt(p+off[1], r.Summary)
	f.putOpt(p+off[2], r.Data)
	f.putOpt(p+off[3], r.DataPath)
	if r.Truncated {
		f.buf[p+off[4]] = 1
	}
	list := f.alloc(uint32(len(r.Metadata))*wPair.sizeOf(), 4)
	for i, kv := range r.Metadata {
		e := list + uint32(i)*wPair.sizeOf()
		f.putStr(e, kv.Key)
		f.putStr(e+8, kv.Value)
	}
	binary.LittleEndian.PutUint32(f.buf[p+off[5]:], list)
	binary.LittleEndian.PutUint32(f.buf[p+off[5]+4:], uint32(len(r.Metadata)))
	return p
}

var toolResults = []ToolResult{
	{},
	{Status: StatusPassed, Summary: Some("ok"), Data: Some("hello"), Metadata: []Pair{{"tool", "echo"}}},
	{Status: StatusFailed, DataPath: Some("out/data.json"), Truncated: true},
	{Status: StatusError, Summary: Some(""), Data: Some("ünïcødé ✓ 🦫"), Metadata: []Pair{{"", ""}, {"k", strings.Repeat("v", 5000)}}},
}

func TestReadToolResultFromHostLayout(t *testing.T) {
	for i, want := range toolResults {
		f := newFakeMem(1 << 16)
		p := hostToolResult(f, want)
		if got := readToolResult(f, p); !reflect.DeepEqual(normalize(got), normalize(want)) {
			t.Errorf("case %d: read %+v, want %+v", i, got, want)
		}
	}
}

func TestWriteToolResultRoundTrip(t *testing.T) {
	for i, want := range toolResults {
		f := newFakeMem(1 << 16)
		p := writeToolResult(f, want)
		if p%4 != 0 {
			t.Errorf("case %d: result area at %d is not 4-aligned", i, p)
		}
		if got := readToolResult(f, p); !reflect.DeepEqual(normalize(got), normalize(want)) {
			t.Errorf("case %d: round trip %+v, want %+v", i, got, want)
		}
	}
}

// normalize treats a nil and an empty metadata list alike (the ABI cannot tell).
func normalize(r ToolResult) ToolResult {
	if len(r.Metadata) == 0 {
		r.Metadata = nil
	}
	return r
}

func TestWriteToolResultSanitizesInvalidUTF8(t *testing.T) {
	f := newFakeMem(1 << 12)
	p := writeToolResult(f, ToolResult{Summary: Some("a\xffb"), Metadata: []Pair{{"\xc3", "ok"}}})
	got := readToolResult(f, p) // would panic on invalid UTF-8
	if *got.Summary != "a\uFFFDb" || got.Metadata[0].Key != "\uFFFD" {
		t.Fatalf("got %q and %q", *got.Summary, got.Metadata[0].Key)
	}
}

func TestWriteToolResultRejectsBadStatus(t *testing.T) {
	defer func() {
		if v := recover(); v == nil || !strings.Contains(v.(string), "Status 7") {
			t.Fatalf("recovered %v", v)
		}
	}()
	writeToolResult(newFakeMem(1<<12), ToolResult{Status: 7})
}

func TestReadResult(t *testing.T) {
	f := newFakeMem(1 << 12)
	ret := f.alloc(sizeResultTask, 4)
	// err case
	f.buf[ret] = 1
	f.putStr(ret+offResultPayload, "tool not declared: nope")
	msg, isErr := readResult(f, ret, func(uint32) { t.Fatal("ok callback on err") })
	if !isErr || msg != "tool not declared: nope" {
		t.Fatalf("got %q %v", msg, isErr)
	}
	// ok case: task-result payload
	f.buf[ret] = 0
	off := wTaskResult.offsets()
	for i, s := range []string{"task-1", "ctx-1", "TASK_STATE_COMPLETED"} {
		f.putStr(ret+offResultPayload+off[i], s)
	}
	var tr TaskResult
	if _, isErr := readResult(f, ret, func(p uint32) { tr = readTaskResult(f, p) }); isErr {
		t.Fatal("ok read as err")
	}
	if tr != (TaskResult{"task-1", "ctx-1", "TASK_STATE_COMPLETED"}) {
		t.Fatalf("got %+v", tr)
	}
}

func TestReadArtifactRecords(t *testing.T) {
	f := newFakeMem(1 << 14)
	putSummary := func(p uint32, a ArtifactSummary) {
		off := wSummary.offsets()
		f.putStr(p+off[0], a.Name)
		f.putStr(p+off[1], a.Version)
		f.buf[p+off[2]] = byte(a.Runtime)
	}
	putList := func(p uint32, items []ArtifactSummary) {
		list := f.alloc(uint32(len(items))*wSummary.sizeOf(), 4)
		for i, a := range items {
			putSummary(list+uint32(i)*wSummary.sizeOf(), a)
		}
		binary.LittleEndian.PutUint32(f.buf[p:], list)
		binary.LittleEndian.PutUint32(f.buf[p+4:], uint32(len(items)))
	}
	items := []ArtifactSummary{{"local/echo-tool", "0.1.0", RuntimeWasm}, {"acme/native", "2.0.0", RuntimeNative}}

	lp := f.alloc(8, 4)
	putList(lp, items)
	if got := readSummaryList(f, lp); !reflect.DeepEqual(got, items) {
		t.Errorf("list: %+v", got)
	}

	info := ArtifactInfo{Name: "local/echo-tool", Version: "0.1.0", Description: "echoes", Tags: []string{"a", "bc"},
		Runtime: RuntimeWasm, OutputSchema: Some(`{"type":"object"}`)}
	ip := f.alloc(wInfo.sizeOf(), 4)
	off := wInfo.offsets()
	f.putStr(ip+off[0], info.Name)
	f.putStr(ip+off[1], info.Version)
	f.putStr(ip+off[2], info.Description)
	tags := f.alloc(16, 4)
	f.putStr(tags, "a")
	f.putStr(tags+8, "bc")
	binary.LittleEndian.PutUint32(f.buf[ip+off[3]:], tags)
	binary.LittleEndian.PutUint32(f.buf[ip+off[3]+4:], 2)
	f.buf[ip+off[4]] = byte(info.Runtime)
	f.putOpt(ip+off[5], nil)
	f.putOpt(ip+off[6], info.OutputSchema)
	if got := readArtifactInfo(f, ip); !reflect.DeepEqual(got, info) {
		t.Errorf("info: %+v", got)
	}

	sp := f.alloc(wState.sizeOf(), 4)
	so := wState.offsets()
	f.putStr(sp+so[0], "ses_0123")
	putList(sp+so[1], items[:1])
	f.putStr(sp+so[2], "network: none")
	want := RuntimeState{CapsuleID: "ses_0123", Installed: items[:1], Capabilities: "network: none"}
	if got := readRuntimeState(f, sp); !reflect.DeepEqual(got, want) {
		t.Errorf("state: %+v", got)
	}
}

func TestToolInputFromFlat(t *testing.T) {
	f := newFakeMem(1 << 12)
	p := f.alloc(5, 1)
	copy(f.buf[p:], "hello")
	got := toolInputFromFlat(f, 1, p, 5, 0, 0, 0)
	if got.Data == nil || *got.Data != "hello" || got.LogPath != nil {
		t.Fatalf("got %+v", got)
	}
	if got := toolInputFromFlat(f, 1, 0, 0, 1, 0, 0); *got.Data != "" || *got.LogPath != "" {
		t.Fatalf("empty strings: %+v", got)
	}
	if fl := optToFlat(Some("x\xff")); fl.disc != 1 || fl.s != "x\uFFFD" {
		t.Fatalf("optToFlat: %+v", fl)
	}
	if fl := optToFlat(nil); fl.disc != 0 || fl.s != "" {
		t.Fatalf("optToFlat(nil): %+v", fl)
	}
}

// Memory that breaks the ABI must stop the guest with an abiError, never be
// misread and never fail with an unrelated runtime panic.
func TestMalformedMemoryIsReported(t *testing.T) {
	tests := []struct {
		name string
		set  func(f *fakeMem, p uint32)
		want string
	}{
		{"status out of range", func(f *fakeMem, p uint32) { f.buf[p] = 3 }, "status discriminant 3"},
		{"option discriminant", func(f *fakeMem, p uint32) { f.buf[p+4] = 2 }, "option discriminant 2"},
		{"string past memory", func(f *fakeMem, p uint32) {
			f.buf[p+16] = 1
			binary.LittleEndian.PutUint32(f.buf[p+20:], uint32(len(f.buf)-2))
			binary.LittleEndian.PutUint32(f.buf[p+24:], 10)
		}, "out of bounds"},
		{"invalid UTF-8", func(f *fakeMem, p uint32) {
			f.buf[p+28] = 1
			s := f.alloc(2, 1)
			f.buf[s], f.buf[s+1] = 0xff, 0xfe
			binary.LittleEndian.PutUint32(f.buf[p+32:], s)
			binary.LittleEndian.PutUint32(f.buf[p+36:], 2)
		}, "not valid UTF-8"},
		{"list length overflow", func(f *fakeMem, p uint32) {
			binary.LittleEndian.PutUint32(f.buf[p+44:], 64)
			binary.LittleEndian.PutUint32(f.buf[p+48:], 0x1000_0000)
		}, "list out of range"},
		{"list past memory", func(f *fakeMem, p uint32) {
			binary.LittleEndian.PutUint32(f.buf[p+44:], 64)
			binary.LittleEndian.PutUint32(f.buf[p+48:], 1<<20)
		}, "out of bounds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeMem(1 << 12)
			p := f.alloc(sizeToolResult, 4)
			tt.set(f, p)
			err := catch(func() { readToolResult(f, p) })
			var ae abiError
			if !errors.As(err, &ae) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an abiError containing %q", err, tt.want)
			}
		})
	}
}

func TestReadResultBadDiscriminant(t *testing.T) {
	f := newFakeMem(1 << 10)
	p := f.alloc(12, 4)
	f.buf[p] = 9
	if err := catch(func() { readResult(f, p, func(uint32) {}) }); err == nil || !strings.Contains(err.Error(), "result discriminant 9") {
		t.Fatalf("got %v", err)
	}
}

// catch runs fn and returns the abiError it panicked with (or a non-abiError panic
// as an error, so the test can report it).
func catch(fn func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if e, ok := v.(error); ok {
				err = e
				return
			}
			err = errors.New("non-error panic")
		}
	}()
	fn()
	return nil
}

func TestStringers(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{StatusPassed.String(), "passed"}, {StatusFailed.String(), "failed"}, {StatusError.String(), "error"},
		{Status(9).String(), "Status(9)"}, {RuntimeWasm.String(), "wasm"}, {RuntimeNative.String(), "native"},
		{RuntimeType(12).String(), "RuntimeType(12)"}, {itoa(0), "0"}, {itoa(4294967295), "4294967295"},
		{(&HostError{Func: "f", Message: "m"}).Error(), "f: m"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// FuzzReadToolResult feeds arbitrary memory to the tool-result reader: it must either
// decode (and then survive a write/read round trip unchanged) or stop with an
// abiError, never with another panic.
func FuzzReadToolResult(f *testing.F) {
	for _, r := range toolResults {
		m := newFakeMem(1 << 14)
		p := hostToolResult(m, r)
		f.Add(m.buf[:m.next], p)
	}
	f.Add([]byte{}, uint32(0))
	f.Add(make([]byte, 64), uint32(4))
	f.Fuzz(func(t *testing.T, data []byte, p uint32) {
		m := &fakeMem{buf: append([]byte(nil), data...), next: uint32(len(data))}
		var got ToolResult
		err := catch(func() { got = readToolResult(m, p) })
		if err != nil {
			var ae abiError
			if !errors.As(err, &ae) {
				t.Fatalf("non-ABI panic: %v", err)
			}
			return
		}
		out := newFakeMem(1 << 20)
		q := writeToolResult(out, got)
		if again := readToolResult(out, q); !reflect.DeepEqual(normalize(again), normalize(got)) {
			t.Fatalf("round trip changed %+v into %+v", got, again)
		}
	})
}

// FuzzReadRecords runs every other reader of the glue over arbitrary memory: each
// must decode or stop with an abiError, never panic otherwise or run away.
func FuzzReadRecords(f *testing.F) {
	m := newFakeMem(1 << 12)
	p := m.alloc(sizeResultInfo, 4)
	m.buf[p] = 1
	m.putStr(p+4, "no artifact named x")
	f.Add(m.buf[:m.next], p)
	f.Add(make([]byte, 128), uint32(8))
	f.Fuzz(func(t *testing.T, data []byte, p uint32) {
		m := &fakeMem{buf: append([]byte(nil), data...), next: uint32(len(data))}
		readers := []func(){
			func() { readArtifactInfo(m, p) },
			func() { readRuntimeState(m, p) },
			func() { readTaskResult(m, p) },
			func() { readSummaryList(m, p) },
			func() { readSummary(m, p) },
			func() { readResult(m, p, func(q uint32) { readArtifactInfo(m, q) }) },
			func() { toolInputFromFlat(m, uint32(len(data))%3, p, p/2, 1, p/3, p%7) },
		}
		for i, r := range readers {
			if err := catch(r); err != nil {
				var ae abiError
				if !errors.As(err, &ae) {
					t.Fatalf("reader %d: non-ABI panic: %v", i, err)
				}
			}
		}
	})
}
