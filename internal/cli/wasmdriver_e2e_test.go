package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/driver/fakeprovider"
)

// A stored driver component (the Go-kit driver-anthropic-http fixture,
// built and published with the real binary) runs an agent session through
// mur run: it calls the fake Anthropic provider itself through wasi:http,
// with streaming and a tool call; the host swaps the placeholder for the
// real key on the gateway request, so the provider sees the key and the
// component never held it. The same for the freestanding C driver
// (driver-anthropic-c), which has no Go runtime.
func TestStoredDriverOverHTTPEndToEnd(t *testing.T) {
	for _, fixture := range []string{"driver-anthropic-http", "driver-anthropic-c"} {
		t.Run(fixture, func(t *testing.T) { storedDriverOverHTTP(t, fixture) })
	}
}

func storedDriverOverHTTP(t *testing.T, fixture string) {
	fake := fakeprovider.NewAnthropic()
	defer fake.Close()
	fake.Push(
		fakeprovider.Reply{Text: []string{"Let me ", "echo."}, InputTokens: 40, OutputTokens: 7,
			ToolCalls: []fakeprovider.ToolCall{{ID: "call_a", Name: "echo", Pieces: []string{`{"mess`, `age":"hi"}`}}}},
		fakeprovider.Reply{Text: []string{"Echo said ", "HI."}, InputTokens: 60, OutputTokens: 4},
	)
	homeDir, base := t.TempDir(), t.TempDir()
	drv := filepath.Join(base, "driver")
	os.MkdirAll(drv, 0o755)
	os.WriteFile(filepath.Join(drv, "murmur.yaml"), []byte("name: acme/claude-http\nversion: 1.0.0\nruntime: driver\ndescription: Anthropic Messages over wasi:http.\n"), 0o644)
	wasm, err := os.ReadFile(filepath.Join(repoRoot(), "testdata", "components", fixture, fixture+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(drv, fixture+".wasm"), wasm, 0o644)
	for _, cmd := range []string{"build", "publish"} {
		if r := runMur(t, homeDir, drv, nil, cmd); r.Code != 0 {
			t.Fatalf("%s the driver: %+v", cmd, r)
		}
	}
	proj := providerProject(t, homeDir, base, "acme/claude-http", fake.URL)
	r := runMur(t, homeDir, proj, []string{"PROVIDER_TEST_KEY=sk-test-right"}, "run", "--json", "--task", "echo hi")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	got, _ := os.ReadFile(filepath.Join(rd.RecordsDir, "out", "result.txt"))
	if string(got) != "Echo said HI." {
		t.Errorf("result.txt %q", got)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the provider saw %d requests, want 2", len(reqs))
	}
	for i, q := range reqs {
		if k := q.Header.Get("x-api-key"); k != "sk-test-right" {
			t.Errorf("request %d: x-api-key %q", i, k)
		}
	}
	if !strings.Contains(string(reqs[1].Body), `"tool_result"`) || !strings.Contains(string(reqs[1].Body), `"call_a"`) {
		t.Errorf("the second turn does not carry the tool result: %s", reqs[1].Body)
	}
}
