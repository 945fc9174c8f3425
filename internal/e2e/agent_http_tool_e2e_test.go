package e2e_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAgentToolHTTPWithoutFilesystem: the agent loop of the built mur calls
// a tool component that uses wasi:http and imports no wasi:filesystem
// (testdata/components/http-get-c, whose bodies are Go's live streams): its
// GETs to a loopback origin both manifests allow pass and reach the server,
// and a GET to an origin they do not cover is refused before it is sent,
// failing the tool call, with one log line naming the URL and the key.
func TestAgentToolHTTPWithoutFilesystem(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Length", "1024")
		w.Write(make([]byte, 1024))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	homeDir, base := t.TempDir(), t.TempDir()

	publishTool(t, homeDir, filepath.Join(base, "get"), "http-get-c", "name: acme/get\nversion: 1.0.0\nruntime: tool\n"+
		"description: GETs a URL n times.\ncapabilities:\n  network:\n    allow: [\""+u.Host+"\"]\n")

	// The same port on another loopback name: not covered by host:port.
	denied := fmt.Sprintf("http://localhost:%s/bytes/1024", u.Port())
	transcript := fmt.Sprintf(`version: 1
responses:
  - content:
      - {type: tool_call, id: call_ok, name: get, input: {url: "%s/bytes/1024", n: 3}}
  - content:
      - {type: tool_call, id: call_denied, name: get, input: {url: "%s"}}
  - content:
      - {type: text, text: "fetched"}
`, srv.URL, denied)
	proj := filepath.Join(base, "agent")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "transcript.yaml"), []byte(transcript), 0o644)
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte(`name: fetcher
version: 0.1.0
artifacts:
  - name: murmur/driver-replay
    version: 1.0.0
    runtime: driver
    config:
      transcript: transcript.yaml
  - name: acme/get
    version: 1.0.0
inference:
  model: replay
  driver:
    artifact: murmur/driver-replay
capabilities:
  network:
    allow: ["`+u.Host+`"]
`), 0o644)

	r := runMur(t, homeDir, proj, nil, "run", "--json", "--task", "fetch it")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	if want := "session_start task_start inference tool_call inference tool_call inference task_end session_end"; types(lines) != want {
		t.Fatalf("trace:\n%s\nwant:\n%s", types(lines), want)
	}
	ok, refused := lines[3], lines[5]
	if ok.Str("tool_name") != "acme/get" || ok.Str("tool_call_id") != "call_ok" || ok.Str("status") != "ok" || ok.Str("ending") != "ok" {
		t.Errorf("the allowed call's tool_call %v", ok.Fields)
	}
	if refused.Str("tool_call_id") != "call_denied" || refused.Str("status") != "error" ||
		refused.Str("error") != "acme/get answered failed: HTTP-request-denied" {
		t.Errorf("the refused call's tool_call %v", refused.Fields)
	}
	if n := hits.Load(); n != 3 {
		t.Errorf("the server saw %d requests, want 3 (the refused one never sent)", n)
	}
	// An agent's tool logs its refusals in the session's logs/egress.log,
	// not on mur's stderr (issue 24 item 8).
	log, _ := os.ReadFile(filepath.Join(rd.RecordsDir, "logs", "egress.log"))
	if strings.Count(string(log), "wasi:http request denied") != 1 || !strings.Contains(string(log), "tool=acme/get") ||
		!strings.Contains(string(log), "url="+denied) || !strings.Contains(string(log), "capabilities.network.allow") {
		t.Errorf("logs/egress.log %q", log)
	}
	if strings.Contains(r.Stderr, "denied") || strings.Contains(r.Stderr, "egress") {
		t.Errorf("stderr %q: a refusal is logged in the session's records only (a terminal gets one summary line)", r.Stderr)
	}
}
