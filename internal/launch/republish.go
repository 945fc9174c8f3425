package launch

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
)

// republishCheck compares a delegating capsule's murmur.yaml on disk with
// the copy of the same name and version in the global store — the one
// mur-roost resolves at its default --registry-path and judges this
// session's registration and spawns by. When they differ (spawn.allow
// edited and not republished, typically) it prints W-RUN-055 on stderr and
// returns the hint a refusal gets; "" when they agree, when nothing of that
// name and version is published (the registration says so), or for a
// --capsule run, which is the published copy.
func republishCheck(p *Plan, stderr io.Writer) string {
	if p.capsule || len(p.Grants.Capsule.SpawnAllow) == 0 || p.Home == "" {
		return ""
	}
	m := p.Manifest
	r, err := store.Global(p.Home).Resolve(m.Name, m.Version, manifest.Options{SkipSecrets: true})
	if err != nil {
		return ""
	}
	published, err := r.Archive.ReadFile(store.ManifestEntry)
	if err != nil || bytes.Equal(published, p.ManifestYAML) {
		return ""
	}
	what := "it"
	here, there := m.Capabilities.Spawn.Allow, r.Manifest.Capabilities.Spawn.Allow
	if !slices.Equal(here, there) {
		what = fmt.Sprintf("its capabilities.spawn.allow: [%s] here, [%s] published", strings.Join(here, ", "), strings.Join(there, ", "))
	}
	hint := fmt.Sprintf("mur-roost judges delegation by the published %s@%s (%s), not by %s; republish it: cd %s && mur build && mur publish --force",
		m.Name, m.Version, r.ZipPath, p.From, filepath.Dir(p.From))
	if stderr != nil {
		fmt.Fprintln(stderr, diag.Warn("W-RUN-055", "%s differs from the published %s@%s in %s (%s), which mur-roost reads (its default --registry-path); %s",
			p.From, m.Name, m.Version, home.Artifacts(p.Home), what, hint).String())
	}
	return hint
}
