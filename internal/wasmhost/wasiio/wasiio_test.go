package wasiio_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/wasmhost"
	_ "github.com/murmur-go/murmur/internal/wasmhost/wasiio"
)

// Go's wasi:io through the engine, with the engine's wasiio.wat fixture (a
// guest that exercises each function).

var bg = context.Background()

const streamClosedU32 = ^uint32(0)

// goWritePermit is what check-write grants.
const goWritePermit = 64 << 10

var (
	testEngine *wasmhost.Engine
	wasiioWAT  *wasmhost.Component
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "wasiio-test-")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		if testEngine, err = wasmhost.NewEngine(wasmhost.Config{CacheDir: dir}); err != nil {
			panic(err)
		}
		defer testEngine.Close()
		src, err := os.ReadFile(filepath.Join("..", "testdata", "wasiio.wat"))
		if err != nil {
			panic(err)
		}
		if wasiioWAT, err = testEngine.Compile(src); err != nil {
			panic(err)
		}
		return m.Run()
	}())
}

// instantiateFull instantiates the fixture with every limit the test leaves
// zero set to the defaults (the engine has none of its own).
func instantiateFull(ctx context.Context, rc wasmhost.RunConfig) (*wasmhost.Instance, error) {
	l := &rc.Limits
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.MemoryBytes, manifest.DefaultMemoryBytes)
	def(&l.TableElements, manifest.DefaultTableElements)
	def(&l.Instances, manifest.DefaultInstances)
	def(&l.Memories, manifest.DefaultMemories)
	def(&l.Tables, manifest.DefaultTables)
	if l.Deadline == 0 {
		l.Deadline = manifest.DefaultDeadlineSeconds * time.Second
	}
	if l.Grace == 0 {
		l.Grace = manifest.GraceSeconds * time.Second
	}
	return testEngine.Instantiate(ctx, wasiioWAT, rc)
}

func driverRun(t *testing.T, rc wasmhost.RunConfig) *wasmhost.Instance {
	t.Helper()
	rc.GoIO = true
	i, err := instantiateFull(bg, rc)
	if err != nil {
		t.Fatalf("instantiate wasiio.wat: %v", err)
	}
	t.Cleanup(func() { i.Close() })
	return i
}

func asTrap(t *testing.T, err error) *wasmhost.TrapError {
	t.Helper()
	var te *wasmhost.TrapError
	if !errors.As(err, &te) {
		t.Fatalf("want *TrapError, got %T: %v", err, err)
	}
	return te
}

func asDeadline(t *testing.T, err error) *wasmhost.DeadlineError {
	t.Helper()
	var de *wasmhost.DeadlineError
	if !errors.As(err, &de) {
		t.Fatalf("want *DeadlineError, got %T: %v", err, err)
	}
	return de
}

// TestDriverIOStdin: a driver's stdin is a Go input-stream over the run's
// bytes; a read after the stream reported closed is closed again, as
// wasmtime's streams answer.
func TestDriverIOStdin(t *testing.T) {
	i := driverRun(t, wasmhost.RunConfig{WASI: wasmhost.WASI{Stdin: []byte("abcdef")}})
	for _, c := range []struct {
		n    uint64
		want uint32
	}{{4, 4}, {10, 2}, {10, streamClosedU32}, {10, streamClosedU32}} {
		if v, err := i.Call(bg, "", "read-stdin", c.n); err != nil || v != c.want {
			t.Fatalf("read-stdin(%d) = %v, %v; want %d", c.n, v, err, c.want)
		}
	}
}

// TestDriverIOStdinShared: every get-stdin handle reads the one stdin, as
// in wasmtime (a guest that takes a handle per read reads on, not again).
func TestDriverIOStdinShared(t *testing.T) {
	i := driverRun(t, wasmhost.RunConfig{WASI: wasmhost.WASI{Stdin: []byte("abcdef")}})
	for _, want := range []uint32{4, 2, streamClosedU32} {
		if v, err := i.Call(bg, "", "read-fresh-stdin", uint64(4)); err != nil || v != want {
			t.Fatalf("read-fresh-stdin(4) = %v, %v; want %d", v, err, want)
		}
	}
}

// TestDriverIOBadUse: what wasmtime traps on traps here too, naming it.
func TestDriverIOBadUse(t *testing.T) {
	cases := []struct {
		name string
		fn   string
		args []wasmhost.Value
		want string
	}{
		{"poll of an empty list", "poll-empty", nil, "empty poll list"},
		{"write past check-write's permit", "write", []wasmhost.Value{uint32(goWritePermit + 1)}, "more than the 65536 the stream permits"},
		{"blocking-write-and-flush past 4096 bytes", "bwf", []wasmhost.Value{uint32(4097)}, "more than the 4096 the stream permits"},
		{"a stream dropped under its pollable", "drop-parent", nil, "dropped while 1 resources made from it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			i := driverRun(t, wasmhost.RunConfig{})
			_, err := i.Call(bg, "", c.fn, c.args...)
			te := asTrap(t, err)
			if !strings.Contains(te.Message, c.want) {
				t.Fatalf("trap %q, want it to say %q", te.Message, c.want)
			}
		})
	}
}

// TestDriverIOStdout: writes within the permit reach the run's stdout file.
func TestDriverIOStdout(t *testing.T) {
	out := filepath.Join(t.TempDir(), "stdout.log")
	i := driverRun(t, wasmhost.RunConfig{WASI: wasmhost.WASI{StdoutPath: out}})
	if v, err := i.Call(bg, "", "check-write"); err != nil || v != uint64(goWritePermit) {
		t.Fatalf("check-write = %v, %v", v, err)
	}
	for _, fn := range []string{"write", "bwf"} {
		if v, err := i.Call(bg, "", fn, uint32(14)); err != nil || v != uint32(0) {
			t.Fatalf("%s = %v, %v", fn, v, err)
		}
	}
	got, err := os.ReadFile(out)
	if err != nil || string(got) != "hello, stdout\nhello, stdout\n" {
		t.Fatalf("stdout %q, %v", got, err)
	}
}

// TestDriverIOClockAndDeadline: a Go timer pollable waits as long as asked,
// and a wait past the call's deadline ends the call there as a waiting
// DeadlineError naming the clock subscription.
func TestDriverIOClockAndDeadline(t *testing.T) {
	i := driverRun(t, wasmhost.RunConfig{Limits: wasmhost.Limits{Deadline: 2 * time.Second, Grace: 500 * time.Millisecond}})
	start := time.Now()
	if _, err := i.Call(bg, "", "sleep", uint64(50*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("a 50 ms sleep returned after %v", d)
	}
	if v, err := i.Call(bg, "", "poll-sleep", uint64(time.Hour)); err != nil || v != uint32(0) {
		t.Fatalf("poll of [stdin at its end, a 1 h timer] = %v, %v; want 0", v, err)
	}
	j := driverRun(t, wasmhost.RunConfig{Limits: wasmhost.Limits{Deadline: 300 * time.Millisecond}})
	_, err := j.Call(bg, "", "sleep", uint64(time.Hour))
	if de := asDeadline(t, err); !de.Waiting || de.Call != "wasi:clocks/monotonic-clock#subscribe-duration" {
		t.Fatalf("%#v", de)
	}
}

// TestDriverIOCancel: a cancelled call stops the guest's wait in Go, and
// ends as a cancellation, as an epoch stop would.
func TestDriverIOCancel(t *testing.T) {
	i := driverRun(t, wasmhost.RunConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := i.Call(ctx, "", "sleep", uint64(time.Hour))
	var ce *wasmhost.CancelledError
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait ended with %T: %v", err, err)
	}
}

// TestDriverIONoFilesystemNoSockets: a driver has no descriptors and no
// network; the refusals are typed as the guest's own WIT says.
func TestDriverIONoFilesystemNoSockets(t *testing.T) {
	i := driverRun(t, wasmhost.RunConfig{})
	if v, err := i.Call(bg, "", "preopens"); err != nil || v != uint32(0) {
		t.Fatalf("preopens = %v, %v", v, err)
	}
	if v, err := i.Call(bg, "", "resolve"); err != nil || v != uint32(2) { // 1 + access-denied
		t.Fatalf("resolve = %v, %v; want access-denied", v, err)
	}
	_, err := instantiateFull(bg,
		wasmhost.RunConfig{GoIO: true, WASI: wasmhost.WASI{Preopens: []wasmhost.Preopen{{HostDir: t.TempDir(), GuestPath: "/w"}}}})
	var d *diag.Diagnostic
	if !errors.As(err, &d) || d.Code != "E-RUN-104" {
		t.Fatalf("a driver run with a preopen: %v", err)
	}
}
