package store

import (
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
)

// Chain is how a run resolves: the project store, then the global store, each
// resolve checked against the project's murmur.lock when there is one.
type Chain struct {
	Project, Global *Store // either may be nil (a --capsule run has no project)
	// Lock is the project's murmur.lock; nil means resolution is presence-only.
	Lock *Lock
}

// ChainFor builds the chain of a project directory (project store, global store
// under home, and the project's lock if any). projectDir "" gives a chain with
// the global store only and no lock, as a --capsule run uses.
func ChainFor(projectDir, homeDir string) (Chain, error) {
	c := Chain{Global: Global(homeDir)}
	if projectDir == "" {
		return c, nil
	}
	c.Project = Project(projectDir)
	c.Project.remember = rememberedFor(homeDir)
	l, err := ReadLock(projectDir)
	if err != nil {
		return Chain{}, err
	}
	c.Lock = l
	return c, nil
}

// Resolve resolves name@version from the project store, then the global store.
// With a lock, the artifact must be pinned at exactly this version and its
// bytes must hash to the pinned sha256, else the resolve is refused (E-REG-005).
// An artifact found in the project store that fails verification is refused
// there: it never falls through to the global store.
//
// The lock applies to every name resolved through a chain that holds one: use
// it for the project's declared artifacts, and a chain with Lock nil for
// anything else (a --capsule run, a child capsule).
func (c Chain) Resolve(name, version string, opts manifest.Options) (*Resolved, error) {
	full, err := NormalizeRef(name, version)
	if err != nil {
		return nil, err
	}
	var pin LockEntry
	if c.Lock != nil {
		var ok bool
		pin, ok = c.Lock.Find(full)
		if !ok {
			return nil, diag.New("E-REG-005", "%s@%s is not pinned in %s", full, version, c.lockName()).
				WithHint("run 'mur install' in the project to pin every declared artifact")
		}
		if pin.Version != version {
			return nil, diag.New("E-REG-005", "%s@%s: %s pins version %s", full, version, c.lockName(), pin.Version).
				WithHint("run 'mur install' in the project to pin the declared version")
		}
	}
	var tried []string
	for _, s := range []*Store{c.Project, c.Global} {
		if s == nil {
			continue
		}
		r, err := s.Resolve(full, version, opts)
		if IsNotFound(err) {
			tried = append(tried, s.Kind)
			continue
		}
		if err != nil {
			return nil, err
		}
		if c.Lock != nil && r.SHA256 != pin.SHA256 {
			return nil, diag.New("E-REG-005", "%s@%s in the %s hashes to %s, but %s pins %s", full, version, s.label(), short(r.SHA256), c.lockName(), short(pin.SHA256)).
				WithHint("the artifact changed since 'mur install': run 'mur install' again if the change is intended")
		}
		return r, nil
	}
	where := "any store"
	if len(tried) == 1 {
		where = "the " + tried[0] + " store"
	} else if len(tried) == 2 {
		where = "the project or global store"
	}
	return nil, diag.New("E-REG-001", "%s@%s is not installed in %s", full, version, where).
		WithHint("publish its .mur.zip into the global store with 'mur publish <zip>' (in a project, 'mur install' then copies it into the project store)")
}

func (c Chain) lockName() string {
	if c.Lock != nil && c.Lock.File != "" {
		return c.Lock.File
	}
	return LockFile
}
