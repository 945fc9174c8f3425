package e2e

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/trace"
)

// The refusals a fetching model meets, through two mur binaries, each in
// its exact sentence both in the tool result the fetcher's model is sent
// and in the peer_file_fetch line: a handle past its ttl ("1s", then
// waited out) is 410 handle_expired naming the expiry; a shared file
// swapped for a symbolic link out of the work folder after the handle was
// made is 403 symlink_refused; and once the minting session has ended its
// handle reaches nothing (its door and its key end together). share-file
// itself refuses a path that is a symbolic link out, with the same
// sentence. Nothing lands in peer-in/.
func TestPeerFileRefusalsThroughTheBinary(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	fpS := FakeProvider(t, fakeprovider.Anthropic)
	fpF := FakeProvider(t, fakeprovider.Anthropic)
	sharer := FakeModelCapsule(t, homeDir, filepath.Join(base, "sharer"), "sharer", "0.1.0",
		"lifecycle:\n  after_task: sleep\nexports:\n  peer_files:\n    root: share\n", fpS)
	fetcher := FakeModelCapsule(t, homeDir, filepath.Join(base, "fetcher"), "fetcher", "0.1.0",
		"capabilities:\n  peer_fetch:\n    allow: [127.0.0.1]\n", fpF)

	outside := filepath.Join(base, "outside.txt")
	os.WriteFile(outside, []byte("not yours\n"), 0o644)
	swd := filepath.Join(base, "sharer-wd")
	share := filepath.Join(swd, "share")
	os.MkdirAll(share, 0o755)
	os.WriteFile(filepath.Join(share, "brief.txt"), []byte("short-lived\n"), 0o644)
	os.WriteFile(filepath.Join(share, "swap.txt"), []byte("swapped later\n"), 0o644)
	if err := os.Symlink(outside, filepath.Join(share, "link.txt")); err != nil {
		t.Fatal(err)
	}
	fpS.Push(fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{
		{ID: "call_1", Name: "share-file", Pieces: []string{`{"path":"brief.txt","ttl":"1s"}`}},
		{ID: "call_2", Name: "share-file", Pieces: []string{`{"path":"swap.txt"}`}},
		{ID: "call_3", Name: "share-file", Pieces: []string{`{"path":"link.txt"}`}},
	}}, fakeprovider.Reply{Text: []string{"shared"}})
	cmd, out, stderr := StartMurEnv(t, homeDir, sharer, []string{FakeKey}, "run", "--json", "--workdir", swd, "--task", "share them")
	defer cmd.Process.Kill()
	rd := ReadReady(t, out)
	door := "http://" + strings.TrimPrefix(strings.TrimSuffix(*rd.URL, "/"), "http://")
	WaitFor(t, "the sharer's second model call", func() bool { return len(fpS.Requests()) >= 2 })
	result := LastMessageText(t, fpS.Requests()[1])

	// The handles by the path they name, with their expiry.
	type minted struct {
		handle string
		exp    int64
	}
	handles := map[string]minted{}
	for _, h := range handleRE.FindAllString(result, -1) {
		pb, _, _ := strings.Cut(strings.TrimPrefix(h, "mh1."), ".")
		js, err := base64.RawURLEncoding.DecodeString(pb)
		var p struct {
			P   string `json:"p"`
			Exp int64  `json:"exp"`
		}
		if err != nil || json.Unmarshal(js, &p) != nil {
			t.Fatalf("handle payload %q: %v", js, err)
		}
		handles[p.P] = minted{h, p.Exp}
	}
	if len(handles) != 2 || handles["brief.txt"].handle == "" || handles["swap.txt"].handle == "" {
		t.Fatalf("share-file results %q; stderr %s", result, stderr)
	}
	if !strings.Contains(result, "link.txt passes through a symbolic link, which is never followed") {
		t.Errorf("share-file of a link out: the model was sent %q", result)
	}

	// After the handle was made, swap.txt becomes a link out of the work folder.
	os.Remove(filepath.Join(share, "swap.txt"))
	if err := os.Symlink(outside, filepath.Join(share, "swap.txt")); err != nil {
		t.Fatal(err)
	}
	// brief.txt's handle lives 1 s: wait it out.
	time.Sleep(time.Until(time.UnixMilli(handles["brief.txt"].exp)) + 200*time.Millisecond)

	// fetch runs the fetcher once, its model calling fetch-peer-file with each
	// handle in turn, and checks each refusal's sentence where the model and
	// the trace see it.
	fetch := func(wd string, want ...[3]string) { // {handle, outcome, reason}
		t.Helper()
		var calls []fakeprovider.ToolCall
		for i, w := range want {
			in, _ := json.Marshal(map[string]string{"handle": w[0]})
			calls = append(calls, fakeprovider.ToolCall{ID: "call_" + string(rune('a'+i)), Name: "fetch-peer-file", Pieces: []string{string(in)}})
		}
		before := len(fpF.Requests())
		fpF.Push(fakeprovider.Reply{ToolCalls: calls}, fakeprovider.Reply{Text: []string{"could not"}})
		if r := RunMur(t, homeDir, fetcher, []string{FakeKey}, "run", "--workdir", wd, "--task", "fetch them"); r.Code != 0 {
			t.Fatalf("fetcher: %+v", r)
		}
		seen := LastMessageText(t, fpF.Requests()[before+1])
		ff := ByType(TraceLines(t, lastRecords(t, homeDir, fetcher)), trace.TypePeerFileFetch)
		if len(ff) != len(want) {
			t.Fatalf("%d peer_file_fetch lines, want %d", len(ff), len(want))
		}
		for i, w := range want {
			if !strings.Contains(seen, w[2]) {
				t.Errorf("the fetcher's model was not sent %q; it was sent %q", w[2], seen)
			}
			if ff[i].Str("outcome") != w[1] || ff[i].Str("reason") != w[2] || ff[i].Str("from") != door {
				t.Errorf("peer_file_fetch %d: outcome %q reason %q from %q; want %q %q", i, ff[i].Str("outcome"), ff[i].Str("reason"), ff[i].Str("from"), w[1], w[2])
			}
			if string(ff[i].Fields["path"]) != "null" {
				t.Errorf("peer_file_fetch %d: path %s, want null", i, ff[i].Fields["path"])
			}
		}
		if entries, _ := os.ReadDir(filepath.Join(wd, "peer-in")); len(entries) != 0 {
			t.Errorf("a refused fetch left %v", entries)
		}
	}
	expiredAt := time.UnixMilli(handles["brief.txt"].exp).UTC().Format(time.RFC3339)
	fetch(filepath.Join(base, "fetcher-wd1"),
		[3]string{handles["brief.txt"].handle, "refused", door + " refused the handle: 410 handle_expired: this handle expired at " + expiredAt},
		[3]string{handles["swap.txt"].handle, "refused", door + " refused the handle: 403 symlink_refused: swap.txt passes through a symbolic link, which is never followed"},
	)

	// The sharer ends: its lines say what it refused, and its handles reach nothing.
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	slines := TraceLines(t, rd.RecordsDir)
	mint := ByType(slines, trace.TypePeerHandleMint)
	if len(mint) != 3 || mint[2].Str("outcome") != "symlink_refused" || string(mint[2].Fields["handle_id"]) != "null" {
		t.Errorf("peer_handle_mint lines: %v", mint)
	}
	redeem := ByType(slines, trace.TypePeerHandleRedeem)
	errs := map[string]bool{}
	for _, l := range redeem {
		errs[l.Str("error")] = true
	}
	if len(redeem) != 2 || !errs["handle_expired"] || !errs["symlink_refused"] {
		t.Errorf("peer_handle_redeem lines: %v", redeem)
	}
	fetch(filepath.Join(base, "fetcher-wd2"),
		[3]string{handles["swap.txt"].handle, "unreachable", "the capsule that shared this file cannot be reached at " + door + ": connection refused"},
	)
}

// The shared path itself refused, through two mur binaries, at both ends:
// share-file refuses a FIFO, a directory and a file past
// exports.peer_files.max_bytes with the door's sentence (its
// peer_handle_mint line says the word, handle_id null); and a file that was
// regular and small when shared but became a FIFO, a directory or a file
// past max_bytes before the fetch is refused at redeem (403
// not_a_regular_file, 413 too_large), in the sentence the fetching model is
// sent and in both sides' trace lines. Nothing lands in peer-in/. "Past" is
// checked twice: a sparse 2 GiB file against the default 10 MiB, and one
// byte over a manifest's small max_bytes.
func TestPeerFileRefusalsOfTheSharedFile(t *testing.T) {
	for _, tc := range []struct {
		name     string
		exports  string // extra lines under exports.peer_files
		maxBytes int64
		big      int64 // the size of the file past max_bytes
	}{
		{"sparse 2 GiB past the default", "", 10 << 20, 2 << 30},
		{"one byte past a small max_bytes", "    max_bytes: 1000\n", 1000, 1001},
	} {
		t.Run(tc.name, func(t *testing.T) { peerFileRefusalsOfTheSharedFile(t, tc.exports, tc.maxBytes, tc.big) })
	}
}

func peerFileRefusalsOfTheSharedFile(t *testing.T, exports string, maxBytes, big int64) {
	homeDir, base := t.TempDir(), t.TempDir()
	fpS := FakeProvider(t, fakeprovider.Anthropic)
	fpF := FakeProvider(t, fakeprovider.Anthropic)
	sharer := FakeModelCapsule(t, homeDir, filepath.Join(base, "sharer"), "sharer", "0.1.0",
		"lifecycle:\n  after_task: sleep\nexports:\n  peer_files:\n    root: share\n"+exports, fpS)
	fetcher := FakeModelCapsule(t, homeDir, filepath.Join(base, "fetcher"), "fetcher", "0.1.0",
		"capabilities:\n  peer_fetch:\n    allow: [127.0.0.1]\n", fpF)

	swd := filepath.Join(base, "sharer-wd")
	share := filepath.Join(swd, "share")
	os.MkdirAll(share, 0o755)
	mkfifo := func(p string) {
		t.Helper()
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mksparse := func(p string) {
		t.Helper()
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, big); err != nil {
			t.Fatal(err)
		}
	}
	// Refused at sharing time.
	mkfifo(filepath.Join(share, "pipe"))
	os.Mkdir(filepath.Join(share, "dir"), 0o755)
	mksparse(filepath.Join(share, "huge.bin"))
	// Exactly max_bytes is still shared: the limit is "at most".
	if err := os.WriteFile(filepath.Join(share, "exact.bin"), nil, 0o644); err != nil || os.Truncate(filepath.Join(share, "exact.bin"), maxBytes) != nil {
		t.Fatal("exact.bin", err)
	}
	// Regular and small when shared, replaced before the fetch.
	for _, n := range []string{"later-pipe", "later-dir", "later-huge.bin"} {
		os.WriteFile(filepath.Join(share, n), []byte("small for now\n"), 0o644)
	}
	fpS.Push(fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{
		{ID: "call_1", Name: "share-file", Pieces: []string{`{"path":"pipe"}`}},
		{ID: "call_2", Name: "share-file", Pieces: []string{`{"path":"dir"}`}},
		{ID: "call_3", Name: "share-file", Pieces: []string{`{"path":"huge.bin"}`}},
		{ID: "call_4", Name: "share-file", Pieces: []string{`{"path":"later-pipe"}`}},
		{ID: "call_5", Name: "share-file", Pieces: []string{`{"path":"later-dir"}`}},
		{ID: "call_6", Name: "share-file", Pieces: []string{`{"path":"later-huge.bin"}`}},
		{ID: "call_7", Name: "share-file", Pieces: []string{`{"path":"exact.bin"}`}},
	}}, fakeprovider.Reply{Text: []string{"shared"}})
	cmd, out, stderr := StartMurEnv(t, homeDir, sharer, []string{FakeKey}, "run", "--json", "--workdir", swd, "--task", "share them")
	defer cmd.Process.Kill()
	rd := ReadReady(t, out)
	door := "http://" + strings.TrimPrefix(strings.TrimSuffix(*rd.URL, "/"), "http://")
	WaitFor(t, "the sharer's second model call", func() bool { return len(fpS.Requests()) >= 2 })
	result := LastMessageText(t, fpS.Requests()[1])

	hugeSentence := func(p string) string {
		return p + " holds " + strconv.FormatInt(big, 10) + " bytes, past exports.peer_files.max_bytes (" + strconv.FormatInt(maxBytes, 10) + ")"
	}
	for _, s := range []string{"pipe is not a regular file", "dir is not a regular file", hugeSentence("huge.bin")} {
		if !strings.Contains(result, s) {
			t.Errorf("share-file: the model was not sent %q; it was sent %q", s, result)
		}
	}
	handles := map[string]string{} // by the path they name
	for _, h := range handleRE.FindAllString(result, -1) {
		pb, _, _ := strings.Cut(strings.TrimPrefix(h, "mh1."), ".")
		js, err := base64.RawURLEncoding.DecodeString(pb)
		var p struct {
			P string `json:"p"`
		}
		if err != nil || json.Unmarshal(js, &p) != nil {
			t.Fatalf("handle payload %q: %v", js, err)
		}
		handles[p.P] = h
	}
	if len(handles) != 4 || handles["exact.bin"] == "" || handles["later-pipe"] == "" || handles["later-dir"] == "" || handles["later-huge.bin"] == "" {
		t.Fatalf("share-file results %q; stderr %s", result, stderr)
	}

	// Between share and fetch each file becomes what share-file would refuse.
	for _, n := range []string{"later-pipe", "later-dir", "later-huge.bin"} {
		if err := os.Remove(filepath.Join(share, n)); err != nil {
			t.Fatal(err)
		}
	}
	mkfifo(filepath.Join(share, "later-pipe"))
	os.Mkdir(filepath.Join(share, "later-dir"), 0o755)
	mksparse(filepath.Join(share, "later-huge.bin"))

	want := []struct{ path, status, word, message string }{
		{"later-pipe", "403", "not_a_regular_file", "later-pipe is not a regular file"},
		{"later-dir", "403", "not_a_regular_file", "later-dir is not a regular file"},
		{"later-huge.bin", "413", "too_large", hugeSentence("later-huge.bin")},
	}
	var calls []fakeprovider.ToolCall
	for i, w := range want {
		in, _ := json.Marshal(map[string]string{"handle": handles[w.path]})
		calls = append(calls, fakeprovider.ToolCall{ID: "call_" + string(rune('a'+i)), Name: "fetch-peer-file", Pieces: []string{string(in)}})
	}
	fpF.Push(fakeprovider.Reply{ToolCalls: calls}, fakeprovider.Reply{Text: []string{"could not"}})
	fwd := filepath.Join(base, "fetcher-wd")
	if r := RunMur(t, homeDir, fetcher, []string{FakeKey}, "run", "--workdir", fwd, "--task", "fetch them"); r.Code != 0 {
		t.Fatalf("fetcher: %+v", r)
	}
	seen := LastMessageText(t, fpF.Requests()[1])
	ff := ByType(TraceLines(t, lastRecords(t, homeDir, fetcher)), trace.TypePeerFileFetch)
	if len(ff) != len(want) {
		t.Fatalf("%d peer_file_fetch lines, want %d", len(ff), len(want))
	}
	for i, w := range want {
		reason := door + " refused the handle: " + w.status + " " + w.word + ": " + w.message
		if !strings.Contains(seen, reason) {
			t.Errorf("the fetcher's model was not sent %q; it was sent %q", reason, seen)
		}
		l := ff[i]
		if l.Str("outcome") != "refused" || l.Str("peer_error") != w.word || l.Str("reason") != reason || l.Str("from") != door {
			t.Errorf("peer_file_fetch %d: outcome %q peer_error %q reason %q from %q; want refused %q %q %q",
				i, l.Str("outcome"), l.Str("peer_error"), l.Str("reason"), l.Str("from"), w.word, reason, door)
		}
		if string(l.Fields["path"]) != "null" {
			t.Errorf("peer_file_fetch %d: path %s, want null", i, l.Fields["path"])
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(fwd, "peer-in")); len(entries) != 0 {
		t.Errorf("a refused fetch left %v", entries)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	slines := TraceLines(t, rd.RecordsDir)
	mint := ByType(slines, trace.TypePeerHandleMint)
	wantMint := []struct{ path, outcome string }{
		{"pipe", "not_a_regular_file"}, {"dir", "not_a_regular_file"}, {"huge.bin", "too_large"},
		{"later-pipe", "ok"}, {"later-dir", "ok"}, {"later-huge.bin", "ok"}, {"exact.bin", "ok"},
	}
	if len(mint) != len(wantMint) {
		t.Fatalf("%d peer_handle_mint lines, want %d: %v", len(mint), len(wantMint), mint)
	}
	for i, w := range wantMint {
		l := mint[i]
		refused := w.outcome != "ok"
		if l.Str("path") != w.path || l.Str("outcome") != w.outcome || (string(l.Fields["handle_id"]) == "null") != refused {
			t.Errorf("peer_handle_mint %d: path %q outcome %q handle_id %s; want %q %q", i, l.Str("path"), l.Str("outcome"), l.Fields["handle_id"], w.path, w.outcome)
		}
	}
	redeem := ByType(slines, trace.TypePeerHandleRedeem)
	if len(redeem) != len(want) {
		t.Fatalf("%d peer_handle_redeem lines, want %d: %v", len(redeem), len(want), redeem)
	}
	byPath := map[string]trace.Line{}
	for _, l := range redeem {
		byPath[l.Str("path")] = l
	}
	for _, w := range want {
		l, ok := byPath[w.path]
		if !ok {
			t.Errorf("no peer_handle_redeem line for %s: %v", w.path, redeem)
			continue
		}
		if string(l.Fields["status"]) != w.status || l.Str("error") != w.word || l.Str("sha256") != "" || string(l.Fields["bytes"]) != "0" ||
			l.Str("handle_id") == "" || !strings.HasPrefix(l.Str("remote"), "127.0.0.1:") {
			t.Errorf("peer_handle_redeem for %s: status %s error %s bytes %s sha256 %s handle_id %s remote %s; want status %s error %q, no bytes served and no digest",
				w.path, l.Fields["status"], l.Fields["error"], l.Fields["bytes"], l.Fields["sha256"], l.Fields["handle_id"], l.Fields["remote"], w.status, w.word)
		}
	}
}
