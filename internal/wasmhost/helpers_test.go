package wasmhost

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
)

var (
	fixtureMu    sync.Mutex
	fixtureCache = map[string]*Component{}
)

// fixture compiles testdata/<name> once per test binary.
func fixture(t testing.TB, name string) *Component {
	t.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if c := fixtureCache[name]; c != nil {
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
	fixtureCache[name] = c
	return c
}

func instantiate(t testing.TB, name string, rc RunConfig) *Instance {
	t.Helper()
	i, err := testEngine.Instantiate(context.Background(), fixture(t, name), rc)
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
