package wasmhost

import (
	"fmt"
	"os"
	"testing"
)

// testEngine is shared by the tests, as the runtime shares one per process.
var testEngine *Engine

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasmhost-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testEngine, err = NewEngine(Config{CacheDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	testEngine.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}
