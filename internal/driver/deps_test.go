package driver_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencyRule: only driver/anthropic imports the Anthropic SDK, only
// driver/openai imports the OpenAI SDK, and no production package imports the
// fake providers (the end-to-end harness, internal/e2e, is test support:
// internal/archtest keeps it out of production code).
func TestDependencyRule(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/murmur-go/murmur/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/murmur-go/murmur/internal/driver/"
	rules := []struct{ prefix, only string }{
		{"github.com/anthropics/anthropic-sdk-go", mod + "anthropic"},
		{"github.com/openai/openai-go", mod + "openai"},
		{mod + "fakeprovider", ""},
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkg := f[0]
		for _, imp := range f[1:] {
			for _, r := range rules {
				if r.prefix == mod+"fakeprovider" && pkg == "github.com/murmur-go/murmur/internal/e2e" {
					continue
				}
				if strings.HasPrefix(imp, r.prefix) && pkg != r.only {
					t.Errorf("%s imports %s; only %q may", pkg, imp, r.only)
				}
			}
		}
	}
}
