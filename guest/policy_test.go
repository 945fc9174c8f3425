package guest

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// call-request and result<decision, string> as the canonical ABI lays them
// out (decision is a variant of two cases, one with a string: option<string>'s
// layout).
var (
	wCallRequest = tRecord(tString, abiType{kind: "prim", size: 4}, tString, tString, tEnum, tString,
		tOption(tString), tOption(tList), tOption(tString), tOption(tString))
	wDecisionResult = tResult(tOption(tString), tString)
)

func TestPolicyLayoutsMatchCanonicalABI(t *testing.T) {
	if got := wCallRequest.offsets(); !reflect.DeepEqual(got, []uint32{0, 8, 12, 20, 28, 32, 40, 52, 64, 76}) || wCallRequest.sizeOf() != 88 {
		t.Errorf("call-request offsets %v size %d, glue reads 0 8 12 20 28 32 40 52 64 76 of 88", got, wCallRequest.sizeOf())
	}
	if got := wDecisionResult.sizeOf(); got != sizeDecisionResult {
		t.Errorf("result<decision, string> size %d, glue writes %d", got, sizeDecisionResult)
	}
}

// A call-request laid out as a host lowers it is read back whole; the
// decisions and an error are written where a host lifts them.
func TestPolicyABIRoundTrip(t *testing.T) {
	f := newFakeMem(1 << 16)
	p := f.alloc(88, 4)
	f.putStr(p, "tsk_1")
	binary.LittleEndian.PutUint32(f.buf[p+8:], 7)
	f.putStr(p+12, "call_1")
	f.putStr(p+20, "bash")
	f.buf[p+28] = byte(CallShell)
	f.putStr(p+32, `{"command":"ls"}`)
	bin := "/usr/bin/bash"
	f.putOpt(p+40, &bin)
	f.buf[p+52] = 1
	list := f.alloc(3*8, 4)
	for i, w := range []string{bin, "-c", "ls ✓"} {
		f.putStr(list+uint32(i)*8, w)
	}
	binary.LittleEndian.PutUint32(f.buf[p+56:], list)
	binary.LittleEndian.PutUint32(f.buf[p+60:], 3)
	step := "s1"
	f.putOpt(p+76, &step)
	got := readCallRequest(f, p)
	want := CallRequest{TaskID: "tsk_1", Turn: 7, ToolCallID: "call_1", ToolName: "bash", Kind: CallShell, Input: `{"command":"ls"}`,
		Binary: &bin, Argv: []string{bin, "-c", "ls ✓"}, StepID: &step}
	if !reflect.DeepEqual(got, want) || got.Kind.String() != "shell" {
		t.Errorf("read %+v\nwant %+v", got, want)
	}
	f.buf[p+28] = 9
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a call-kind past mcp was read")
			}
		}()
		readCallRequest(f, p)
	}()

	r := writeDecisionResult(f, Allow(), nil)
	if f.buf[r] != 0 || f.buf[r+4] != 0 {
		t.Errorf("allow: % x", f.buf[r:r+16])
	}
	r = writeDecisionResult(f, Deny("no ✓"), nil)
	if f.buf[r] != 0 || f.buf[r+4] != 1 || readString(f, r+8) != "no ✓" {
		t.Errorf("deny: % x", f.buf[r:r+16])
	}
	r = writeDecisionResult(f, Deny("x"), errString("it broke"))
	if f.buf[r] != 1 || readString(f, r+4) != "it broke" {
		t.Errorf("err: % x", f.buf[r:r+16])
	}
	if d, why := Deny("r").Denied(); !d || why != "r" {
		t.Error("Denied")
	}
}

type errString string

func (e errString) Error() string { return string(e) }
