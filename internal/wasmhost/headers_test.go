package wasmhost

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVendoredHeaders checks include/ is exactly the C headers of the
// wasmtime-go module version whose libwasmtime.a we link: a header from
// another version would compile against a different ABI.
func TestVendoredHeaders(t *testing.T) {
	const mod = "github.com/bytecodealliance/wasmtime-go/v39"
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}} {{.Dir}}", mod).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", mod, err)
	}
	version, dir, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if version != "v"+wasmtimeVersion {
		t.Fatalf("go.mod requires %s %s, headers are pinned to v%s", mod, version, wasmtimeVersion)
	}
	if dir == "" {
		t.Fatalf("module %s not downloaded (run go mod download)", mod)
	}
	upstream := headerSet(t, filepath.Join(dir, "build", "include"))
	vendored := headerSet(t, "include")
	for name, want := range upstream {
		got, ok := vendored[name]
		if !ok {
			t.Errorf("include/%s missing", name)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("include/%s differs from %s@v%s", name, mod, wasmtimeVersion)
		}
	}
	for name := range vendored {
		if _, ok := upstream[name]; !ok {
			t.Errorf("include/%s is not in the module", name)
		}
	}
	if len(upstream) < 30 {
		t.Fatalf("only %d headers upstream", len(upstream))
	}
}

func headerSet(t *testing.T, root string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".h") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		m[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
