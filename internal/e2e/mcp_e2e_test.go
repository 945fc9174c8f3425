package e2e_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/murmur-go/murmur/internal/trace"
)

// MCP tool servers end to end (docs/mcp.md): the real mur, offline (the
// replay driver), against real servers from npm and against mcpbad, a
// server written for the bad cases.

var (
	mcpbadOnce sync.Once
	mcpbadDir  string
	mcpbadErr  error
)

// mcpbad builds testdata/mcpbad once into a folder of its own (named in
// install_dirs, outside every work folder).
func mcpbad(t testing.TB) string {
	t.Helper()
	mcpbadOnce.Do(func() {
		mcpbadDir, mcpbadErr = os.MkdirTemp("", "mcpbad-")
		if mcpbadErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(mcpbadDir, "mcpbad"), "./internal/e2e/testdata/mcpbad")
		cmd.Dir = repoRoot()
		cmd.Env = append(os.Environ(), "GOENV=off", "GOFLAGS=", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			mcpbadErr = fmt.Errorf("go build mcpbad: %v\n%s", err, out)
		}
	})
	if mcpbadErr != nil {
		t.Fatal(mcpbadErr)
	}
	return mcpbadDir
}

// npmServers is the repository's node_modules holding the pinned servers,
// or a skip where Node or them are absent.
func npmServers(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the MCP servers from npm cannot run here")
	}
	dir := filepath.Join(repoRoot(), "node_modules")
	if _, err := os.Stat(filepath.Join(dir, ".bin", "mcp-server-everything")); err != nil {
		t.Skip("node_modules has no @modelcontextprotocol/server-everything: run npm ci in the repository")
	}
	return dir
}

// mcpProject writes an offline agent project: the replay transcript and
// the given artifacts and capabilities.
func mcpProject(t *testing.T, transcript, artifacts, rest string) string {
	t.Helper()
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, "transcript.yaml"), []byte(transcript), 0o644)
	m := `name: mcp-agent
version: 0.1.0
artifacts:
  - name: murmur/driver-replay
    version: 1.0.0
    runtime: driver
    config:
      transcript: transcript.yaml
` + artifacts + `inference:
  model: replay
  driver:
    artifact: murmur/driver-replay
  system_prompt: Work.
` + rest
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte(m), 0o644)
	return proj
}

func calls(cs ...string) string {
	var b strings.Builder
	b.WriteString("version: 1\nresponses:\n")
	for i, c := range cs {
		fmt.Fprintf(&b, "  - content:\n      - {type: tool_call, id: call_%d, name: %s}\n", i+1, c)
	}
	b.WriteString("  - content:\n      - {type: text, text: done}\n")
	return b.String()
}

func badEntry(dir, mode, tools, extra string) string {
	return `  - name: local/bad
    version: 1.0.0
    runtime: mcp
    mcp:
      command: mcpbad
      args: [` + mode + `]
      tools: [` + tools + `]
      install_dirs: [` + dir + `]
` + extra
}

// toolCalls are the trace's tool_call lines.
func toolCalls(lines []trace.Line) []trace.Line { return byType(lines, trace.TypeToolCall) }

// The npm server-everything through the agent loop: listed and called
// under the host's tier, an unlisted tool never offered, a tool error, the
// lines.
func TestMCPServerEverything(t *testing.T) {
	nm := npmServers(t)
	homeDir := t.TempDir()
	transcript := calls(
		`mcp__everything__echo, input: {message: "hello mcp"}`,
		`mcp__everything__get-sum, input: {a: 2, b: 40}`,
		`mcp__everything__get-env, input: {}`,
		`mcp__everything__echo, input: {wrong: 1}`,
	)
	proj := mcpProject(t, transcript, `  - name: local/everything
    version: "2.0.0"
    runtime: mcp
    mcp:
      command: mcp-server-everything
      args: [stdio]
      tools: [echo, get-sum]
      install_dirs: [`+nm+`]
`, "")
	r := runMur(t, homeDir, proj, []string{"MCP_HOST_SECRET=must-not-leak"}, "run", "--json", "--task", "go")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	st := lastOf(lines, trace.TypeMCPServerStart)
	if st == nil || st.Str("status") != "ok" || st.Str("protocol_version") == "" || st.Int("listed") < 10 ||
		!strings.Contains(string(st.Fields["tools"]), "mcp__everything__get-sum") || st.Str("binary_sha256") == "" {
		t.Fatalf("mcp_server_start %v", st)
	}
	if c := string(st.Fields["containment"]); !strings.Contains(c, `"achieved":"`) {
		t.Errorf("containment %v", st.Fields["containment"])
	}
	tc := toolCalls(lines)
	if len(tc) != 4 {
		t.Fatalf("tool calls %d: %s", len(tc), types(lines))
	}
	if tc[0].Str("kind") != "mcp" || tc[0].Str("server") != "everything" || tc[0].Str("mcp_tool") != "echo" || tc[0].Str("status") != "ok" {
		t.Errorf("echo %v", tc[0].Fields)
	}
	if tc[1].Str("status") != "ok" {
		t.Errorf("get-sum %v", tc[1].Fields)
	}
	if tc[2].Str("status") != "error" || !strings.Contains(tc[2].Str("error"), "no tool named") {
		t.Errorf("an unlisted tool was offered: %v", tc[2].Fields)
	}
	if tc[3].Str("status") != "error" || tc[3].Str("ending") != "ok" {
		t.Errorf("a tool error %v", tc[3].Fields)
	}
	end := lastOf(lines, trace.TypeMCPServerEnd)
	if end == nil || end.Str("reason") != "session_end" || end.Int("calls") != 3 {
		t.Errorf("mcp_server_end %v", end)
	}
	if td := string(lines[0].Fields["tools_declared"]); !strings.Contains(td, "mcp__everything__echo") || strings.Contains(td, "get-env") {
		t.Errorf("tools_declared %s", td)
	}
	b, _ := os.ReadFile(filepath.Join(rd.RecordsDir, "trace.jsonl"))
	if strings.Contains(string(b), "must-not-leak") {
		t.Error("the host's secret reached the trace")
	}
}

// The bad servers: each refusal with its code, the launch failed before
// any task where a start fails, and what a call that breaks does.
func TestMCPBadServers(t *testing.T) {
	dir := mcpbad(t)
	for _, tc := range []struct {
		name, mode, tools, extra, transcript string
		code                                 int
		stderr                               []string
		check                                func(t *testing.T, lines []trace.Line)
	}{
		{name: "garbage", mode: "garbage", tools: "noop", code: 1, stderr: []string{"E-RUN-153", "Welcome to the server"}},
		{name: "silent", mode: "silent", tools: "noop", extra: "      start_seconds: 2\n", code: 1, stderr: []string{"E-RUN-151"}},
		{name: "exit3", mode: "exit3", tools: "noop", code: 1, stderr: []string{"E-RUN-152", "status 3", "fatal: no configuration found"}},
		{name: "missing tool", mode: "ok", tools: "noop, nosuch", code: 1, stderr: []string{"E-RUN-154", "nosuch"}},
		{name: "many", mode: "many", tools: "noop", code: 0, transcript: calls(`mcp__bad__noop, input: {}`),
			check: func(t *testing.T, lines []trace.Line) {
				if st := lastOf(lines, trace.TypeMCPServerStart); st.Int("listed") != 10000 {
					t.Errorf("listed %d", st.Int("listed"))
				}
				if c := toolCalls(lines); len(c) != 1 || c[0].Str("status") != "ok" {
					t.Errorf("calls %v", c)
				}
			}},
		{name: "big", mode: "big", tools: "noop", code: 0, transcript: calls(`mcp__bad__noop, input: {}`),
			check: func(t *testing.T, lines []trace.Line) {
				c := toolCalls(lines)
				if len(c) != 1 || c[0].Str("ending") != "resource_limit" || !strings.Contains(c[0].Str("error"), "E-RUN-158") {
					t.Errorf("calls %v", c)
				}
				if e := byType(lines, trace.TypeMCPServerEnd); len(e) != 1 || e[0].Str("reason") != "message_too_large" {
					t.Errorf("ends %v", e)
				}
			}},
		{name: "sampling", mode: "sampling", tools: "noop", code: 0, transcript: calls(`mcp__bad__noop, input: {}`),
			check: func(t *testing.T, lines []trace.Line) {
				d := byType(lines, trace.TypeMCPDenied)
				if len(d) != 2 || d[0].Str("method") != "sampling/createMessage" || d[1].Str("method") != "roots/list" || d[0].Str("tool_call_id") != "call_1" {
					t.Errorf("denied %v", d)
				}
				if c := toolCalls(lines); len(c) != 1 || c[0].Str("status") != "ok" {
					t.Errorf("calls %v", c)
				}
				if e := lastOf(lines, trace.TypeMCPServerEnd); e.Int("denied") != 2 {
					t.Errorf("end %v", e.Fields)
				}
			}},
		{name: "crash", mode: "crash", tools: "noop", code: 0,
			transcript: calls(`mcp__bad__noop, input: {}`, `mcp__bad__noop, input: {}`, `mcp__bad__noop, input: {}`, `mcp__bad__noop, input: {}`),
			check: func(t *testing.T, lines []trace.Line) {
				c := toolCalls(lines)
				if len(c) != 4 {
					t.Fatalf("calls %d", len(c))
				}
				for i, l := range c {
					if l.Str("status") != "error" || !strings.Contains(l.Str("error"), "E-RUN-156") {
						t.Errorf("call %d %v", i, l.Fields)
					}
				}
				if !strings.Contains(c[3].Str("error"), "not started again") {
					t.Errorf("the last call %v", c[3].Fields)
				}
				if s := byType(lines, trace.TypeMCPServerStart); len(s) != 3 {
					t.Errorf("%d starts, want 3 (two restarts)", len(s))
				}
				for _, e := range byType(lines, trace.TypeMCPServerEnd) {
					if e.Str("reason") != "exited" || e.Int("exit_code") != 7 {
						t.Errorf("end %v", e.Fields)
					}
				}
			}},
		{name: "tool error and unlisted", mode: "ok", tools: "noop, fail", code: 0,
			transcript: calls(`mcp__bad__fail, input: {}`, `mcp__bad__secret, input: {}`),
			check: func(t *testing.T, lines []trace.Line) {
				c := toolCalls(lines)
				if len(c) != 2 || c[0].Str("status") != "error" || c[0].Str("ending") != "ok" || c[0].Str("error") != "it failed on purpose" {
					t.Fatalf("fail %v", c)
				}
				if !strings.Contains(c[1].Str("error"), "no tool named") {
					t.Errorf("an unlisted tool %v", c[1].Fields)
				}
				if e := lastOf(lines, trace.TypeMCPServerEnd); e.Int("calls") != 1 {
					t.Errorf("only the offered call reaches the server: %v", e.Fields)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := tc.transcript
			if tr == "" {
				tr = calls()
			}
			proj := mcpProject(t, tr, badEntry(dir, tc.mode, tc.tools, tc.extra), "")
			homeDir := t.TempDir()
			r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "go")
			if r.Code != tc.code {
				t.Fatalf("exit %d, want %d: %+v", r.Code, tc.code, r)
			}
			for _, s := range tc.stderr {
				if !strings.Contains(r.Stderr, s) {
					t.Errorf("stderr lacks %q: %s", s, r.Stderr)
				}
			}
			recs := sessionsUnder(homeDir)
			if len(recs) != 1 {
				t.Fatalf("sessions %v", recs)
			}
			lines := traceLines(t, recs[0])
			if tc.code != 0 {
				if got := types(lines); got != "session_start mcp_server_start mcp_server_end session_end" {
					t.Errorf("a failed start: %s", got)
				}
				if e := lastOf(lines, trace.TypeMCPServerEnd); e.Str("reason") != "start_failed" {
					t.Errorf("end %v", e.Fields)
				}
				if end := lastEnd(t, lines); end.Str("exit_status") != "failed" {
					t.Errorf("session_end %v", end.Fields)
				}
				return
			}
			tc.check(t, lines)
			if n, m := len(byType(lines, trace.TypeMCPServerStart)), len(byType(lines, trace.TypeMCPServerEnd)); n != m {
				t.Errorf("%d starts but %d ends", n, m)
			}
		})
	}
}

// What a stdio server reaches at each tier: never the host's loopback
// services, the agent's environment, or a host its entry does not list
// (the proxy's 403); at scoped and sealed, not the records dir or a file
// outside its grant — refused by the kernel, the server itself tries.
func TestMCPServerContainment(t *testing.T) {
	dir := mcpbad(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	outside := filepath.Join(t.TempDir(), "outside.txt")
	os.WriteFile(outside, []byte("private"), 0o644)
	for _, tier := range []string{"advisory", "scoped", "sealed"} {
		t.Run(tier, func(t *testing.T) {
			homeDir := t.TempDir()
			in := fmt.Sprintf(`{path: %q, url: "http://example.com/", dial: %q}`, outside, ln.Addr().String())
			proj := mcpProject(t, calls(`mcp__bad__probe, input: `+in), badEntry(dir, "ok", "probe", ""),
				"capabilities:\n  containment: "+tier+"\n")
			r := runMur(t, homeDir, proj, []string{"MCP_HOST_SECRET=must-not-leak"}, "run", "--json", "--task", "go")
			if r.Code != 0 {
				if strings.Contains(r.Stderr, "E-CAP-003") {
					t.Skipf("this host cannot deliver %s: %s", tier, r.Stderr)
				}
				t.Fatalf("run: %+v", r)
			}
			rd := parseReady(t, r.Stdout)
			lines := traceLines(t, rd.RecordsDir)
			c := toolCalls(lines)
			if len(c) != 1 || c[0].Str("status") != "ok" {
				t.Fatalf("probe %v", c)
			}
			if st := lastOf(lines, trace.TypeMCPServerStart); !strings.Contains(string(st.Fields["containment"]), `"achieved":"`+tier+`"`) {
				t.Errorf("containment %s", st.Fields["containment"])
			}
			out := probeText(t, rd.RecordsDir)
			if !strings.Contains(out, "status 403") {
				t.Errorf("a host outside network.allow was not the proxy's 403: %s", out)
			}
			if !strings.Contains(out, "unreachable") {
				t.Errorf("the host's loopback service was reachable: %s", out)
			}
			if strings.Contains(out, "must-not-leak") || !strings.Contains(out, "HOME="+filepath.Join(rd.RecordsDir, "mcp", "bad", "home")) {
				t.Errorf("environment: %s", out)
			}
			if tier != "advisory" && !strings.Contains(out, "refused") {
				t.Errorf("a file outside the grant was readable at %s: %s", tier, out)
			}
		})
	}
}

// probeText is what the probe tool answered: mcpbad writes it to its
// stderr too, which the runtime keeps in the server's log.
func probeText(t *testing.T, recordsDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(recordsDir, "logs", "mcp", "bad.stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Kill -9 of mur leaves no server process: the parent-death signal ends
// the containment helper, whose init ends the server.
func TestMCPKillMurLeavesNoServer(t *testing.T) {
	dir := mcpbad(t)
	homeDir := t.TempDir()
	proj := mcpProject(t, calls(), badEntry(dir, "ok", "noop", ""), "")
	cmd, br, _ := startMur(t, homeDir, proj, "run", "--json")
	rd := readReady(t, br)
	lines := traceLines(t, rd.RecordsDir)
	st := lastOf(lines, trace.TypeMCPServerStart)
	if st == nil || st.Int("pid") == 0 {
		t.Fatalf("no server start: %s", types(lines))
	}
	if servers := processesOf(filepath.Join(dir, "mcpbad")); len(servers) == 0 {
		t.Fatal("the server is not running before the kill")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitFor(t, "every mcpbad process to end", func() bool { return len(processesOf(filepath.Join(dir, "mcpbad"))) == 0 })
}

// processesOf lists the pids whose executable is bin.
func processesOf(bin string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && strings.TrimSuffix(exe, " (deleted)") == bin {
			out = append(out, pid)
		}
	}
	return out
}

// --explain-scope starts nothing and says what each server may reach; an
// HTTP server's url outside network.allow is refused at load (E-CAP-020).
func TestMCPExplainScope(t *testing.T) {
	dir := mcpbad(t)
	homeDir := t.TempDir()
	proj := mcpProject(t, calls(), badEntry(dir, "ok", "noop, probe", "    capabilities:\n      network: {allow: [api.example.com]}\n")+`  - name: acme/docs
    version: "1.0.0"
    runtime: mcp
    mcp:
      url: https://docs.example.com/mcp
      headers: {X-Team: blue}
      tools: [search]
`, "capabilities:\n  network: {allow: [api.example.com, \"https://docs.example.com\"]}\n")
	r := runMur(t, homeDir, proj, nil, "run", "--explain-scope")
	if r.Code != 0 {
		t.Fatalf("explain: %+v", r)
	}
	for _, want := range []string{
		"mcp: bad: stdio mcpbad ok (" + filepath.Join(dir, "mcpbad") + ") under ",
		"network: api.example.com through the egress proxy",
		"mcp: docs: http https://docs.example.com/mcp from mur itself (no proxy, no redirects); headers: X-Team",
		"mcp tools: mcp__bad__noop, mcp__bad__probe, mcp__docs__search",
		"not protected here: an MCP server's host: only its origin is held",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("--explain-scope lacks %q:\n%s", want, r.Stdout)
		}
	}
	if len(processesOf(filepath.Join(dir, "mcpbad"))) != 0 || len(sessionsUnder(homeDir)) != 0 {
		t.Error("--explain-scope started something")
	}
	j := runMur(t, homeDir, proj, nil, "run", "--explain-scope", "--json")
	if !strings.Contains(j.Stdout, `"mcp":[{"server":"bad"`) || !strings.Contains(j.Stdout, `"model_names":["mcp__docs__search"]`) {
		t.Errorf("--json: %s", j.Stdout)
	}
	doc := runMur(t, homeDir, proj, nil, "doctor")
	if !strings.Contains(doc.Stdout, "mcp  local/bad@1.0.0  declared in place: "+filepath.Join(dir, "mcpbad")) ||
		!strings.Contains(doc.Stdout, "mcp  acme/docs@1.0.0  declared in place: https://docs.example.com/mcp") {
		t.Errorf("doctor: %+v", doc)
	}
	uncovered := mcpProject(t, calls(), `  - name: acme/docs
    version: "1.0.0"
    runtime: mcp
    mcp:
      url: https://docs.example.com/mcp
      tools: [search]
`, "")
	if r := runMur(t, homeDir, uncovered, nil, "run", "--task", "go"); r.Code == 0 || !strings.Contains(r.Stderr, "E-CAP-020") || len(sessionsUnder(homeDir)) != 0 {
		t.Errorf("an uncovered url: %+v", r)
	}
	if r := runMur(t, homeDir, uncovered, nil, "doctor"); r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, "E-CAP-020") {
		t.Errorf("doctor of an uncovered url: %+v", r)
	}
}

// examples/mcp runs offline: the npm filesystem server writes and reads a
// note in the work folder and refuses a file outside it. The example names
// no install_dirs (a global npm install lands under /usr/local); here the
// repository's node_modules is named instead.
func TestMCPExample(t *testing.T) {
	nm := npmServers(t)
	homeDir, proj := t.TempDir(), t.TempDir()
	copyDir(t, filepath.Join(repoRoot(), "examples", "mcp"), proj)
	b, _ := os.ReadFile(filepath.Join(proj, "murmur.yaml"))
	m := strings.Replace(string(b), "      tools: [write_file, read_text_file, list_directory]\n",
		"      tools: [write_file, read_text_file, list_directory]\n      install_dirs: ["+nm+"]\n", 1)
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte(m), 0o644)
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "keep a note")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	if note, err := os.ReadFile(filepath.Join(rd.Workdir, "notes.txt")); err != nil || string(note) != "remember the milk\n" {
		t.Errorf("the note: %q %v", note, err)
	}
	c := toolCalls(traceLines(t, rd.RecordsDir))
	if len(c) != 3 || c[0].Str("status") != "ok" || c[1].Str("status") != "ok" || c[2].Str("status") != "error" ||
		!strings.Contains(c[2].Str("error"), "outside allowed directories") {
		t.Fatalf("calls %v", c)
	}
	show := runMur(t, homeDir, proj, nil, "trace", "show", "@1")
	if !strings.Contains(show.Stdout, "mcp files: 1 start(s), 3 calls, 1 errors, ended session_end") {
		t.Errorf("trace show:\n%s", show.Stdout)
	}
}

// An HTTP server, reached by mur itself: server-everything in its
// Streamable HTTP mode on loopback, called through the loop; the entry's
// header is sent (its name recorded, never its value) and the closing
// DELETE ends the session's server.
func TestMCPHTTPServer(t *testing.T) {
	nm := npmServers(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	srv := exec.Command(filepath.Join(nm, ".bin", "mcp-server-everything"), "streamableHttp")
	srv.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	var serr strings.Builder
	srv.Stderr = &serr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitFor(t, "server-everything to listen", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	homeDir := t.TempDir()
	origin := "http://" + addr
	proj := mcpProject(t, calls(`mcp__web__echo, input: {message: "over http"}`), `  - name: acme/web
    version: "2.0.0"
    runtime: mcp
    mcp:
      url: `+origin+`/mcp
      headers: {X-Api-Key: "${WEB_TOKEN}"}
      tools: [echo]
`, "capabilities:\n  network: {allow: [\""+origin+"\"]}\n")
	r := runMur(t, homeDir, proj, []string{"WEB_TOKEN=tok-must-not-leak"}, "run", "--json", "--task", "go")
	if r.Code != 0 {
		t.Fatalf("run: %+v\nserver: %s", r, serr.String())
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	st := lastOf(lines, trace.TypeMCPServerStart)
	if st == nil || st.Str("transport") != "http" || st.Str("status") != "ok" || !strings.Contains(string(st.Fields["header_names"]), "X-Api-Key") ||
		string(st.Fields["pid"]) != "null" || string(st.Fields["containment"]) != "null" {
		t.Fatalf("start %v", st)
	}
	if c := toolCalls(lines); len(c) != 1 || c[0].Str("status") != "ok" || c[0].Str("server") != "web" {
		t.Fatalf("calls %v", c)
	}
	if e := lastOf(lines, trace.TypeMCPServerEnd); e == nil || e.Str("reason") != "session_end" {
		t.Errorf("end %v", e)
	}
	b, _ := os.ReadFile(filepath.Join(rd.RecordsDir, "trace.jsonl"))
	if strings.Contains(string(b), "tok-must-not-leak") {
		t.Error("the header's value reached the trace")
	}
}

// An entry's own capabilities.containment raises its server's tier above
// the capsule's: the capsule's commands stay advisory, the server is
// sealed and a file outside its grant is refused.
func TestMCPEntryRaisesTier(t *testing.T) {
	dir := mcpbad(t)
	homeDir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside.txt")
	os.WriteFile(outside, []byte("private"), 0o644)
	proj := mcpProject(t, calls(fmt.Sprintf(`mcp__bad__probe, input: {path: %q}`, outside)),
		badEntry(dir, "ok", "probe", "    capabilities:\n      containment: sealed\n"), "capabilities:\n  containment: advisory\n")
	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "go")
	if r.Code != 0 {
		if strings.Contains(r.Stderr, "E-CAP-003") {
			t.Skipf("this host cannot deliver sealed: %s", r.Stderr)
		}
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	st := lastOf(traceLines(t, rd.RecordsDir), trace.TypeMCPServerStart)
	if !strings.Contains(string(st.Fields["containment"]), `"achieved":"sealed"`) {
		t.Errorf("containment %s", st.Fields["containment"])
	}
	if out := probeText(t, rd.RecordsDir); !strings.Contains(out, "refused") {
		t.Errorf("a file outside the grant was readable: %s", out)
	}
}
