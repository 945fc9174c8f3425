package peerfile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/trace"
)

// sharer is a real loopback server answering the peer route of a plane
// over a work folder with share/ as its root.
type sharer struct {
	pl      *Plane
	workdir string
	mu      sync.Mutex
	redeems []trace.PeerHandleRedeem
}

func newSharer(t testing.TB, maxBytes int64) *sharer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wd := t.TempDir()
	os.MkdirAll(filepath.Join(wd, "share", "sub"), 0o755)
	pl, err := NewPlane("ses_a", "http://"+ln.Addr().String(), wd, manifest.PeerFilesGrant{Root: "share", MaxTTLS: 900, MaxBytes: maxBytes})
	if err != nil {
		t.Fatal(err)
	}
	s := &sharer{pl: pl, workdir: wd}
	pl.OnRedeem = func(l trace.PeerHandleRedeem) { s.mu.Lock(); s.redeems = append(s.redeems, l); s.mu.Unlock() }
	mux := http.NewServeMux()
	mux.Handle("/resources/peer/", Handler(pl))
	mux.Handle("/resources/peer", Handler(pl))
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *sharer) write(t *testing.T, rel string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(s.workdir, "share", rel), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func newFetcher(t testing.TB, allow ...string) *Fetcher {
	return &Fetcher{Workdir: t.TempDir(), Allow: allow, MaxBody: 64 << 20, WorkdirMax: 1 << 30,
		Client: doorapi.NewClient("", &http.Client{Transport: &http.Transport{}})}
}

func TestShareThenFetch(t *testing.T) {
	s := newSharer(t, 1<<20)
	body := bytes.Repeat([]byte("peer file\n"), 1000)
	s.write(t, "sub/report .txt", body)
	sh, ref := s.pl.Share("sub/report .txt", "")
	if ref != nil {
		t.Fatal(ref)
	}
	if !strings.HasPrefix(sh.Handle, "mh1.") || sh.HandleID != ID(sh.Handle) || sh.Bytes != int64(len(body)) {
		t.Fatalf("shared %+v", sh)
	}
	if d := time.Until(time.UnixMilli(sh.ExpiresAtMS)); d < 14*time.Minute || d > 15*time.Minute {
		t.Errorf("expires in %v, want max_ttl 15m", d)
	}
	f := newFetcher(t, "127.0.0.1")
	got, id, from, ferr := f.Fetch(context.Background(), sh.Handle)
	if ferr != nil {
		t.Fatal(ferr)
	}
	wantName := "peer-in/" + sh.HandleID + "-report_.txt"
	sum := sha256.Sum256(body)
	if got.Path != wantName || got.Bytes != int64(len(body)) || got.SHA256 != hex.EncodeToString(sum[:]) || id != sh.HandleID || from != s.pl.URL {
		t.Fatalf("fetched %+v %s %s", got, id, from)
	}
	b, err := os.ReadFile(filepath.Join(f.Workdir, got.Path))
	if err != nil || !bytes.Equal(b, body) {
		t.Fatalf("landed bytes differ: %v", err)
	}
	for p, mode := range map[string]os.FileMode{got.Path: 0o444, "peer-in": 0o555} {
		if st, _ := os.Stat(filepath.Join(f.Workdir, p)); st.Mode().Perm() != mode {
			t.Errorf("%s is %v, want %v", p, st.Mode().Perm(), mode)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(f.Workdir, "peer-in"))
	if len(entries) != 1 {
		t.Errorf("peer-in holds %v", entries)
	}
	// Redeemable again until expiry; each redeem is a line, with no handle.
	if _, _, _, ferr := f.Fetch(context.Background(), sh.Handle); ferr != nil {
		t.Fatal(ferr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.redeems) != 2 || s.redeems[0].Status != 200 || s.redeems[0].HandleID != sh.HandleID || s.redeems[0].Bytes != int64(len(body)) {
		t.Fatalf("redeem lines %+v", s.redeems)
	}
	js, _ := json.Marshal(s.redeems)
	if strings.Contains(string(js), sh.Handle) {
		t.Error("a redeem line holds the handle")
	}
}

// Each refusal, in the order of the checks, with its exact status, word and
// sentence; fetch-peer-file reports it and writes nothing.
func TestRedeemRefusals(t *testing.T) {
	s := newSharer(t, 1000)
	s.write(t, "ok.txt", []byte("fine"))
	good, ref := s.pl.Share("ok.txt", "")
	if ref != nil {
		t.Fatal(ref)
	}
	// Another session's plane: its handles are forgeries here.
	other, _ := NewPlane("ses_a", s.pl.URL, s.workdir, s.pl.Grant)
	forged, _ := other.Share("ok.txt", "")
	pb, mb, _ := strings.Cut(strings.TrimPrefix(good.Handle, Prefix), ".")
	js, _ := b64.DecodeString(pb)
	tampered := Prefix + b64.EncodeToString(bytes.Replace(js, []byte("ok.txt"), []byte("ok.txx"), 1)) + "." + mb
	past, _ := Mint(s.pl.key, Payload{V: 1, S: "ses_a", U: s.pl.URL, P: "ok.txt", Exp: 1_700_000_000_000, N: "00"})

	os.Symlink("/etc", filepath.Join(s.workdir, "share", "out"))
	os.Symlink("/etc/passwd", filepath.Join(s.workdir, "share", "passwd"))
	syscall.Mkfifo(filepath.Join(s.workdir, "share", "fifo"), 0o644)
	os.Mkdir(filepath.Join(s.workdir, "share", "dir"), 0o755)
	big, _ := os.Create(filepath.Join(s.workdir, "share", "big"))
	big.Truncate(2 << 30) // sparse: 2 GiB past max_bytes, no data written
	big.Close()
	mint := func(p string) string {
		h, err := Mint(s.pl.key, Payload{V: 1, S: "ses_a", U: s.pl.URL, P: p, Exp: time.Now().Add(time.Minute).UnixMilli(), N: "01"})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	cases := []struct {
		name, handle string
		status       int
		word, msg    string
	}{
		{"forged", forged.Handle, 403, "handle_not_valid", "this handle was not issued by this session"},
		{"tampered", tampered, 403, "handle_not_valid", "this handle was not issued by this session"},
		{"truncated", good.Handle[:len(good.Handle)-5], 400, "malformed_handle", "this is not a peer file handle"},
		{"no mac", strings.SplitN(good.Handle, ".", 3)[0] + "." + pb, 400, "malformed_handle", "this is not a peer file handle"},
		{"expired", past, 410, "handle_expired", "this handle expired at 2023-11-14T22:13:20Z"},
		{"symlink out", mint("out/passwd"), 403, "symlink_refused", "out/passwd passes through a symbolic link, which is never followed"},
		{"symlink file", mint("passwd"), 403, "symlink_refused", "passwd passes through a symbolic link, which is never followed"},
		{"fifo", mint("fifo"), 403, "not_a_regular_file", "fifo is not a regular file"},
		{"directory", mint("dir"), 403, "not_a_regular_file", "dir is not a regular file"},
		{"too large", mint("big"), 413, "too_large", "big holds 2147483648 bytes, past exports.peer_files.max_bytes (1000)"},
		{"missing", mint("gone.txt"), 404, "not_found", "gone.txt does not exist"},
	}
	f := newFetcher(t, "127.0.0.1")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, ferr := f.Fetch(context.Background(), tc.handle)
			if tc.word == "malformed_handle" {
				// The fetcher refuses the shape itself, before any connection.
				if ferr == nil || ferr.Outcome != "malformed" || ferr.Message != "that is not a peer file handle" {
					t.Fatalf("fetch: %+v", ferr)
				}
				status, word, msg := get(t, s.pl.URL+doorapi.PeerPath+tc.handle)
				if status != tc.status || word != tc.word || msg != tc.msg {
					t.Fatalf("GET: %d %s %q", status, word, msg)
				}
				return
			}
			want := s.pl.URL + " refused the handle: " + itoa(tc.status) + " " + tc.word + ": " + tc.msg
			if ferr == nil || ferr.Outcome != "refused" || ferr.PeerError != tc.word || ferr.Message != want {
				t.Fatalf("got %+v, want %q", ferr, want)
			}
		})
	}
	if entries, _ := os.ReadDir(filepath.Join(f.Workdir, "peer-in")); len(entries) != 0 {
		t.Errorf("a refused fetch left %v", entries)
	}
	// share-file refuses the same way, before any handle exists.
	for p, want := range map[string]string{"fifo": "fifo is not a regular file", "big": "past exports.peer_files.max_bytes", "../x": "cannot be shared", "/etc/passwd": "absolute", "a//b": "empty"} {
		if _, ref := s.pl.Share(p, ""); ref == nil || !strings.Contains(ref.Message, want) {
			t.Errorf("share %q: %v", p, ref)
		}
	}
	// POST, and the bare route.
	resp, err := http.Post(s.pl.URL+doorapi.PeerPath+good.Handle, "text/plain", nil)
	if err != nil || resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET" {
		t.Fatalf("POST: %v %v", resp, err)
	}
	resp.Body.Close()
	for _, p := range []string{"/resources/peer", "/resources/peer/"} {
		if status, word, _ := get(t, s.pl.URL+p); status != 404 || word != "not_found" {
			t.Errorf("GET %s: %d %s", p, status, word)
		}
	}
	// Only requests past the MAC check are recorded.
	s.mu.Lock()
	for _, l := range s.redeems {
		if l.Status == 403 && *l.Error == "handle_not_valid" {
			t.Errorf("an invalid handle was recorded: %+v", l)
		}
	}
	s.mu.Unlock()
	// The minting session ended: its key is gone, every handle with it.
	s.pl.Close()
	if _, _, _, ferr := f.Fetch(context.Background(), good.Handle); ferr == nil || ferr.PeerError != "handle_not_valid" {
		t.Fatalf("after the session ended: %+v", ferr)
	}
}

// A file replaced between share and fetch: the redeem serves the bytes the
// path holds then, and a path swapped for a link is refused.
func TestFileReplacedBetweenShareAndFetch(t *testing.T) {
	s := newSharer(t, 1<<20)
	s.write(t, "r.txt", []byte("first"))
	sh, _ := s.pl.Share("r.txt", "")
	s.write(t, "r.txt", []byte("second version"))
	f := newFetcher(t, "127.0.0.1")
	got, _, _, ferr := f.Fetch(context.Background(), sh.Handle)
	if ferr != nil {
		t.Fatal(ferr)
	}
	if b, _ := os.ReadFile(filepath.Join(f.Workdir, got.Path)); string(b) != "second version" {
		t.Fatalf("served %q", b)
	}
	os.Remove(filepath.Join(s.workdir, "share", "r.txt"))
	os.Symlink("/etc/passwd", filepath.Join(s.workdir, "share", "r.txt"))
	if _, _, _, ferr := f.Fetch(context.Background(), sh.Handle); ferr == nil || ferr.PeerError != "symlink_refused" {
		t.Fatalf("a path swapped for a link: %+v", ferr)
	}
	// The root itself swapped for a link out of the work folder.
	os.Rename(filepath.Join(s.workdir, "share"), filepath.Join(s.workdir, "share.old"))
	os.Symlink(t.TempDir(), filepath.Join(s.workdir, "share"))
	if _, _, _, ferr := f.Fetch(context.Background(), sh.Handle); ferr == nil || ferr.PeerError != "outside_root" {
		t.Fatalf("a root leading out: %+v", ferr)
	}
}

// peer_fetch.allow is checked before any connection: an uncovered sharer
// is refused with the sentence naming what to add.
func TestFetchOutsideAllow(t *testing.T) {
	s := newSharer(t, 100)
	s.write(t, "a", []byte("a"))
	sh, _ := s.pl.Share("a", "")
	f := newFetcher(t, "example.com", "https://127.0.0.1")
	_, _, _, ferr := f.Fetch(context.Background(), sh.Handle)
	want := s.pl.URL + " is not covered by capabilities.peer_fetch.allow; add 127.0.0.1 (or " + s.pl.URL + ") to redeem handles from that capsule"
	if ferr == nil || ferr.Outcome != "not_allowed" || ferr.Message != want {
		t.Fatalf("got %+v", ferr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.redeems) != 0 {
		t.Error("the sharer was reached")
	}
}

func TestLandingName(t *testing.T) {
	for in, want := range map[string]string{
		"a/b/report.txt": "report.txt", ".hidden": "_hidden", "sp ace$": "sp_ace_", "x/": "file",
		strings.Repeat("é", 80): strings.Repeat("_", 100),
	} {
		if got := LandingName(in); got != want {
			t.Errorf("LandingName(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	key := make([]byte, 32)
	h, _ := Mint(key, Payload{V: 1, S: "ses_x", U: "http://127.0.0.1:1", P: "a/b", Exp: 1, N: "00"})
	for _, s := range []string{h, "mh1.", "mh1.a.b", h + ".x", strings.Repeat("A", 3000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, pb, m, ok := Parse(s)
		if !ok {
			return
		}
		if p.V != 1 || len(s) > MaxHandleBytes || len(p.P) > MaxPathBytes || len(m) != 32 || pb == "" {
			t.Fatalf("accepted %q as %+v", s, p)
		}
		if Verify(key, pb, m) != (s == h) && s != h {
			// only the minted handle carries key's MAC
			t.Fatalf("%q verified", s)
		}
	})
}

func get(t *testing.T, url string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var pe doorapi.PeerError
	json.NewDecoder(resp.Body).Decode(&pe)
	return resp.StatusCode, pe.Error, pe.Message
}

func itoa(n int) string { return strconv.Itoa(n) }
