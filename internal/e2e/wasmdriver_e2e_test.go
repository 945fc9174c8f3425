package e2e_test

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
	fake := fakeProvider(t, fakeprovider.Anthropic)
	fake.Push(
		fakeprovider.Reply{Text: []string{"Let me ", "echo."}, InputTokens: 40, OutputTokens: 7,
			ToolCalls: []fakeprovider.ToolCall{{ID: "call_a", Name: "echo", Pieces: []string{`{"mess`, `age":"hi"}`}}}},
		fakeprovider.Reply{Text: []string{"Echo said ", "HI."}, InputTokens: 60, OutputTokens: 4},
	)
	homeDir, base := t.TempDir(), t.TempDir()
	publishTool(t, homeDir, filepath.Join(base, "driver"), fixture,
		"name: acme/claude-http\nversion: 1.0.0\nruntime: driver\ndescription: Anthropic Messages over wasi:http.\n")
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
