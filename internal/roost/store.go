package roost

import (
	"errors"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
)

// storeRegistry resolves from the artifact store at --registry-path. Every
// resolve reads the .mur.zip once, hashes those bytes, checks them against
// the sidecars and parses the manifest from the same buffer (internal/store),
// so an approval always names the bytes that were judged. Gateway keys are
// never resolved: the daemon's environment holds no provider credential.
type storeRegistry struct{ s *store.Store }

// StoreRegistry is the Registry of the artifact store rooted at root.
func StoreRegistry(root string) Registry { return storeRegistry{store.At(root)} }

func (r storeRegistry) Resolve(name, version string) (Artifact, error) {
	res, err := r.s.Resolve(name, version, manifest.Options{SkipSecrets: true})
	if err != nil {
		var d *diag.Diagnostic
		if errors.As(err, &d) {
			return Artifact{}, errors.New(d.Message)
		}
		return Artifact{}, err
	}
	return Artifact{Name: res.Name, Version: res.Version, SHA256: res.SHA256, Manifest: res.Manifest}, nil
}
