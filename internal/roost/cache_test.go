package roost

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/roost/roostapi"
	"github.com/murmur-go/murmur/internal/store"
)

// storedZip packs a manifest-only capsule with its one entry stored, not
// deflated, so two models of the same length give zips of the same size.
func storedZip(t *testing.T, name, version, model string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "murmur.yaml", Method: zip.Store})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(w, "name: %s\nversion: %q\ninference:\n  model: %s\n", name, version, model)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// rewriteInPlace writes data over the artifact's .mur.zip and, when sidecars
// is set, its .sha256 and .meta.json, each through the same inode (truncate
// and write, no rename), then puts every mtime back: only the ctime tells.
// It returns the new content hash.
func rewriteInPlace(t *testing.T, reg, name, version string, data []byte, sidecars bool) string {
	t.Helper()
	zipPath, shaPath, metaPath := store.At(reg).Paths(name, version)
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	files := map[string][]byte{zipPath: data}
	if sidecars {
		meta, err := os.ReadFile(metaPath)
		if err != nil {
			t.Fatal(err)
		}
		old, err := os.ReadFile(shaPath)
		if err != nil {
			t.Fatal(err)
		}
		files[shaPath] = []byte(hexSum + "\n")
		files[metaPath] = bytes.ReplaceAll(meta, bytes.TrimSpace(old), []byte(hexSum))
	}
	for p, b := range files {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		ino := fi.Sys().(*syscall.Stat_t).Ino
		if int64(len(b)) != fi.Size() {
			t.Fatalf("%s: rewrite of %d bytes over %d: not the same size", filepath.Base(p), len(b), fi.Size())
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
		if now, _ := os.Stat(p); now.Sys().(*syscall.Stat_t).Ino != ino || now.Size() != fi.Size() || !now.ModTime().Equal(fi.ModTime()) {
			t.Fatalf("%s: the rewrite changed more than the bytes and the ctime", filepath.Base(p))
		}
	}
	return hexSum
}

// ctimeOf is a file's ctime in nanoseconds.
func ctimeOf(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ctim.Nano()
}

// The registry's cache must never let "the same coordinates resolving to
// different bytes" through: an artifact rewritten in place (same inode, same
// size, same mtime) after an approval was granted is refused by hash at
// redemption, whether the rewrite lands within the racy window of the
// resolve (nothing was cached) or long after it (the cached answer is
// dropped because the ctime moved); and bytes rewritten identical still
// redeem.
func TestRegistryRewriteInPlace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		what     string
		settled  bool // the registry's clock says the files are old: answers are cached
		model    string
		sidecars bool
		refuse   string // "bytes" (403 by hash), "sidecar" (500), "" (redeems)
	}{
		{"other bytes, within the racy window", false, "model-b", true, "bytes"},
		{"other bytes, cached answer", true, "model-b", true, "bytes"},
		{"other bytes, sidecars left, cached answer", true, "model-b", false, "sidecar"},
		{"the same bytes again, cached answer", true, "model-a", true, ""},
	} {
		t.Run(tc.what, func(t *testing.T) {
			t.Parallel()
			x := newRef(t, defaultOpts())
			sr := x.r.reg.(*storeRegistry)
			if tc.settled {
				sr.now = func() time.Time { return time.Now().Add(time.Hour) }
			}
			orig := storedZip(t, "local/worker-b", "0.1.0", "model-a")
			if _, err := store.At(x.fx.reg).Publish(orig, true); err != nil {
				t.Fatal(err)
			}
			cred := x.top("ses_p", "local/orchestrator")
			g := x.grant(cred, "local/worker-b", "0.1.0")
			if cached := sr.cached("local/worker-b@0.1.0"); cached != tc.settled {
				t.Fatalf("after the grant, cached = %v, want %v", cached, tc.settled)
			}
			zipPath, _, _ := store.At(x.fx.reg).Paths("local/worker-b", "0.1.0")
			before := ctimeOf(t, zipPath)
			var sha string
			for tries := 0; ; tries++ {
				sha = rewriteInPlace(t, x.fx.reg, "local/worker-b", "0.1.0", storedZip(t, "local/worker-b", "0.1.0", tc.model), tc.sidecars)
				if !tc.settled || ctimeOf(t, zipPath) != before {
					break // past the cache, only a changed ctime can tell
				}
				if tries == 1000 {
					t.Fatal("the ctime never moved")
				}
				time.Sleep(time.Millisecond)
			}
			_, err := x.r.RegisterApproved(roostapi.RegisterRequest{SessionID: "ses_c", Name: "local/worker-b", Version: "0.1.0"}, g.Approval, noPeer)
			switch tc.refuse {
			case "bytes":
				refusal(t, "redeem", err, 403, msgApprovalBytes("local/worker-b@0.1.0", g.SHA256, sha))
			case "sidecar":
				var re *roostapi.Error
				if !asErr(err, &re) || re.StatusCode != 500 {
					t.Fatalf("redeem with a stale .sha256: %v, want a 500 refusal", err)
				}
			default:
				if err != nil {
					t.Fatalf("redeem after an identical rewrite: %v", err)
				}
			}
		})
	}
}

// A resolve whose files are unchanged costs no pass over the bytes: with the
// clock past the racy window, the second resolve of one artifact is the
// cached answer (the same manifest), and a rename of a new file over it (a
// store publish) is seen.
func TestRegistryReusesUnchanged(t *testing.T) {
	t.Parallel()
	fx := newFixture(t)
	sr := StoreRegistry(fx.reg).(*storeRegistry)
	sr.now = func() time.Time { return time.Now().Add(time.Hour) }
	a1, err := sr.Resolve("local/worker-a", "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := sr.Resolve("local/worker-a", "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if a1.Manifest != a2.Manifest || a1.SHA256 != fx.workerSHA {
		t.Fatalf("second resolve was not the cached answer: %p %p %s", a1.Manifest, a2.Manifest, a1.SHA256)
	}
	sha := publish(t, fx.reg, "local/worker-a", "0.1.0", "", 'z')
	a3, err := sr.Resolve("local/worker-a", "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if a3.SHA256 != sha || a3.Manifest == a1.Manifest {
		t.Fatalf("after a publish: sha %s, want %s", a3.SHA256, sha)
	}
}
