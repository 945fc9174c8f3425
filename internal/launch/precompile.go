package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

// Precompiled is what Precompile did for one artifact.
type Precompiled struct {
	// Component is the root .wasm it compiled ("" : the artifact has none:
	// an agent capsule, a skill, a native tool).
	Component string
	// Cached is true when the compile cache already held it.
	Cached bool
}

// cacheDigest names r's root component in the compile cache exactly as the
// run that loads it does: a stored driver by the hash of its bytes
// (internal/driver/wasm), every other kind by the artifact's digest and the
// entry's name (script capsules, tools, hooks).
func cacheDigest(r *store.Resolved, file string, data []byte) string {
	if r.Runtime == manifest.RuntimeDriver {
		sum := sha256.Sum256(data)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	return store.Digest(r, file)
}

// Precompile compiles r's root component into the compile cache of homeDir,
// as its first run would, so that run loads it instead of compiling
// (mur publish and mur install call it). onCompile, when set, is told the
// artifact's name before a compile that the cache could not spare.
func Precompile(homeDir string, r *store.Resolved, onCompile func(string)) (Precompiled, error) {
	file, ok := r.Archive.PayloadName()
	if !ok || filepath.Ext(file) != ".wasm" {
		return Precompiled{}, nil
	}
	data, err := r.Archive.ReadFile(file)
	if err != nil {
		return Precompiled{}, err
	}
	eng, err := wasmhost.NewEngine(wasmhost.Config{CacheDir: home.Compiled(homeDir), KeyFile: home.CacheKey(homeDir)})
	if err != nil {
		return Precompiled{}, err
	}
	defer eng.Close()
	digest := cacheDigest(r, file, data)
	if eng.Precompiled(digest) {
		return Precompiled{Component: file, Cached: true}, nil
	}
	if onCompile != nil {
		onCompile(r.Ref())
	}
	comp, err := eng.CompileDigest(wasmhost.CompileOptions{Name: r.Ref(), Digest: digest},
		func() ([]byte, error) { return data, nil })
	if err != nil {
		return Precompiled{}, err
	}
	comp.Close()
	return Precompiled{Component: file}, nil
}

// IsPrecompiled tells whether the compile cache of homeDir holds r's root
// component (false for an artifact with none), for mur doctor.
func IsPrecompiled(homeDir string, r *store.Resolved) (component string, cached bool, err error) {
	file, ok := r.Archive.PayloadName()
	if !ok || filepath.Ext(file) != ".wasm" {
		return "", false, nil
	}
	// Read only: with no cache or no key yet nothing is compiled, and
	// making them is a run's business, not a check's.
	for _, p := range []string{home.Compiled(homeDir), home.CacheKey(homeDir)} {
		if _, err := os.Stat(p); err != nil {
			return file, false, nil
		}
	}
	data, err := r.Archive.ReadFile(file)
	if err != nil {
		return file, false, err
	}
	eng, err := wasmhost.NewEngine(wasmhost.Config{CacheDir: home.Compiled(homeDir), KeyFile: home.CacheKey(homeDir)})
	if err != nil {
		return file, false, err
	}
	defer eng.Close()
	return file, eng.Precompiled(cacheDigest(r, file, data)), nil
}
