package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/trace"
)

var handleRE = regexp.MustCompile(`mh1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)

// Two agent sessions hand a file through the binaries: the sharer's model
// calls share-file, the test reads the handle from the tool result its
// model was sent, and the fetcher's model calls fetch-peer-file with it.
// The bytes land identical and read-only in the fetcher's peer-in/, each
// side writes its lines, and no line holds the handle. Once the sharer's
// session has ended, its handle redeems nothing.
func TestPeerFileShareThenFetch(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	fpS := FakeProvider(t, fakeprovider.Anthropic)
	fpF := FakeProvider(t, fakeprovider.Anthropic)
	sharer := FakeModelCapsule(t, homeDir, filepath.Join(base, "sharer"), "sharer", "0.1.0",
		"lifecycle:\n  after_task: sleep\nexports:\n  peer_files:\n    root: share\n", fpS)
	fetcher := FakeModelCapsule(t, homeDir, filepath.Join(base, "fetcher"), "fetcher", "0.1.0",
		"capabilities:\n  peer_fetch:\n    allow: [127.0.0.1]\n", fpF)

	body := bytes.Repeat([]byte("the report\n"), 5000)
	swd := filepath.Join(base, "sharer-wd")
	os.MkdirAll(filepath.Join(swd, "share"), 0o755)
	os.WriteFile(filepath.Join(swd, "share", "report.txt"), body, 0o644)
	fpS.Push(fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{ID: "call_1", Name: "share-file", Pieces: []string{`{"path":"report.txt"}`}}}},
		fakeprovider.Reply{Text: []string{"shared"}})
	cmd, out, stderr := StartMurEnv(t, homeDir, sharer, []string{FakeKey}, "run", "--json", "--workdir", swd, "--task", "share the report")
	rd := ReadReady(t, out)
	door := "http://" + strings.TrimPrefix(strings.TrimSuffix(*rd.URL, "/"), "http://")
	WaitFor(t, "the sharer's second model call", func() bool { return len(fpS.Requests()) >= 2 })
	result := LastMessageText(t, fpS.Requests()[1])
	handle := handleRE.FindString(result)
	if handle == "" {
		t.Fatalf("no handle in the tool result %q; stderr %s", result, stderr)
	}
	sum := sha256.Sum256([]byte(handle))
	shared := struct{ HandleID string }{hex.EncodeToString(sum[:8])}
	if !strings.Contains(result, `"handle_id":"`+shared.HandleID+`"`) || !strings.Contains(result, `"bytes":55000`) {
		t.Errorf("share-file result %q", result)
	}

	in, _ := json.Marshal(map[string]string{"handle": handle})
	fetch := func(wd string) Result {
		fpF.Push(fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{ID: "call_1", Name: "fetch-peer-file", Pieces: []string{string(in)}}}},
			fakeprovider.Reply{Text: []string{"fetched"}})
		return RunMur(t, homeDir, fetcher, []string{FakeKey}, "run", "--workdir", wd, "--task", "fetch it")
	}
	fwd := filepath.Join(base, "fetcher-wd")
	if r := fetch(fwd); r.Code != 0 {
		t.Fatalf("fetcher: %+v", r)
	}
	landed := filepath.Join(fwd, "peer-in", shared.HandleID+"-report.txt")
	b, err := os.ReadFile(landed)
	if err != nil || !bytes.Equal(b, body) {
		t.Fatalf("landed: %v (%d bytes, want %d)", err, len(b), len(body))
	}
	for p, mode := range map[string]os.FileMode{landed: 0o444, filepath.Dir(landed): 0o555} {
		if st, _ := os.Stat(p); st.Mode().Perm() != mode {
			t.Errorf("%s is %v, want %v", p, st.Mode().Perm(), mode)
		}
	}
	flines := TraceLines(t, lastRecords(t, homeDir, fetcher))
	ff := ByType(flines, trace.TypePeerFileFetch)
	if len(ff) != 1 || ff[0].Str("outcome") != "ok" || ff[0].Str("handle_id") != shared.HandleID || ff[0].Str("from") != door {
		t.Fatalf("peer_file_fetch: %d lines, outcome %q handle %q (want %q) from %q (door %q)", len(ff), ff[0].Str("outcome"), ff[0].Str("handle_id"), shared.HandleID, ff[0].Str("from"), door)
	}
	if tc := ByType(flines, trace.TypeToolCall); len(tc) != 1 || tc[0].Str("kind") != "runtime" || tc[0].Str("tool_name") != "fetch-peer-file" {
		t.Fatalf("fetcher tool_call: %v", tc)
	}

	// A tampered handle (its path changed, the MAC kept) is refused by the
	// sharer; a truncated one by the fetcher, before any connection.
	pb, mac, _ := strings.Cut(strings.TrimPrefix(handle, "mh1."), ".")
	js, _ := base64.RawURLEncoding.DecodeString(pb)
	tampered := "mh1." + base64.RawURLEncoding.EncodeToString(bytes.Replace(js, []byte("report.txt"), []byte("secret.txt"), 1)) + "." + mac
	for i, tc := range []struct{ handle, outcome, peerError, reason string }{
		{tampered, "refused", "handle_not_valid", door + " refused the handle: 403 handle_not_valid: this handle was not issued by this session"},
		{handle[:len(handle)-7], "malformed", "", "that is not a peer file handle"},
	} {
		in, _ := json.Marshal(map[string]string{"handle": tc.handle})
		fpF.Push(fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{ID: "call_1", Name: "fetch-peer-file", Pieces: []string{string(in)}}}},
			fakeprovider.Reply{Text: []string{"could not"}})
		wd := filepath.Join(base, "fetcher-bad-"+strconv.Itoa(i))
		if r := RunMur(t, homeDir, fetcher, []string{FakeKey}, "run", "--workdir", wd, "--task", "fetch it"); r.Code != 0 {
			t.Fatalf("fetcher: %+v", r)
		}
		ff := ByType(TraceLines(t, lastRecords(t, homeDir, fetcher)), trace.TypePeerFileFetch)
		if len(ff) != 1 || ff[0].Str("outcome") != tc.outcome || ff[0].Str("peer_error") != tc.peerError || ff[0].Str("reason") != tc.reason {
			t.Fatalf("%s: outcome %q peer_error %q reason %q", tc.outcome, ff[0].Str("outcome"), ff[0].Str("peer_error"), ff[0].Str("reason"))
		}
		if entries, _ := os.ReadDir(filepath.Join(wd, "peer-in")); len(entries) != 0 {
			t.Errorf("a refused fetch left %v", entries)
		}
	}

	// A capsule whose own peer_fetch.allow does not cover the sharer (a
	// delegated child's narrower list is such a list) is refused before any
	// connection, with the sentence naming what to add.
	fpN := FakeProvider(t, fakeprovider.Anthropic)
	narrow := FakeModelCapsule(t, homeDir, filepath.Join(base, "narrow"), "narrow", "0.1.0",
		"capabilities:\n  peer_fetch:\n    allow: [localhost]\n", fpN)
	fpN.Push(fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{ID: "call_1", Name: "fetch-peer-file", Pieces: []string{string(in)}}}},
		fakeprovider.Reply{Text: []string{"not allowed"}})
	if r := RunMur(t, homeDir, narrow, []string{FakeKey}, "run", "--task", "fetch it"); r.Code != 0 {
		t.Fatalf("narrow fetcher: %+v", r)
	}
	nf := ByType(TraceLines(t, lastRecords(t, homeDir, narrow)), trace.TypePeerFileFetch)
	wantReason := door + " is not covered by capabilities.peer_fetch.allow; add 127.0.0.1 (or " + door + ") to redeem handles from that capsule"
	if len(nf) != 1 || nf[0].Str("outcome") != "not_allowed" || nf[0].Str("reason") != wantReason {
		t.Fatalf("narrow fetcher: %v", nf)
	}

	// The sharer ends; its lines are whole, and its handle redeems nothing.
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	slines := TraceLines(t, rd.RecordsDir)
	if td := string(slines[0].Fields["tools_declared"]); !strings.Contains(td, `"share-file"`) || strings.Contains(td, "fetch-peer-file") {
		t.Errorf("the sharer's tools_declared: %s", td)
	}
	mint := ByType(slines, trace.TypePeerHandleMint)
	redeem := ByType(slines, trace.TypePeerHandleRedeem)
	if len(mint) != 1 || mint[0].Str("outcome") != "ok" || mint[0].Str("handle_id") != shared.HandleID || mint[0].Str("path") != "report.txt" {
		t.Fatalf("peer_handle_mint: %v", mint)
	}
	if len(redeem) != 1 || redeem[0].Str("handle_id") != shared.HandleID || redeem[0].Str("path") != "report.txt" {
		t.Fatalf("peer_handle_redeem: %v", redeem)
	}
	for _, dir := range []string{rd.RecordsDir, lastRecords(t, homeDir, fetcher)} {
		tr, _ := os.ReadFile(filepath.Join(dir, "trace.jsonl"))
		if strings.Contains(string(tr), handle) {
			t.Errorf("%s/trace.jsonl holds the handle", dir)
		}
	}
	wd2 := filepath.Join(base, "fetcher-wd2")
	if r := fetch(wd2); r.Code != 0 {
		t.Fatalf("fetcher after the sharer ended: %+v", r)
	}
	ff = ByType(TraceLines(t, lastRecords(t, homeDir, fetcher)), trace.TypePeerFileFetch)
	if len(ff) != 1 || ff[0].Str("outcome") != "unreachable" ||
		!strings.HasPrefix(ff[0].Str("reason"), "the capsule that shared this file cannot be reached at "+door+": ") {
		t.Fatalf("after the sharer ended: %v", ff)
	}
	if entries, _ := os.ReadDir(filepath.Join(wd2, "peer-in")); len(entries) != 0 {
		t.Errorf("a failed fetch left %v", entries)
	}
}
