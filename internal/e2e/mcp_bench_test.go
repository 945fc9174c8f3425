package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/e2e"
	"github.com/murmur-go/murmur/internal/trace"
)

// mcpBenchProject writes an agent project (after_task: sleep) declaring
// the given artifacts; transcript is its replay.
func mcpBenchProject(b *testing.B, artifacts, rest, transcript string) string {
	b.Helper()
	proj := b.TempDir()
	os.WriteFile(filepath.Join(proj, "transcript.yaml"), []byte(transcript), 0o644)
	m := "name: mcp-bench\nversion: 0.1.0\nartifacts:\n  - name: murmur/driver-replay\n    version: 1.0.0\n    runtime: driver\n    config:\n      transcript: transcript.yaml\n" +
		artifacts + "inference:\n  model: replay\n  max_turns: 300\n  driver:\n    artifact: murmur/driver-replay\n  system_prompt: Work.\n" + rest
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte(m), 0o644)
	return proj
}

// BenchmarkMCPStartToReady: process start to the --json line of a replay
// agent with no server, with the mcpbad server (Go, contained at the
// host's tier) and with the npm server-everything (Node, contained). The
// added time is the server's start through the containment helper,
// handshake and listing.
func BenchmarkMCPStartToReady(b *testing.B) {
	bad := mcpbad(b)
	cases := []struct{ name, artifacts string }{
		{"none", ""},
		{"mcpbad", badEntry(bad, "ok", "noop", "")},
	}
	if nm := filepath.Join(repoRoot(), "node_modules"); fileExists(filepath.Join(nm, ".bin", "mcp-server-everything")) {
		cases = append(cases, struct{ name, artifacts string }{"everything", "  - name: local/everything\n    version: \"2.0.0\"\n    runtime: mcp\n    mcp:\n      command: mcp-server-everything\n      args: [stdio]\n      tools: [echo]\n      install_dirs: [" + nm + "]\n"})
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			homeDir := b.TempDir()
			proj := mcpBenchProject(b, tc.artifacts, sleepLifecycle, calls())
			shareCompileCache(b, homeDir)
			once := func() time.Duration {
				cmd := murCmd(b, homeDir, proj, "run", "--json")
				d, _, _ := startToReady(b, cmd)
				terminate(b, cmd)
				return d
			}
			once()
			d := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d = append(d, once())
			}
			b.StopTimer()
			reportMedian(b, d, "median-ms")
		})
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// BenchmarkToolCallThroughLoop: one no-op tool call through the agent loop
// (replay turn, inventory, line, result) for each kind: an MCP call to
// mcpbad (contained, and with containment: advisory), a shell tool
// (/usr/bin/true under the tier) and the WASM echo tool. Each session runs
// 200 calls in one task; the figure is the task's duration over the calls.
func BenchmarkToolCallThroughLoop(b *testing.B) {
	const n = 200
	bad := mcpbad(b)
	transcript := func(call string) string {
		var sb strings.Builder
		sb.WriteString("version: 1\nresponses:\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&sb, "  - content:\n      - {type: tool_call, id: c%d, name: %s}\n", i, call)
		}
		sb.WriteString("  - content:\n      - {type: text, text: done}\n")
		return sb.String()
	}
	for _, tc := range []struct{ name, artifacts, rest, call string }{
		{"mcp", badEntry(bad, "ok", "noop", ""), "", `mcp__bad__noop, input: {}`},
		{"mcp-advisory", badEntry(bad, "ok", "noop", ""), "capabilities:\n  containment: advisory\n", `mcp__bad__noop, input: {}`},
		{"shell", "", "capabilities:\n  shell:\n    allow: [\"true\"]\n", `"true", input: {command: ""}`},
		{"wasm", "  - name: acme/echo\n    version: 1.0.0\n", "", `echo, input: {message: hi}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			homeDir := b.TempDir()
			if tc.name == "wasm" {
				e2e.PublishEchoTool(b, homeDir, b.TempDir())
			}
			proj := mcpBenchProject(b, tc.artifacts, tc.rest, transcript(tc.call))
			var per []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := runMur(b, homeDir, proj, nil, "run", "--json", "--task", "go")
				if r.Code != 0 {
					b.Fatalf("run: %+v", r)
				}
				lines := traceLines(b, parseReady(b, r.Stdout).RecordsDir)
				te := lastOf(lines, trace.TypeTaskEnd)
				if te == nil || te.Int("tool_errors") != 0 && tc.name != "shell" {
					b.Fatalf("task_end %v", te)
				}
				per = append(per, time.Duration(te.Int("duration_ms"))*time.Millisecond/n)
			}
			b.StopTimer()
			reportMedian(b, per, "ms/call")
		})
	}
}
