package roost

import (
	"errors"
	"runtime"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/store"
)

// storeRegistry resolves from the artifact store at --registry-path with
// store.ResolveManifest: the .mur.zip is streamed through the hash and its
// entries verified from one open file, whose hash is checked against the
// sidecars and whose manifest is parsed, so an approval always names the
// bytes that were judged, and no copy of an artifact is held in memory
// however many requests name it (an unverified POST /register resolves
// first). A pass over a file is reused while its device, inode, size, mtime
// and ctime are unchanged (contracts §3), concurrent resolves of one file
// share one pass, and at most resolvePasses passes run at once. Gateway keys
// are never resolved: the daemon's environment holds no provider credential.
type storeRegistry struct {
	s     *store.Store
	cache *store.ManifestCache
}

// resolvePasses bounds the passes over artifacts running at once: each
// streams a file through SHA-256 and inflate, which is CPU, and more at once
// than cores only stretches every answer.
var resolvePasses = max(runtime.GOMAXPROCS(0), 2)

// StoreRegistry is the Registry of the artifact store rooted at root.
func StoreRegistry(root string) Registry {
	return storeRegistry{store.At(root), store.NewManifestCache(resolvePasses)}
}

func (r storeRegistry) Resolve(name, version string) (Artifact, error) {
	res, err := r.s.ResolveManifest(name, version, r.cache)
	if err != nil {
		var d *diag.Diagnostic
		if errors.As(err, &d) {
			return Artifact{}, errors.New(d.Message)
		}
		return Artifact{}, err
	}
	return Artifact{Name: res.Name, Version: res.Version, SHA256: res.SHA256, Manifest: res.Manifest}, nil
}
