package wasmhost

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFixturesCompile compiles every WAT fixture: a typo in one fails here
// with wasmtime's message rather than deep inside another test.
func TestFixturesCompile(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.wat")
	if len(files) == 0 {
		t.Fatal("no WAT fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			c, err := testEngine.Compile(src)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range c.Imports() {
				t.Logf("import %s", it)
			}
			c.Close()
		})
	}
}
