package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// floodProject writes an agent capsule, driven by murmur/driver-replay,
// whose model calls the published tool-flood fixture (acme/flood) once with
// input {"flood": what}, then answers "done".
func floodProject(t *testing.T, homeDir, base, what string) string {
	t.Helper()
	publishTool(t, homeDir, filepath.Join(base, "flood"), "tool-flood", "name: acme/flood\nversion: 1.0.0\nruntime: tool\n")
	proj := filepath.Join(base, "agent")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "transcript.yaml"), []byte(fmt.Sprintf(`version: 1
responses:
  - content:
      - {type: tool_call, id: call_1, name: flood, input: {flood: %q}}
  - content:
      - {type: text, text: "done"}
`, what)), 0o644)
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte(`name: flooded
version: 0.1.0
artifacts:
  - name: murmur/driver-replay
    version: 1.0.0
    runtime: driver
    config:
      transcript: transcript.yaml
  - name: acme/flood
    version: 1.0.0
inference:
  model: replay
  driver:
    artifact: murmur/driver-replay
`), 0o644)
	return proj
}

// A tool that streams 600 MiB of chunks in one call costs mur no more than a
// bounded part of it: the task's response gets the first 64 KiB and a line
// naming the tool's chunks log, which keeps at most 64 MiB of the rest.
// Issue 22 item 10: every chunk was kept in the task (4,000 × 1 MiB
// OOM-killed mur).
func TestToolChunkFloodIsBounded(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := floodProject(t, homeDir, base, "chunks:600:1048576")
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "flood")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	log := filepath.Join(rd.RecordsDir, "logs", "tools", "acme", "flood.chunks.log")
	fi, err := os.Stat(log)
	if err != nil || fi.Size() != 64<<20 {
		t.Fatalf("chunks log %v %v, want 64 MiB", fi, err)
	}
	lines := traceLines(t, rd.RecordsDir)
	if tc := lastOf(lines, "tool_call"); tc == nil || tc.Str("status") != "ok" || tc.Str("tool_name") != "acme/flood" {
		t.Fatalf("tool_call %v", tc)
	}
	t.Logf("peak RSS of mur: %d MiB", r.MaxRSS>>20)
	if r.MaxRSS > 400<<20 {
		t.Errorf("mur peaked at %d MiB for a tool streaming 600 MiB", r.MaxRSS>>20)
	}
}

// A tool whose result carries half a million metadata pairs costs mur its
// own guest memory and no more: the result keeps 64 KiB of pairs and the
// rest go to the tool's metadata log. Issue 22 item 10: wasmtime lifted the
// whole list into the host first (about 1 KB of host memory a pair).
func TestToolMetadataFloodIsBounded(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := floodProject(t, homeDir, base, "meta:500000")
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "flood")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	t.Logf("peak RSS of mur: %d MiB", r.MaxRSS>>20)
	if r.MaxRSS > 400<<20 {
		t.Errorf("mur peaked at %d MiB for a tool returning half a million metadata pairs", r.MaxRSS>>20)
	}
	log := filepath.Join(rd.RecordsDir, "logs", "tools", "acme", "flood.metadata.log")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n < 490_000 || n >= 500_000 {
		t.Fatalf("metadata log has %d pairs, want the half million past the bound", n)
	}
	lines := traceLines(t, rd.RecordsDir)
	if tc := lastOf(lines, "tool_call"); tc == nil || tc.Str("status") != "ok" || tc.Str("tool_name") != "acme/flood" {
		t.Fatalf("tool_call %v", tc)
	}
}
