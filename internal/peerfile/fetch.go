package peerfile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/manifest"
)

// InDir is the work folder's top-level folder fetched files land in: the
// runtime's, read-only to the capsule's code.
const InDir = "peer-in"

// Fetched is a fetch-peer-file result.
type Fetched struct {
	Path   string `json:"path"` // peer-in/<handle_id>-<name>
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	From   string `json:"from"`
}

// FetchError is a fetch that wrote nothing: Outcome is the peer_file_fetch
// word, PeerError the sharer's word on "refused".
type FetchError struct {
	Outcome   string
	PeerError string
	Message   string
}

func (e *FetchError) Error() string { return e.Message }

// Fetcher redeems handles into a work folder.
type Fetcher struct {
	Workdir string
	// Allow is the capsule's capabilities.peer_fetch.allow.
	Allow []string
	// WorkdirMax is capabilities.resources.workdir_max_bytes; MaxBody the
	// largest body read (MURMUR_HTTP_MAX_BODY_BYTES).
	WorkdirMax, MaxBody int64
	Client              *doorapi.Client
}

// Fetch redeems handle h: the checks of docs/peer-files.md in order, then
// the body written to peer-in/.<handle_id>.part and renamed in place.
// ctx carries the call's deadline. It also returns the handle's id and
// sharer URL when the handle parsed ("" otherwise), for the trace line.
func (f *Fetcher) Fetch(ctx context.Context, h string) (Fetched, string, string, *FetchError) {
	p, _, _, ok := Parse(h)
	if !ok {
		return Fetched{}, "", "", &FetchError{Outcome: "malformed", Message: "that is not a peer file handle"}
	}
	id, u := ID(h), p.U
	if !strings.HasPrefix(u, "http://") || !manifest.NetListCovers(f.Allow, u) {
		return Fetched{}, id, u, &FetchError{Outcome: "not_allowed",
			Message: fmt.Sprintf("%s is not covered by capabilities.peer_fetch.allow; add 127.0.0.1 (or %s) to redeem handles from that capsule", u, u)}
	}
	resp, err := f.Client.GetPeerFile(ctx, u, h)
	if err != nil {
		return Fetched{}, id, u, &FetchError{Outcome: "unreachable", Message: fmt.Sprintf("the capsule that shared this file cannot be reached at %s: %v", u, osWords(err))}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var pe doorapi.PeerError
		json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&pe)
		return Fetched{}, id, u, &FetchError{Outcome: "refused", PeerError: pe.Error,
			Message: fmt.Sprintf("%s refused the handle: %d %s: %s", u, resp.StatusCode, pe.Error, pe.Message)}
	}
	length, err := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
	digest, okTag := strings.CutPrefix(strings.Trim(resp.Header.Get("Etag"), `"`), "sha256:")
	if err != nil || !okTag || len(digest) != 64 {
		return Fetched{}, id, u, &FetchError{Outcome: "mismatch", Message: fmt.Sprintf("%s answered without the content-length and etag a peer file carries", u)}
	}
	if length > f.MaxBody {
		return Fetched{}, id, u, &FetchError{Outcome: "too_large", Message: fmt.Sprintf("the file holds %d bytes, past the %d a body may hold (MURMUR_HTTP_MAX_BODY_BYTES)", length, f.MaxBody)}
	}
	if f.WorkdirMax > 0 {
		used, _ := grant.WorkdirBytes(f.Workdir)
		if used+length > f.WorkdirMax {
			return Fetched{}, id, u, &FetchError{Outcome: "too_large", Message: fmt.Sprintf("the file's %d bytes would take the work folder (%d bytes) past capabilities.resources.workdir_max_bytes (%d)", length, used, f.WorkdirMax)}
		}
	}
	name := id + "-" + LandingName(p.P)
	n, sum, ferr := f.land(resp.Body, id, name, length, digest)
	if ferr != nil {
		return Fetched{}, id, u, ferr
	}
	return Fetched{Path: InDir + "/" + name, Bytes: n, SHA256: sum, From: u}, id, u, nil
}

// land writes body into peer-in/.<id>.part (the folder opened without
// following a link: the capsule's code may have put one there), checks
// its length and digest, and renames it to name, 0444; the folder is 0555
// but while a file is made or renamed in.
func (f *Fetcher) land(body io.Reader, id, name string, length int64, digest string) (int64, string, *FetchError) {
	ioErr := func(err error) *FetchError {
		return &FetchError{Outcome: "io_error", Message: fmt.Sprintf("the file could not be written to %s/: %v", InDir, osWords(err))}
	}
	wfd, err := unix.Open(f.Workdir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, "", ioErr(err)
	}
	defer unix.Close(wfd)
	if err := unix.Mkdirat(wfd, InDir, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return 0, "", ioErr(err)
	}
	dfd, err := unix.Openat(wfd, InDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, "", ioErr(fmt.Errorf("%s is not a folder of the runtime's: %w", InDir, err))
	}
	defer unix.Close(dfd)
	writable := func(on bool) {
		mode := uint32(0o555)
		if on {
			mode = 0o755
		}
		unix.Fchmod(dfd, mode)
	}
	part := "." + id + ".part"
	writable(true)
	unix.Unlinkat(dfd, part, 0)
	pfd, err := unix.Openat(dfd, part, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	writable(false)
	if err != nil {
		return 0, "", ioErr(err)
	}
	out := os.NewFile(uintptr(pfd), part)
	gone := func() { writable(true); unix.Unlinkat(dfd, part, 0); writable(false) }
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(out, h), io.LimitReader(body, length+1), make([]byte, 1<<20))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		gone()
		return 0, "", &FetchError{Outcome: "io_error", Message: fmt.Sprintf("the file could not be received whole: %v", osWords(err))}
	}
	got := hex.EncodeToString(h.Sum(nil))
	if n != length || got != digest {
		gone()
		return 0, "", &FetchError{Outcome: "mismatch", Message: fmt.Sprintf("the bytes received (%d, sha256 %s) disagree with the content-length (%d) and etag (sha256:%s) sent", n, got, length, digest)}
	}
	writable(true)
	err = unix.Fchmodat(dfd, part, 0o444, 0)
	if err == nil {
		err = unix.Renameat(dfd, part, dfd, name)
	}
	writable(false)
	if err != nil {
		gone()
		return 0, "", ioErr(err)
	}
	return n, got, nil
}

// osWords is the operating system's words of err, without Go's wrapping
// of the request.
func osWords(err error) string {
	var op interface{ Unwrap() error }
	for errors.As(err, &op) {
		inner := op.Unwrap()
		if inner == nil {
			break
		}
		err = inner
	}
	return err.Error()
}
