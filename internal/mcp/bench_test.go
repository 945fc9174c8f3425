package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/manifest"
)

func TestMain(m *testing.M) {
	contain.MaybeInit() // the containment helper re-execs this binary
	os.Exit(m.Run())
}

var (
	badOnce sync.Once
	badDir  string
	badErr  error
)

// mcpbad builds the test server of internal/e2e/testdata once.
func mcpbad(tb testing.TB) string {
	tb.Helper()
	badOnce.Do(func() {
		if badDir, badErr = os.MkdirTemp("", "mcpbad-"); badErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(badDir, "mcpbad"), "../e2e/testdata/mcpbad")
		cmd.Env = append(os.Environ(), "GOENV=off", "GOFLAGS=", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			badErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if badErr != nil {
		tb.Fatal(badErr)
	}
	return badDir
}

// newServer is a started mcpbad server, contained at the host's best tier
// when contained is set.
func newServer(tb testing.TB, mode string, contained bool) *Server {
	tb.Helper()
	dir := mcpbad(tb)
	work, rec := tb.TempDir(), tb.TempDir()
	a := manifest.Artifact{Name: "local/bad", Version: "1.0.0", Runtime: manifest.Some(manifest.RuntimeMCP),
		MCP: &manifest.MCP{Command: "mcpbad", Args: []string{mode}, Tools: []string{"noop", "fail"}, InstallDirs: []string{dir}}}
	cfg := Config{Entry: a, ClientVersion: "test", RecordsDir: rec, Workdir: work,
		Lookup: func(n string) (string, bool) { return map[string]string{"PATH": "/usr/bin:/bin"}[n], n == "PATH" }}
	if contained {
		cfg.WrapFor = func(bin string) (func(*exec.Cmd) error, error) {
			home := filepath.Join(rec, "mcp", "bad", "home")
			os.MkdirAll(home, 0o700)
			p, err := contain.NewPlan(contain.Input{Class: contain.Probe().Best(), WorkFolder: work, Home: home, InstallDirs: []string{dir}})
			if err != nil {
				return nil, err
			}
			return contain.Wrap(p), nil
		}
	}
	s := New(cfg)
	if err := s.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// A server started, called (a result, an isError result), and stopped,
// with and without containment.
func TestServerCallAndStop(t *testing.T) {
	for _, contained := range []bool{false, true} {
		t.Run(fmt.Sprint("contained=", contained), func(t *testing.T) {
			s := newServer(t, "ok", contained)
			if ts := s.Tools(); len(ts) != 2 || ts[0].ModelName != "mcp__bad__noop" || string(ts[0].Schema) != `{"type":"object"}` {
				t.Fatalf("tools %+v", ts)
			}
			if r := s.Call(context.Background(), "noop", json.RawMessage(`{}`), "c1", ""); r.Err != nil || r.Text != "noop done" || r.Ending != "ok" {
				t.Fatalf("noop %+v", r)
			}
			if r := s.Call(context.Background(), "fail", json.RawMessage(`{}`), "c2", ""); r.Err == nil || !r.IsError || r.Err.Error() != "it failed on purpose" {
				t.Fatalf("fail %+v", r)
			}
			s.Stop()
			if r := s.Call(context.Background(), "noop", json.RawMessage(`{}`), "c3", ""); r.Err == nil {
				t.Fatal("a stopped server answered")
			}
		})
	}
}

// BenchmarkMCPCall is one no-op tools/call through the runtime's client
// (the SDK, the connection's checks, the result mapping), against the same
// call written and read by hand (BenchmarkMCPCallRaw): the server's own
// time.
func BenchmarkMCPCall(b *testing.B) {
	for _, contained := range []bool{false, true} {
		b.Run(fmt.Sprint("contained=", contained), func(b *testing.B) {
			s := newServer(b, "ok", contained)
			args := json.RawMessage(`{}`)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if r := s.Call(context.Background(), "noop", args, "c", ""); r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		})
	}
}

func BenchmarkMCPCallRaw(b *testing.B) {
	cmd := exec.Command(filepath.Join(mcpbad(b), "mcpbad"), "ok")
	in, _ := cmd.StdinPipe()
	outp, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { in.Close(); cmd.Wait() }()
	r := bufio.NewReader(outp)
	send := func(s string) string {
		in.Write([]byte(s + "\n"))
		l, err := r.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"noop","arguments":{}}}`, i+1))
	}
}

// BenchmarkMCPStart is one start of mcpbad through the runtime's client
// (process, probe, handshake, listing) and its stop, uncontained and
// contained at the host's best tier: the server's own start, measured
// alone, for BenchmarkMCPStartToReady's added time.
func BenchmarkMCPStart(b *testing.B) {
	for _, contained := range []bool{false, true} {
		b.Run(fmt.Sprint("contained=", contained), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				s := newServer(b, "ok", contained)
				s.Stop()
			}
		})
	}
}

// A server that exits on every call is started again twice, then given up
// on; each start has its one end.
func TestServerRestarts(t *testing.T) {
	s := newServer(t, "crash", false)
	for i := 0; i < 4; i++ {
		r := s.Call(context.Background(), "noop", json.RawMessage(`{}`), fmt.Sprint("c", i), "")
		if r.Err == nil || r.Ending != "failed" {
			t.Fatalf("call %d: %+v", i, r)
		}
		if i == 3 && !strings.Contains(r.Err.Error(), "not started again") {
			t.Errorf("the last call: %v", r.Err)
		}
	}
	if s.starts != 3 {
		t.Errorf("%d starts, want 3", s.starts)
	}
}

// A call's traceparent reaches the server as params._meta.traceparent
// (mcpbad's meta mode answers with the _meta it received); a call without
// one sends no _meta.
func TestCallSendsTraceparent(t *testing.T) {
	s := newServer(t, "meta", false)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r := s.Call(context.Background(), "noop", json.RawMessage(`{}`), "c1", tp)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	var meta map[string]any
	if err := json.Unmarshal([]byte(r.Text), &meta); err != nil || meta["traceparent"] != tp {
		t.Errorf("the server got _meta %s (%v)", r.Text, err)
	}
	if r := s.Call(context.Background(), "noop", json.RawMessage(`{}`), "c2", ""); r.Err != nil || strings.Contains(r.Text, "traceparent") {
		t.Errorf("a call without a traceparent: %+v", r)
	}
}
