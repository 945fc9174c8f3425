package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/e2e"
	"github.com/murmur-go/murmur/internal/trace"
)

// TestFormationVirtualAddresses (§22.9), through the real binaries: a
// script entry's component is handed MURMUR_FORMATION_PEERS, and reaches
// its callee worker at http://worker.formation.invalid by message/send and
// by wasi:http — with no network.allow — the runtime swapping in the edge's
// token (a forged Authorization is replaced) and origin peer; a port, a
// scheme or a member it may not call is refused before any connection,
// with a logs/http.log line. Nothing the run wrote names a token.
func TestFormationVirtualAddresses(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	e2e.ReplayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "0.1.0", doorAuth+peerSleep, workerTranscript)
	e2e.ReplayCapsule(t, homeDir, filepath.Join(base, "other"), "other", "0.1.0", doorAuth+peerSleep, workerTranscript)
	e2e.PublishDir(t, homeDir, e2e.Capsule(t, filepath.Join(base, "lead"), "name: lead\nversion: 0.1.0\n", e2e.Fixture(t, "capsule-probe.wasm")))
	httpWasm, err := os.ReadFile(filepath.Join(e2e.RepoRoot(), "testdata", "components", "capsule-http", "capsule-http.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	e2e.PublishDir(t, homeDir, e2e.Capsule(t, filepath.Join(base, "fetcher"), "name: fetcher\nversion: 0.1.0\n", httpWasm))
	proj := filepath.Join(base, "team")
	os.MkdirAll(proj, 0o755)
	roster := func(entry string) string {
		return `roster_version: 1
members:
  - {name: lead, capsule: ` + entry + `, version: "0.1.0", entry: true}
  - {name: worker, capsule: worker, version: "0.1.0"}
  - {name: other, capsule: other, version: "0.1.0"}
reachability:
  - from: lead
    to: [worker]
`
	}
	// run runs the formation with the entry and task given and answers the
	// entry's ready line, its out/result.txt and the worker's records dir.
	run := func(t *testing.T, entry, task string) (e2e.Ready, string, string) {
		t.Helper()
		writeRoster(t, proj, roster(entry))
		r := runMur(t, homeDir, base, nil, "run", "--roster", proj, "--json", "--task", task)
		lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
		if r.Code != 0 || len(lines) != 2 {
			t.Fatalf("%+v", r)
		}
		var fl formationLine
		if err := json.Unmarshal([]byte(lines[0]), &fl); err != nil || len(fl.Peers) != 2 || fl.Peers[0].Name != "worker" {
			t.Fatalf("formation line %q", lines[0])
		}
		if strings.Contains(r.Stdout+r.Stderr, "mft1.") {
			t.Error("the run printed a formation token")
		}
		rd := parseReady(t, lines[1]+"\n")
		out, _ := os.ReadFile(filepath.Join(rd.Workdir, "out", "result.txt"))
		return rd, string(out), fl.Peers[0].RecordsDir
	}

	t.Run("environment", func(t *testing.T) {
		_, out, _ := run(t, "lead", "env")
		if !strings.Contains(out, "env MURMUR_FORMATION_PEERS: worker=http://worker.formation.invalid\n") {
			t.Fatalf("the entry's component saw:\n%s", out)
		}
	})

	t.Run("message/send", func(t *testing.T) {
		rd, out, workerRecords := run(t, "lead", "send http://WORKER.formation.invalid/ review the draft")
		taskID, _, ok := strings.Cut(strings.TrimPrefix(out, "send: task="), " ")
		if !strings.HasPrefix(out, "send: task=") || !ok || taskID == "" {
			t.Fatalf("the entry's send: %q", out)
		}
		// The worker took it as a peer's task, under the edge's token.
		var start *trace.Line
		for _, l := range byType(traceLines(t, workerRecords), trace.TypeTaskStart) {
			if l.Str("task_id") == taskID {
				start = &l
			}
		}
		if start == nil || start.Str("origin") != "peer" || start.Str("source") != "a2a" {
			t.Fatalf("the worker's task_start for %s: %+v", taskID, start)
		}
		sends := byType(traceLines(t, rd.RecordsDir), "a2a_send")
		if len(sends) != 1 || sends[0].Str("peer_url") != "http://WORKER.formation.invalid/" || sends[0].Str("task_id") != taskID {
			t.Fatalf("a2a_send lines %+v", sends)
		}
	})

	t.Run("message/send refused", func(t *testing.T) {
		_, out, _ := run(t, "lead", "send http://other.formation.invalid/ hello")
		if !strings.HasPrefix(out, "send error: ") || !strings.Contains(out, "E-RUN-070") || !strings.Contains(out, "'other' is not a member this capsule may call") {
			t.Fatalf("the entry's send: %q", out)
		}
	})

	t.Run("wasi:http", func(t *testing.T) {
		rd, out, _ := run(t, "fetcher", strings.Join([]string{
			// A forged token is replaced by the edge's: the door passes it
			// (and peer consent) and answers the non-JSON body with
			// JSON-RPC's parse error, 200.
			"POST http://worker.formation.invalid/ 10 H:Authorization:Bearer%20forged",
			"GET http://worker.formation.invalid:8080/",
			"GET https://worker.formation.invalid/",
			"GET http://other.formation.invalid/",
			"GET http://worker.formation.invalid/.well-known/agent-card.json",
		}, "\n"))
		got := strings.Split(strings.TrimSpace(out), "\n")
		if len(got) != 5 || !strings.HasPrefix(got[0], "status=200 ") || !strings.HasPrefix(got[4], "status=200 ") {
			t.Fatalf("the fetcher's result:\n%s", out)
		}
		for _, l := range got[1:4] {
			if !strings.HasPrefix(l, "error ") || !strings.Contains(l, "HTTP-request-denied") {
				t.Errorf("a refused request: %q", l)
			}
		}
		log, _ := os.ReadFile(filepath.Join(rd.RecordsDir, "logs", "http.log"))
		for _, want := range []string{"url=http://worker.formation.invalid:8080/", "its port is not 80", "url=https://worker.formation.invalid/",
			"its scheme is not http", "url=http://other.formation.invalid/", "'other' is not a member this capsule may call"} {
			if !strings.Contains(string(log), want) {
				t.Errorf("logs/http.log lacks %q:\n%s", want, log)
			}
		}
		if n := strings.Count(string(log), "wasi:http request denied"); n != 3 {
			t.Errorf("logs/http.log has %d refusals:\n%s", n, log)
		}
	})

	t.Run("a tool of an agent entry", func(t *testing.T) {
		// The C tool http-get-c GETs the worker's card through its virtual
		// address: neither the tool nor the agent grants any network.
		publishTool(t, homeDir, filepath.Join(base, "get"), "http-get-c", "name: acme/get\nversion: 1.0.0\nruntime: tool\ndescription: GETs a URL n times.\n")
		dir := filepath.Join(base, "agent-lead")
		os.MkdirAll(dir, 0o755)
		tp := filepath.Join(dir, "transcript.yaml")
		os.WriteFile(tp, []byte(`version: 1
responses:
  - content:
      - {type: tool_call, id: call_card, name: get, input: {url: "http://worker.formation.invalid/.well-known/agent-card.json", n: 1}}
  - content:
      - {type: tool_call, id: call_refused, name: get, input: {url: "http://other.formation.invalid/.well-known/agent-card.json", n: 1}}
  - content:
      - {type: text, text: "fetched"}
`), 0o644)
		os.WriteFile(filepath.Join(dir, "murmur.yaml"), []byte(`name: agent-lead
version: 0.1.0
artifacts:
  - name: murmur/driver-replay
    version: 1.0.0
    runtime: driver
    config:
      transcript: `+tp+`
  - name: acme/get
    version: 1.0.0
inference:
  model: replay
  driver:
    artifact: murmur/driver-replay
`+doorAuth), 0o644)
		e2e.PublishDir(t, homeDir, dir)
		rd, _, _ := run(t, "agent-lead", "fetch the card")
		calls := byType(traceLines(t, rd.RecordsDir), trace.TypeToolCall)
		if len(calls) != 2 || calls[0].Str("tool_call_id") != "call_card" || calls[0].Str("status") != "ok" ||
			calls[1].Str("tool_call_id") != "call_refused" || calls[1].Str("status") == "ok" {
			t.Fatalf("tool_call lines %+v", calls)
		}
	})

	// No token anywhere the runs wrote.
	filepath.WalkDir(homeDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(p, "/.murmur/compiled") || strings.Contains(p, "/.murmur/artifacts") {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "mft1.") {
			t.Errorf("%s holds a formation token", p)
		}
		return nil
	})
}
