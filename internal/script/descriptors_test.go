package script

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/trace"
)

// runHold runs hold.wat, which traps once it holds limit descriptors at once.
func runHold(t *testing.T, limit int) Result {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "hold.wat"))
	if err != nil {
		t.Fatal(err)
	}
	src = bytes.Replace(src, []byte("(i32.const LIMIT)"), []byte("(i32.const "+strconv.Itoa(limit)+")"), 1)
	res, _, _ := runSource(t, newEngine(t), "hold.wat", src, manifest.Capabilities{}.EffLimits())
	return res
}

func openDescriptors(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("this machine has no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// TestRunHoldsBoundedDescriptors: a guest that opens files without dropping
// them holds no more than the process's bound (grant.BoundDescriptors), gets
// an error past it rather than an ending, and leaves nothing open after.
// Without the bound it holds all 30,000 it asks for and traps.
func TestRunHoldsBoundedDescriptors(t *testing.T) {
	var saved unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &saved); err != nil {
		t.Fatal(err)
	}
	before := openDescriptors(t)
	many := min(20000, int(saved.Cur)-before-100)
	if many < 4096 {
		t.Skipf("the open-file limit here (%d) leaves too little for the unbounded case", saved.Cur)
	}
	// The unbounded guest really holds them (the check the bound is measured by).
	if res := runHold(t, many); res.Ending != trace.EndTrapped {
		t.Fatalf("unbounded: ending %s (%s), want trapped at %d held", res.Ending, res.Reason, many)
	}

	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &saved) })
	room := 256
	got, err := grant.BoundDescriptors(uint64(before + room))
	if err != nil || got != uint64(before+room) {
		t.Fatalf("BoundDescriptors = %d, %v", got, err)
	}
	if res := runHold(t, room); res.Ending != trace.EndOK {
		t.Fatalf("bounded: ending %s (%s), want ok: the guest held %d or more", res.Ending, res.Reason, room)
	}
	if after := openDescriptors(t); after > before+8 {
		t.Errorf("%d descriptors open after the run, %d before", after, before)
	}
	// A bound above the current limit never raises it.
	if got, _ := grant.BoundDescriptors(1 << 40); got != uint64(before+room) {
		t.Errorf("BoundDescriptors raised the limit to %d", got)
	}
}
