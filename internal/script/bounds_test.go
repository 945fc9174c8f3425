package script

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/logfile"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

func newEngine(t *testing.T) *wasmhost.Engine {
	t.Helper()
	eng, err := wasmhost.NewEngine(wasmhost.Config{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// flood runs flood.wat printing blocks of 4 KiB to stdout.
func flood(t *testing.T, blocks int) (Result, string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "flood.wat"))
	if err != nil {
		t.Fatal(err)
	}
	src = bytes.Replace(src, []byte("(i32.const COUNT)"), []byte("(i32.const "+strconv.Itoa(blocks)+")"), 1)
	res, _, recs := runSource(t, newEngine(t), "flood.wat", src, manifest.Capabilities{}.EffLimits())
	return res, filepath.Join(recs, "logs", StdoutLog)
}

// TestRunCapsStdout: a capsule printing far past the log's cap leaves a
// stdout.log of its head and tail, with a line naming what was dropped.
func TestRunCapsStdout(t *testing.T) {
	const blocks = 40960 // 160 MiB
	res, log := flood(t, blocks)
	if res.Ending != trace.EndOK {
		t.Fatalf("ending %s: %s", res.Ending, res.Reason)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	written := int64(blocks)<<12 + 8
	if int64(len(b)) > logfile.LogHeadBytes+logfile.LogTailBytes+200 {
		t.Fatalf("stdout.log holds %d bytes of %d printed", len(b), written)
	}
	marker := fmt.Sprintf("[mur: %d bytes dropped here", written-logfile.LogHeadBytes-logfile.LogTailBytes)
	if !bytes.HasSuffix(b, []byte("xthe end\n")) || !bytes.Contains(b, []byte(marker)) {
		t.Fatalf("stdout.log lacks its tail or %q: %d bytes, ...%q", marker, len(b), b[max(0, len(b)-120):])
	}
	if fi, _ := os.Stat(log); fi.Mode().Perm() != 0o600 {
		t.Errorf("stdout.log mode %v", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(filepath.Dir(log))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".pipe") {
			t.Errorf("the pipe %s outlived the run", e.Name())
		}
	}
	t.Logf("printed %d bytes; stdout.log holds %d", written, len(b))
}

// TestRunFloodGigabyte is the measure (1 GiB of stdout); it runs
// only when MURMUR_FLOOD_GB is set.
func TestRunFloodGigabyte(t *testing.T) {
	if os.Getenv("MURMUR_FLOOD_GB") == "" {
		t.Skip("set MURMUR_FLOOD_GB=1 to print 1 GiB")
	}
	res, log := flood(t, 262144)
	fi, err := os.Stat(log)
	if err != nil || res.Ending != trace.EndOK {
		t.Fatalf("%v %s %s", err, res.Ending, res.Reason)
	}
	t.Logf("printed %d bytes; stdout.log holds %d", int64(262144)<<12+8, fi.Size())
}

// TestRunWorkdirLimit: a capsule writing past workdir_max_bytes is stopped
// with a resource ending naming the limit.
func TestRunWorkdirLimit(t *testing.T) {
	lim := manifest.Capabilities{}.EffLimits()
	lim.WorkdirMaxBytes = 1 << 20
	res, _, _ := runFixture(t, newEngine(t), "fill.wat", lim)
	if res.Ending != trace.EndResourceLimit {
		t.Fatalf("ending %s (%s), want %s", res.Ending, res.Reason, trace.EndResourceLimit)
	}
	for _, want := range []string{"E-RUN-017", "capabilities.resources.workdir_max_bytes (1048576)"} {
		if !strings.Contains(res.Reason, want) {
			t.Errorf("reason %q lacks %q", res.Reason, want)
		}
	}
	t.Logf("reason: %s", res.Reason)
}

// TestRunStderrUnderEnding: a guest's last stderr lines (a Go panic's
// message) are part of the ending's reason.
func TestRunStderrUnderEnding(t *testing.T) {
	res, lines, _ := runFixture(t, newEngine(t), "boom.wat", manifest.Capabilities{}.EffLimits())
	if res.Ending != trace.EndTrapped {
		t.Fatalf("ending %s (%s)", res.Ending, res.Reason)
	}
	if !strings.Contains(res.Reason, "panic: boom") || !strings.Contains(res.Reason, "main.go:4") {
		t.Fatalf("reason %q does not carry the guest's stderr", res.Reason)
	}
	end := lines[len(lines)-1]
	if !strings.Contains(end.Str("reason"), "panic: boom") {
		t.Fatalf("session_end.reason %q", end.Str("reason"))
	}
	// An ok run's reason stays empty, whatever it printed.
	ok, _, _ := runFixture(t, newEngine(t), "ok.wat", manifest.Capabilities{}.EffLimits())
	if ok.Reason != "" {
		t.Fatalf("ok reason %q", ok.Reason)
	}
}
