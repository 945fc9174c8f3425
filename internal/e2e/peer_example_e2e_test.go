package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/trace"
)

// exampleOnFakeProvider copies examples/peer-handoff/<name>/murmur.yaml into
// dir as shipped except its one gateway endpoint, which points at fp: the
// manifest takes only a literal URL there and the driver never reads host
// ANTHROPIC_* variables, so this line is the one way to point it at a local
// provider. The key stays ${ANTHROPIC_API_KEY}, given in the run's env.
func exampleOnFakeProvider(t *testing.T, homeDir, name, dir string, fp *fakeprovider.Server) string {
	t.Helper()
	m, err := os.ReadFile(filepath.Join(RepoRoot(), "examples", "peer-handoff", name, "murmur.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const shipped = "endpoint: https://api.anthropic.com\n"
	if n := bytes.Count(m, []byte(shipped)); n != 1 {
		t.Fatalf("examples/peer-handoff/%s/murmur.yaml has %d lines %q, want 1", name, n, shipped)
	}
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "murmur.yaml"), bytes.Replace(m, []byte(shipped), []byte("endpoint: "+fp.URL+"\n"), 1), 0o644)
	PublishDir(t, homeDir, dir)
	return dir
}

// TestPeerHandoffExample runs examples/peer-handoff as its README says, from
// the example's own manifests: the writer's model calls share-file on
// report.md and answers with the handle it was given; the reader is given
// that answer in its task and its model calls fetch-peer-file with it. The
// bytes land identical and read-only in the reader's peer-in/, and the three
// trace lines are written (mint and redeem by the writer, fetch by the reader).
func TestPeerHandoffExample(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	fpW := FakeProvider(t, fakeprovider.Anthropic)
	fpR := FakeProvider(t, fakeprovider.Anthropic)
	writer := exampleOnFakeProvider(t, homeDir, "writer", filepath.Join(base, "writer"), fpW)
	reader := exampleOnFakeProvider(t, homeDir, "reader", filepath.Join(base, "reader"), fpR)
	key := []string{"ANTHROPIC_API_KEY=test-key"}

	// mkdir -p /tmp/writer-wd/share && echo "# Report" > /tmp/writer-wd/share/report.md
	body := []byte("# Report\n")
	wwd := filepath.Join(base, "writer-wd")
	os.MkdirAll(filepath.Join(wwd, "share"), 0o755)
	os.WriteFile(filepath.Join(wwd, "share", "report.md"), body, 0o644)

	// The writer's model shares report.md, then answers with the handle
	// found in the tool result it was sent, as the README's task asks.
	fpW.Push(fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{ID: "call_1", Name: "share-file", Pieces: []string{`{"path":"report.md"}`}}}},
		fakeprovider.Reply{TextOf: func(r fakeprovider.Request) []string {
			return []string{handleRE.FindString(lastText(r))}
		}})
	cmd, out, stderr := StartMurEnv(t, homeDir, writer, key, "run", "--json", "--workdir", wwd,
		"--task", "Share share/report.md with share-file (path report.md) and answer with the handle only.")
	rd := ReadReady(t, out)
	door := "http://" + strings.TrimPrefix(strings.TrimSuffix(*rd.URL, "/"), "http://")
	answer := filepath.Join(rd.RecordsDir, "out", "result.txt")
	var handle string
	WaitFor(t, "the writer's answer", func() bool {
		b, _ := os.ReadFile(answer)
		handle = string(b)
		return handle != ""
	})
	if !handleRE.MatchString(handle) || handleRE.FindString(handle) != handle {
		t.Fatalf("the writer answered %q, not a handle alone; stderr %s", handle, stderr)
	}

	// The reader is given the writer's answer in its task; its model calls
	// fetch-peer-file with the handle it finds there, then summarises.
	task := "Fetch this file with fetch-peer-file and summarise it: " + handle
	in, _ := json.Marshal(map[string]string{"handle": handle})
	fpR.Push(fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{ID: "call_1", Name: "fetch-peer-file", Pieces: []string{string(in)}}}},
		fakeprovider.Reply{Text: []string{"A one-line report."}})
	rwd := filepath.Join(base, "reader-wd")
	if r := RunMur(t, homeDir, reader, key, "run", "--workdir", rwd, "--task", task); r.Code != 0 {
		t.Fatalf("reader: %+v", r)
	}
	if sent := LastMessageText(t, fpR.Requests()[0]); !strings.Contains(sent, task) {
		t.Errorf("the reader's model was sent %q, not its task", sent)
	}
	got := LastMessageText(t, fpR.Requests()[1])
	sum := sha256.Sum256([]byte(handle))
	landed := struct{ Path, HandleID string }{HandleID: hex.EncodeToString(sum[:8])}
	if i := strings.Index(got, "{"); i < 0 || json.Unmarshal([]byte(got[i:strings.LastIndex(got, "}")+1]), &landed) != nil ||
		landed.Path != "peer-in/"+landed.HandleID+"-report.md" {
		t.Fatalf("fetch-peer-file result %q, want its path peer-in/%s-report.md", got, landed.HandleID)
	}
	file := filepath.Join(rwd, filepath.FromSlash(landed.Path))
	if b, err := os.ReadFile(file); err != nil || !bytes.Equal(b, body) {
		t.Fatalf("landed %s: %v %q", file, err, b)
	}
	for p, mode := range map[string]os.FileMode{file: 0o444, filepath.Dir(file): 0o555} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: %v, want mode %v", p, err, mode)
		}
	}
	ff := ByType(TraceLines(t, lastRecords(t, homeDir, reader)), trace.TypePeerFileFetch)
	if len(ff) != 1 || ff[0].Str("outcome") != "ok" || ff[0].Str("handle_id") != landed.HandleID || ff[0].Str("from") != door {
		t.Fatalf("reader's peer_file_fetch: %v", ff)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	wl := TraceLines(t, rd.RecordsDir)
	mint, redeem := ByType(wl, trace.TypePeerHandleMint), ByType(wl, trace.TypePeerHandleRedeem)
	if len(mint) != 1 || mint[0].Str("outcome") != "ok" || mint[0].Str("handle_id") != landed.HandleID || mint[0].Str("path") != "report.md" {
		t.Fatalf("writer's peer_handle_mint: %v", mint)
	}
	if len(redeem) != 1 || redeem[0].Str("handle_id") != landed.HandleID || redeem[0].Str("path") != "report.md" {
		t.Fatalf("writer's peer_handle_redeem: %v", redeem)
	}
}

// lastText is the JSON of a request's last message (a handle needs no
// escaping in JSON); TextOf runs in the fake provider's handler, without a
// *testing.T.
func lastText(r fakeprovider.Request) string {
	msgs, _ := r.JSON()["messages"].([]any)
	if len(msgs) == 0 {
		return ""
	}
	b, _ := json.Marshal(msgs[len(msgs)-1])
	return string(b)
}
