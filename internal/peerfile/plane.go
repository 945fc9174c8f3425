package peerfile

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/snapshot"
	"github.com/murmur-go/murmur/internal/trace"
)

// Refusal is a check of the peer route that failed: its status, word and
// sentence (docs/peer-files.md), as the route answers it and as share-file
// reports it.
type Refusal struct {
	Status  int
	Word    string
	Message string
}

func (r *Refusal) Error() string { return r.Message }

// Plane is one session's side of sharing: the minting key (32 random
// bytes, in memory only; Close drops it, which revokes every handle), the
// export, and where redeem lines go.
type Plane struct {
	SessionID, URL, Workdir string
	Grant                   manifest.PeerFilesGrant
	// OnRedeem records a peer_handle_redeem line (nil: none).
	OnRedeem func(trace.PeerHandleRedeem)
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	mu  sync.RWMutex
	key []byte
}

// NewPlane makes a session's plane with a fresh key.
func NewPlane(sessionID, url, workdir string, g manifest.PeerFilesGrant) (*Plane, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return &Plane{SessionID: sessionID, URL: url, Workdir: workdir, Grant: g, key: key}, nil
}

// Close drops the key: no handle of the session is valid from then on.
func (pl *Plane) Close() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	clear(pl.key)
	pl.key = nil
}

func (pl *Plane) now() time.Time {
	if pl.Now == nil {
		return time.Now()
	}
	return pl.Now()
}

// Shared is a share-file result.
type Shared struct {
	Handle      string `json:"handle"`
	HandleID    string `json:"handle_id"`
	ExpiresAtMS int64  `json:"expires_at_ms"`
	Bytes       int64  `json:"bytes"`
}

// Share mints a handle for the file p under the export root, living ttl
// ("" is max_ttl; lowered to max_ttl). The file must be there, regular and
// within max_bytes now (the same walk as a redeem).
func (pl *Plane) Share(p, ttl string) (Shared, *Refusal) {
	if why := CheckPath(p); why != "" {
		return Shared{}, &Refusal{Status: 400, Word: "bad_path", Message: fmt.Sprintf("%q cannot be shared: %s", p, why)}
	}
	max := time.Duration(pl.Grant.MaxTTLS) * time.Second
	life := max
	if ttl != "" {
		d, ok := manifest.ParsePeerTTL(ttl)
		if !ok || d < time.Second {
			return Shared{}, &Refusal{Status: 400, Word: "bad_ttl", Message: fmt.Sprintf("ttl %q is not a duration of at least 1s (a Go duration such as \"5m\", or whole seconds)", ttl)}
		}
		life = min(d, max)
	}
	f, st, ref := pl.open(p)
	if ref != nil {
		return Shared{}, ref
	}
	f.Close()
	n := make([]byte, 16)
	rand.Read(n)
	exp := pl.now().Add(life).UnixMilli()
	pl.mu.RLock()
	key := pl.key
	var h string
	var err error
	if key != nil {
		h, err = Mint(key, Payload{V: 1, S: pl.SessionID, U: pl.URL, P: p, Exp: exp, N: hex.EncodeToString(n)})
	}
	pl.mu.RUnlock()
	if key == nil || err != nil {
		return Shared{}, &Refusal{Status: 500, Word: "io_error", Message: "the session is ending: no handle can be minted"}
	}
	if len(h) > MaxHandleBytes {
		return Shared{}, &Refusal{Status: 400, Word: "bad_path", Message: fmt.Sprintf("%q cannot be shared: its handle would pass %d bytes", p, MaxHandleBytes)}
	}
	return Shared{Handle: h, HandleID: ID(h), ExpiresAtMS: exp, Bytes: st.Size}, nil
}

// open runs checks 6 to 8 on p: the root inside the work folder, the walk
// under it, the size.
func (pl *Plane) open(p string) (*os.File, *statInfo, *Refusal) {
	wd, err := filepath.EvalSymlinks(pl.Workdir)
	if err != nil {
		return nil, nil, &Refusal{500, "io_error", fmt.Sprintf("%s could not be read: %v", p, err)}
	}
	root, err := filepath.EvalSymlinks(filepath.Join(wd, pl.Grant.Root))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil, &Refusal{404, "not_found", p + " does not exist"}
	case err != nil:
		return nil, nil, &Refusal{500, "io_error", fmt.Sprintf("%s could not be read: %v", p, err)}
	case root != wd && !strings.HasPrefix(root, wd+"/"):
		return nil, nil, &Refusal{403, "outside_root", "the shared folder resolves outside the work folder"}
	}
	f, st, err := snapshot.OpenBeneath(root, p)
	var be *snapshot.BeneathError
	switch {
	case errors.As(err, &be) && be.Kind == snapshot.BeneathNotFound:
		return nil, nil, &Refusal{404, "not_found", p + " does not exist"}
	case errors.As(err, &be) && be.Kind == snapshot.BeneathSymlink:
		return nil, nil, &Refusal{403, "symlink_refused", p + " passes through a symbolic link, which is never followed"}
	case errors.As(err, &be) && be.Kind == snapshot.BeneathNotRegular:
		return nil, nil, &Refusal{403, "not_a_regular_file", p + " is not a regular file"}
	case err != nil:
		return nil, nil, &Refusal{500, "io_error", fmt.Sprintf("%s could not be read: %v", p, err)}
	}
	if st.Size > pl.Grant.MaxBytes {
		f.Close()
		return nil, nil, &Refusal{413, "too_large", fmt.Sprintf("%s holds %d bytes, past exports.peer_files.max_bytes (%d)", p, st.Size, pl.Grant.MaxBytes)}
	}
	return f, &statInfo{Size: st.Size}, nil
}

type statInfo struct{ Size int64 }

// Handler is the door's peer route (GET /resources/peer/<handle>). pl nil
// is a capsule that declares no exports.peer_files.
func Handler(pl *Plane) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			refuse(w, &Refusal{405, "method_not_allowed", "only GET is answered here"})
			return
		}
		if pl == nil {
			refuse(w, &Refusal{404, "no_peer_plane", "this capsule shares no files"})
			return
		}
		pl.serve(w, r)
	})
}

func refuse(w http.ResponseWriter, ref *Refusal) {
	b, _ := json.Marshal(doorapi.PeerError{Error: ref.Word, Message: ref.Message})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(ref.Status)
	w.Write(b)
}

func (pl *Plane) serve(w http.ResponseWriter, r *http.Request) {
	h, _ := strings.CutPrefix(r.URL.EscapedPath(), doorapi.PeerPath)
	if h == "" || !strings.HasPrefix(r.URL.EscapedPath(), doorapi.PeerPath) {
		refuse(w, &Refusal{404, "not_found", "a handle is needed: nothing here is listed or addressed by path"})
		return
	}
	p, pb, m, ok := Parse(h)
	if !ok {
		refuse(w, &Refusal{400, "malformed_handle", "this is not a peer file handle"})
		return
	}
	pl.mu.RLock()
	valid := pl.key != nil && Verify(pl.key, pb, m) && p.S == pl.SessionID
	pl.mu.RUnlock()
	if !valid {
		refuse(w, &Refusal{403, "handle_not_valid", "this handle was not issued by this session"})
		return
	}
	line := trace.PeerHandleRedeem{HandleID: ID(h), Path: p.P, Remote: r.RemoteAddr}
	record := func(status int, word string) {
		line.Status = status
		if word != "" {
			line.Error = &word
		}
		if pl.OnRedeem != nil {
			pl.OnRedeem(line)
		}
	}
	if now := pl.now().UnixMilli(); p.Exp <= now {
		ref := &Refusal{410, "handle_expired", "this handle expired at " + time.UnixMilli(p.Exp).UTC().Format(time.RFC3339)}
		refuse(w, ref)
		record(ref.Status, ref.Word)
		return
	}
	f, st, ref := pl.open(p.P)
	if ref != nil {
		refuse(w, ref)
		record(ref.Status, ref.Word)
		return
	}
	defer f.Close()
	// Size and digest from the one descriptor: hash it, then serve it
	// from its start.
	sum := sha256.New()
	buf := make([]byte, 1<<20)
	if _, err := io.CopyBuffer(sum, io.NewSectionReader(f, 0, st.Size), buf); err != nil {
		ref := &Refusal{500, "io_error", fmt.Sprintf("%s could not be read: %v", p.P, err)}
		refuse(w, ref)
		record(ref.Status, ref.Word)
		return
	}
	digest := hex.EncodeToString(sum.Sum(nil))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(st.Size, 10))
	w.Header().Set("Etag", `"sha256:`+digest+`"`)
	w.Header().Set(doorapi.HeaderHandleID, line.HandleID)
	w.WriteHeader(http.StatusOK)
	// From the start again, as an *os.File under a limit: net/http sends
	// it with sendfile, never through a user-space buffer.
	var n int64
	if _, err := f.Seek(0, io.SeekStart); err == nil {
		n, _ = io.Copy(w, &io.LimitedReader{R: f, N: st.Size})
	}
	line.Bytes, line.SHA256 = n, digest
	record(http.StatusOK, "")
}
