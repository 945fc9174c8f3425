package wasmhost

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/manifest"
)

var (
	fixtureMu    sync.Mutex
	fixtureCache = map[string]*Component{}
)

// fixture compiles one of testdata's fixtures once per test binary.
func fixture(t testing.TB, name string) *Component { return compiled(t, name, false) }

// spoolFixture is fixture name compiled again with its wasi:http bodies
// kept on the spool (SpoolOnly: callerIO leaves its runs to wasip2), for
// tests of the spool path with a
// fixture that imports no wasi:filesystem.
func spoolFixture(t testing.TB, name string) *Component { return compiled(t, name, true) }

func compiled(t testing.TB, name string, spool bool) *Component {
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
	src, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := testEngine.Compile(src)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	if spool {
		SpoolOnly(c)
	}
	fixtureCache[key] = c
	return c
}

// instantiateSpool is instantiate with spoolFixture's component.
func instantiateSpool(t testing.TB, name string, rc RunConfig) *Instance {
	t.Helper()
	return instantiateOf(t, name, spoolFixture(t, name), rc)
}

func instantiate(t testing.TB, name string, rc RunConfig) *Instance {
	t.Helper()
	return instantiateOf(t, name, fixture(t, name), rc)
}

func instantiateOf(t testing.TB, name string, c *Component, rc RunConfig) *Instance {
	t.Helper()
	i, err := instantiateFull(testEngine, context.Background(), c, rc)
	if err != nil {
		t.Fatalf("instantiate %s: %v", name, err)
	}
	t.Cleanup(func() { i.Close() })
	return i
}

func asTrap(t *testing.T, err error) *TrapError {
	t.Helper()
	var te *TrapError
	if !errors.As(err, &te) {
		t.Fatalf("want *TrapError, got %T: %v", err, err)
	}
	return te
}

func asDeadline(t *testing.T, err error) *DeadlineError {
	t.Helper()
	var de *DeadlineError
	if !errors.As(err, &de) {
		t.Fatalf("want *DeadlineError, got %T: %v", err, err)
	}
	return de
}

func asLimit(t *testing.T, err error) *ResourceLimitError {
	t.Helper()
	var le *ResourceLimitError
	if !errors.As(err, &le) {
		t.Fatalf("want *ResourceLimitError, got %T: %v", err, err)
	}
	return le
}

// instantiateFull is Engine.Instantiate with every limit the test leaves zero
// set to the spec's defaults (the engine has none of its own).
func instantiateFull(e *Engine, ctx context.Context, c *Component, rc RunConfig) (*Instance, error) {
	rc.Limits = fullLimits(rc.Limits)
	callerIO(c, &rc)
	return e.Instantiate(ctx, c, rc)
}

// callerIO does for the tests what Murmur's callers do
// (internal/wit.ChooseIO): Go's wasi:io for a component that uses
// wasi:http and imports no wasi:filesystem (its preopens dropped: out of
// its reach), unless it was compiled for a test of the spool path
// (SpoolOnly).
func callerIO(c *Component, rc *RunConfig) {
	usesHTTP := c.importsAny(func(name string) bool { return strings.HasPrefix(name, "wasi:http/") })
	if _, spool := spoolOnly.Load(c); !rc.GoIO && !spool && usesHTTP && !c.importsFS {
		rc.GoIO = true
		rc.WASI.Preopens = nil
	}
}

func fullLimits(l Limits) Limits {
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

// Murmur's interface names, spelled out: the engine tests use Murmur-shaped
// fixtures as plain components (internal/wit owns the names).
const (
	capsuleRun   = "murmur:capsule/run@0.1.0"
	toolRun      = "murmur:tool/run@0.1.0"
	toolRegistry = "murmur:tool-registry/invoke@0.1.0"
)

func callCapsuleRun(i *Instance) error {
	_, err := i.Call(bg, capsuleRun, "run")
	return err
}

// toolInput is murmur:tool/run's tool-input record.
func toolInput(data, logPath *string) Value {
	opt := func(p *string) Option {
		if p == nil {
			return None
		}
		return Some(*p)
	}
	return Record{{"data", opt(data)}, {"log-path", opt(logPath)}}
}

// toolResult is murmur:tool/run's tool-result record with only status and data.
func toolResult(status string, data Value) Value {
	return Record{{"status", Enum(status)}, {"summary", None}, {"data", data}, {"data-path", None},
		{"truncated", false}, {"metadata", List{}}}
}
