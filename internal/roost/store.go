package roost

import (
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/store"
	"golang.org/x/sys/unix"
)

// storeRegistry resolves from the artifact store at --registry-path.
//
// A resolve costs three stat(2) calls when nothing changed: the answer of an
// earlier full resolve (store.ResolveManifest: the .mur.zip streamed through
// SHA-256, its entries verified, the sidecars checked against the hash, the
// manifest parsed) is reused while the .mur.zip, the .sha256 and the
// .meta.json each keep their device, inode, size, mtime and ctime in
// nanoseconds (the file identity docs/stores.md "Every resolve verifies"
// uses). Any difference in any of them — a new file
// renamed in, an edit in place, a chmod — re-reads and re-hashes everything,
// so an approval names the bytes on disk and "the same coordinates resolving
// to different bytes" is still refused.
//
// File timestamps come from the kernel's coarse clock, so a rewrite within
// one tick of the stat an answer was cached under could leave all five
// figures equal. An answer is therefore cached only when every file's ctime
// is older than racyWindow before the full resolve began (the
// "racily clean" rule git uses for its index): a later write stamps a time
// at least that late, which differs. A freshly written artifact is simply
// re-hashed until it is racyWindow old.
//
// Concurrent misses of one artifact share one full resolve, and at most
// resolvePasses run at once. Gateway keys are never resolved: the daemon's
// environment holds no provider credential. No copy of an artifact's bytes is
// held: only its hash and parsed manifest.
type storeRegistry struct {
	s   *store.Store
	sem chan struct{}
	// now is the clock the racy rule reads; tests move it.
	now func() time.Time

	mu       sync.Mutex
	entries  map[coords]*resolved
	inflight map[coords]chan struct{}
}

// coords are a resolve's name and version as asked.
type coords struct{ name, version string }

// resolved is one full resolve's answer, the three files it was read from
// and their identity then.
type resolved struct {
	paths [3]string
	ids   [3]fileID
	art   Artifact
}

// fileID is a file's identity: device, inode, size, mtime and ctime.
type fileID struct {
	dev, ino           uint64
	size, mtime, ctime int64
}

// racyWindow is how old a file's timestamps must be, relative to the start
// of the resolve that read it, for the answer to be reused: well above the
// coarse clock's tick (1–10 ms) and small against how long artifacts live.
const racyWindow = time.Second

// maxResolved bounds the coordinates remembered; past it one is forgotten.
const maxResolved = 4096

// resolvePasses bounds the full resolves running at once: each streams a
// file through SHA-256 and inflate, which is CPU, and more at once than cores
// only stretches every answer.
var resolvePasses = max(runtime.GOMAXPROCS(0), 2)

// StoreRegistry is the Registry of the artifact store rooted at root.
func StoreRegistry(root string) Registry {
	return &storeRegistry{
		s:        store.At(root),
		sem:      make(chan struct{}, resolvePasses),
		now:      time.Now,
		entries:  map[coords]*resolved{},
		inflight: map[coords]chan struct{}{},
	}
}

// paths are the .mur.zip, .sha256 and .meta.json of name@version; ok is
// false for coordinates the store refuses (the full resolve says why).
func (r *storeRegistry) paths(name, version string) (p [3]string, ok bool) {
	full, err := store.NormalizeRef(name, version)
	if err != nil {
		return p, false
	}
	p[0], p[1], p[2] = r.s.Paths(full, version)
	return p, true
}

// identify stats the three files. ok is false when any cannot be stat'ed or
// is not a regular file (the full resolve then says why).
func identify(paths [3]string) (ids [3]fileID, ok bool) {
	for i, p := range paths {
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return ids, false
		}
		ids[i] = fileID{dev: st.Dev, ino: st.Ino, size: st.Size,
			mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
	}
	return ids, true
}

func (r *storeRegistry) Resolve(name, version string) (Artifact, error) {
	key := coords{name, version}
	for {
		r.mu.Lock()
		e := r.entries[key]
		r.mu.Unlock()
		if e != nil {
			if ids, ok := identify(e.paths); ok && ids == e.ids {
				return e.art, nil
			}
		}
		r.mu.Lock()
		if wait, busy := r.inflight[key]; busy {
			r.mu.Unlock()
			<-wait
			continue // the pass may have been over other files: ask again
		}
		if e2 := r.entries[key]; e2 != e {
			r.mu.Unlock()
			continue // another pass finished meanwhile
		}
		done := make(chan struct{})
		r.inflight[key] = done
		r.mu.Unlock()

		art, err := r.full(key)

		r.mu.Lock()
		delete(r.inflight, key)
		r.mu.Unlock()
		close(done)
		return art, err
	}
}

// full is one full resolve; its answer is remembered when the files it read
// kept their identity across it and none was written within racyWindow.
func (r *storeRegistry) full(key coords) (Artifact, error) {
	name, version := key.name, key.version
	r.sem <- struct{}{}
	defer func() { <-r.sem }()
	began := r.now()
	paths, okPaths := r.paths(name, version)
	before, okBefore := identify(paths)
	// A cache of its own per pass: store's shared pass cache reuses a hash
	// without the racy rule above.
	res, err := r.s.ResolveManifest(name, version, store.NewManifestCache(1))
	if err != nil {
		var d *diag.Diagnostic
		if errors.As(err, &d) {
			return Artifact{}, errors.New(d.Message)
		}
		return Artifact{}, err
	}
	art := Artifact{Name: res.Name, Version: res.Version, SHA256: res.SHA256, Manifest: res.Manifest}
	after, okAfter := identify(paths)
	if okPaths && okBefore && okAfter && before == after && settled(after, began) {
		r.mu.Lock()
		if _, ok := r.entries[key]; !ok && len(r.entries) >= maxResolved {
			for k := range r.entries { // forget one, any one
				delete(r.entries, k)
				break
			}
		}
		r.entries[key] = &resolved{paths: paths, ids: after, art: art}
		r.mu.Unlock()
	}
	return art, nil
}

// settled reports whether every file's ctime is older than racyWindow before
// t. The ctime, not the mtime, because no caller can set it: every write,
// chmod or rename stamps it with the kernel's clock.
func settled(ids [3]fileID, t time.Time) bool {
	limit := t.Add(-racyWindow).UnixNano()
	for _, id := range ids {
		if id.ctime >= limit {
			return false
		}
	}
	return true
}
