package wit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

var bg = context.Background()

// testEngine is shared by the tests, as the runtime shares one per process.
var testEngine *wasmhost.Engine

func TestMain(m *testing.M) {
	var err error
	testEngine, err = wasmhost.NewEngine(wasmhost.Config{NoCache: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	testEngine.Close()
	os.Exit(code)
}

var (
	fixtureMu    sync.Mutex
	fixtureCache = map[string]*wasmhost.Component{}
)

// fixture compiles one of the engine's WAT fixtures (Murmur-shaped
// components live beside the engine's tests) once per test binary.
func fixture(t testing.TB, name string) *wasmhost.Component {
	t.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if c := fixtureCache[name]; c != nil {
		return c
	}
	src, err := os.ReadFile("../wasmhost/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := testEngine.Compile(src)
	if err != nil {
		t.Fatalf("compile %s: %v", name, err)
	}
	fixtureCache[name] = c
	return c
}

// instantiate runs a fixture under the manifest's default limits.
func instantiate(t testing.TB, name string, h *wasmhost.Host) *wasmhost.Instance {
	t.Helper()
	c := fixture(t, name)
	rc := wasmhost.RunConfig{
		Limits: grant.Limits(manifest.Capabilities{}.EffLimits()),
		Host:   h,
	}
	ChooseIO(c, &rc) // as internal/tools and internal/script do
	i, err := testEngine.Instantiate(bg, c, rc)
	if err != nil {
		t.Fatalf("instantiate %s: %v", name, err)
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
