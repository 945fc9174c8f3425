package wasihttp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/wasmhost"
	// Runs with RunConfig.GoIO need Go's wasi:io registered.
	_ "github.com/murmur-go/murmur/internal/wasmhost/wasiio"
)

// The engine's test harness, for wasi:http's tests: one shared engine,
// the engine's fixtures (../testdata), and the caller's choice of I/O.

// testEngine is shared by the tests, as the runtime shares one per process.
var testEngine *wasmhost.Engine

var bg = context.Background()

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasihttp-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testEngine, err = wasmhost.NewEngine(wasmhost.Config{CacheDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	testEngine.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	fixtureMu    sync.Mutex
	fixtureCache = map[string]*wasmhost.Component{}
	// spoolOnly marks the components tests run on the spool path although
	// the callers' rule (callerIO) would give them Go's wasi:io.
	spoolOnly sync.Map
)

// fixture compiles one of the engine's testdata fixtures once per test
// binary.
func fixture(t testing.TB, name string) *wasmhost.Component { return compiled(t, name, false) }

// spoolFixture is fixture name compiled again with its wasi:http bodies
// kept on the spool (callerIO leaves its runs to wasip2), for tests of the
// spool path with a fixture that imports no wasi:filesystem.
func spoolFixture(t testing.TB, name string) *wasmhost.Component { return compiled(t, name, true) }

func compiled(t testing.TB, name string, spool bool) *wasmhost.Component {
	t.Helper()
	key := name
	if spool {
		key = "spool:" + name
	}
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if c := fixtureCache[key]; c != nil {
		return c
	}
	src, err := os.ReadFile("../testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := testEngine.Compile(src)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	if spool {
		spoolOnly.Store(c, true)
	}
	fixtureCache[key] = c
	return c
}

func instantiate(t testing.TB, name string, rc wasmhost.RunConfig) *wasmhost.Instance {
	t.Helper()
	i, err := instantiateFull(testEngine, context.Background(), fixture(t, name), rc)
	if err != nil {
		t.Fatalf("instantiate %s: %v", name, err)
	}
	t.Cleanup(func() { i.Close() })
	return i
}

// instantiateFull is Engine.Instantiate with every limit the test leaves
// zero set to the spec's defaults (the engine has none of its own).
func instantiateFull(e *wasmhost.Engine, ctx context.Context, c *wasmhost.Component, rc wasmhost.RunConfig) (*wasmhost.Instance, error) {
	rc.Limits = fullLimits(rc.Limits)
	callerIO(c, &rc)
	return e.Instantiate(ctx, c, rc)
}

// callerIO does for the tests what Murmur's callers do
// (internal/wit.ChooseIO): Go's wasi:io for a component that uses
// wasi:http and imports no wasi:filesystem (its preopens dropped: out of
// its reach), unless it was compiled for a test of the spool path.
func callerIO(c *wasmhost.Component, rc *wasmhost.RunConfig) {
	var usesHTTP, usesFS bool
	for _, it := range c.Imports() {
		usesHTTP = usesHTTP || strings.HasPrefix(it.Name, "wasi:http/")
		usesFS = usesFS || strings.HasPrefix(it.Name, "wasi:filesystem/")
	}
	if _, spool := spoolOnly.Load(c); !rc.GoIO && !spool && usesHTTP && !usesFS {
		rc.GoIO = true
		rc.WASI.Preopens = nil
	}
}

func fullLimits(l wasmhost.Limits) wasmhost.Limits {
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
	return l
}

func asTrap(t *testing.T, err error) *wasmhost.TrapError {
	t.Helper()
	var te *wasmhost.TrapError
	if !errors.As(err, &te) {
		t.Fatalf("want *TrapError, got %T: %v", err, err)
	}
	return te
}

func allowAll(context.Context, *Request) error { return nil }
