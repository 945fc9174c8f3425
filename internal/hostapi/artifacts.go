package hostapi

import (
	"archive/zip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// The artifact manager (murmur:artifact-manager/manage) answers from the two
// stores a run resolves from (docs/stores.md): the project store first, then
// the global store. Listing reads the .meta.json sidecars (cheap); describe
// and pull verify the artifact's bytes like a run's resolve does.

var _ wit.ArtifactManager = (*Session)(nil)

// installed is every artifact of the project and global stores, the project
// store's copy winning where both hold name@version. Entries whose sidecars
// cannot be read are left out (and logged): describe would refuse them. A
// store that cannot be read is reported in err, and the other store's
// entries are still returned.
func (s *Session) installed() ([]store.Entry, error) {
	seen := map[string]bool{}
	var out []store.Entry
	var errs []error
	for _, st := range []*store.Store{s.cfg.Stores.Project, s.cfg.Stores.Global} {
		if st == nil {
			continue
		}
		es, err := st.List()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range es {
			if e.Problem != "" {
				s.log.Warn("artifact-manager: skipping an unreadable artifact", "name", e.Name, "version", e.Version, "store", st.Root, "problem", e.Problem)
				continue
			}
			k := e.Name + "@" + e.Version
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return compareVersions(out[i].Version, out[j].Version) < 0
	})
	return out, errors.Join(errs...)
}

// runtimeType maps an artifact onto the WIT runtime-type: wasm for what runs
// as a component (tools, drivers, hooks, script capsules), native for what
// the runtime itself carries out (skills, agent capsules).
func runtimeType(e store.Entry) wit.RuntimeType {
	switch e.Runtime {
	case manifest.RuntimeSkill:
		return "native"
	case manifest.RuntimeCapsule:
		// A script capsule has a root .wasm; an agent capsule is manifest-only.
		// Only the zip's central directory is read.
		zp, _, _ := e.Store.Paths(e.Name, e.Version)
		zr, err := zip.OpenReader(zp)
		if err != nil {
			return "wasm"
		}
		defer zr.Close()
		for _, f := range zr.File {
			if !strings.Contains(f.Name, "/") && strings.HasSuffix(f.Name, ".wasm") {
				return "wasm"
			}
		}
		return "native"
	}
	return "wasm"
}

func summary(e store.Entry) wit.ArtifactSummary {
	return wit.ArtifactSummary{Name: e.Name, Version: e.Version, Runtime: runtimeType(e)}
}

// List implements list: every installed artifact visible to the session.
// Its WIT result has no error side and an error would trap the capsule, so
// a store that cannot be read is logged and left out.
func (s *Session) List(ctx context.Context) ([]wit.ArtifactSummary, error) {
	es, err := s.installed()
	if err != nil {
		s.log.Warn("artifact-manager: list is incomplete", "session", s.cfg.Session.ID, "error", err)
	}
	out := make([]wit.ArtifactSummary, 0, len(es))
	for _, e := range es {
		out = append(out, summary(e))
	}
	return out, nil
}

// Search implements search: a case-insensitive substring match over names,
// descriptions and tags ("" matches everything).
func (s *Session) Search(ctx context.Context, query string) ([]wit.ArtifactSummary, error) {
	es, err := s.installed()
	if err != nil {
		return nil, err
	}
	q := strings.ToLower(strings.TrimSpace(query))
	out := []wit.ArtifactSummary{}
	for _, e := range es {
		hay := []string{e.Name, e.Description}
		hay = append(hay, e.Tags...)
		for _, h := range hay {
			if strings.Contains(strings.ToLower(h), q) {
				out = append(out, summary(e))
				break
			}
		}
	}
	return out, nil
}

// findInstalled picks the entries name refers to: a full name as it is, a
// bare name when exactly one installed full name has it. The versions are
// sorted lowest first.
func findInstalled(es []store.Entry, name string) (string, []store.Entry, error) {
	full := name
	if !strings.Contains(name, "/") {
		var fulls []string
		for _, e := range es {
			if manifest.Bare(e.Name) == name && (len(fulls) == 0 || fulls[len(fulls)-1] != e.Name) {
				fulls = append(fulls, e.Name)
			}
		}
		switch len(fulls) {
		case 0:
			full = "local/" + name
		case 1:
			full = fulls[0]
		default:
			return "", nil, diag.New("E-RUN-066", "artifact name %q is ambiguous: %s are installed", name, strings.Join(fulls, ", ")).
				WithHint("use the full name <scope>/<name>")
		}
	} else if !manifest.IsFullName(name) {
		return "", nil, diag.New("E-RUN-066", "%q is not an artifact name", name).
			WithHint("use <scope>/<name>, or a bare name")
	}
	var out []store.Entry
	for _, e := range es {
		if e.Name == full {
			out = append(out, e)
		}
	}
	return full, out, nil
}

// Describe implements describe: the newest installed version of name, read
// and verified from its store.
func (s *Session) Describe(ctx context.Context, name string) (wit.ArtifactInfo, error) {
	es, err := s.installed()
	if err != nil {
		return wit.ArtifactInfo{}, err
	}
	full, vs, err := findInstalled(es, name)
	if err != nil {
		return wit.ArtifactInfo{}, err
	}
	if len(vs) == 0 {
		return wit.ArtifactInfo{}, notInstalled(full)
	}
	e := vs[len(vs)-1]
	r, err := e.Store.Resolve(e.Name, e.Version, manifest.Options{SkipSecrets: true})
	if err != nil {
		return wit.ArtifactInfo{}, err
	}
	rt := wit.RuntimeType("wasm")
	if file, ok := r.Archive.PayloadName(); !ok || !strings.HasSuffix(file, ".wasm") {
		rt = "native"
	}
	tags := r.Manifest.Tags
	if tags == nil {
		tags = []string{}
	}
	info := wit.ArtifactInfo{Name: r.Name, Version: r.Version, Description: r.Manifest.Description,
		Tags: tags, Runtime: rt}
	if len(r.Manifest.InputSchema) > 0 {
		sch := string(r.Manifest.InputSchema)
		info.InputSchema = &sch
	}
	return info, nil
}

func notInstalled(full string) error {
	return diag.New("E-RUN-066", "%s is not installed in the project or global store", full).
		WithHint("search the stores with search(), or pull it into the project store")
}

// installGrant is the capabilities.install list that governs an artifact of
// runtime rt, and whether one exists (only tools and skills are installable).
func (s *Session) installGrant(rt string) (key string, patterns []string, ok bool) {
	switch rt {
	case manifest.RuntimeTool:
		return "capabilities.install.tool", s.grants.Capsule.InstallTool, true
	case manifest.RuntimeSkill:
		return "capabilities.install.skill", s.grants.Capsule.InstallSkill, true
	}
	return "", nil, false
}

// installCovered reports whether some pattern covers the artifact, matched
// against its full name and its bare name ("acme-*" and "murmur/fmt" are
// both patterns the spec's examples write).
func installCovered(patterns []string, full string) bool {
	for _, p := range patterns {
		if manifest.InstallCovers(p, full) || manifest.InstallCovers(p, manifest.Bare(full)) {
			return true
		}
	}
	return false
}

func (s *Session) checkInstall(verb, ref, full, rt string) error {
	key, pats, ok := s.installGrant(rt)
	if !ok {
		return diag.New("E-RUN-067", "%s %s refused: it is a %s; only tools and skills can be installed by a capsule", verb, ref, rt).
			WithHint("install it with 'mur install' instead")
	}
	if !installCovered(pats, full) {
		return diag.New("E-RUN-067", "%s %s refused: %s does not cover %s", verb, ref, key, full).
			WithHint("add %s (or a pattern covering it) to %s in murmur.yaml", full, key)
	}
	return nil
}

func (s *Session) projectStore(verb string) (*store.Store, error) {
	if s.cfg.Stores.Project == nil {
		return nil, diag.New("E-RUN-068", "%s is not available: this session has no project store (it runs an installed capsule with --capsule)", verb).
			WithHint("run the capsule from its project directory to let it install artifacts")
	}
	return s.cfg.Stores.Project, nil
}

// Pull implements pull: copies name@version from the global store into the
// project store when capabilities.install.tool / .skill covers it (by the
// artifact's runtime), and records an artifact_pulled line. The bytes are
// verified on the way (hash, sidecars, manifest), and the write is the
// store's atomic publish: an identical copy already there is a success.
func (s *Session) Pull(ctx context.Context, name, version string) (wit.ArtifactSummary, error) {
	full, err := store.NormalizeRef(name, version)
	if err != nil {
		return wit.ArtifactSummary{}, err
	}
	ref := full + "@" + version
	proj, err := s.projectStore("pull")
	if err != nil {
		return wit.ArtifactSummary{}, err
	}
	if s.cfg.Stores.Global == nil {
		return wit.ArtifactSummary{}, diag.New("E-RUN-068", "pull is not available: this session has no global store")
	}
	r, err := s.cfg.Stores.Global.Resolve(full, version, manifest.Options{SkipSecrets: true})
	if err != nil {
		return wit.ArtifactSummary{}, err
	}
	if err := s.checkInstall("pull", ref, full, r.Runtime); err != nil {
		return wit.ArtifactSummary{}, err
	}
	data, err := r.Archive.ReadBytes()
	if err != nil {
		return wit.ArtifactSummary{}, err
	}
	got, err := proj.Publish(data, false)
	if err != nil {
		return wit.ArtifactSummary{}, err
	}
	s.recorder().ArtifactPulled(trace.ArtifactPulled{Name: got.Name, Version: got.Version, SHA256: got.SHA256, Store: store.KindProject})
	return summary(store.Entry{Name: got.Name, Version: got.Version, Runtime: got.Runtime, Store: proj}), nil
}

// Remove implements remove: deletes every version of name from the project
// store (never the global one), where this session may install it. ok(false)
// means the project store holds no such artifact. murmur.lock is left alone:
// only 'mur install' writes it.
func (s *Session) Remove(ctx context.Context, name string) (bool, error) {
	proj, err := s.projectStore("remove")
	if err != nil {
		return false, err
	}
	es, err := proj.List()
	if err != nil {
		return false, err
	}
	full, vs, err := findInstalled(es, name)
	if err != nil {
		return false, err
	}
	if len(vs) == 0 {
		return false, nil
	}
	for _, e := range vs {
		rt := e.Runtime
		if e.Problem != "" {
			rt = "(unreadable)"
		}
		if err := s.checkInstall("remove", e.Name+"@"+e.Version, full, rt); err != nil {
			return false, err
		}
	}
	for _, e := range vs {
		if err := removeVersion(proj, e.Name, e.Version); err != nil {
			return false, diag.Wrap(err, "E-IO-002", "cannot remove %s@%s from the project store", e.Name, e.Version).
				WithHint("check that the project store is writable")
		}
	}
	// Drop the name and scope directories when they are left empty.
	nameDir := filepath.Dir(proj.Dir(full, "x"))
	if os.Remove(nameDir) == nil {
		os.Remove(filepath.Dir(nameDir))
	}
	return true, nil
}

// removeVersion takes a version directory out of the store in one rename (a
// reader sees it whole or not at all), then deletes it.
func removeVersion(st *store.Store, name, version string) error {
	dir := st.Dir(name, version)
	var b [6]byte
	rand.Read(b[:])
	gone := filepath.Join(filepath.Dir(dir), ".removing-"+version+"-"+hex.EncodeToString(b[:]))
	if err := os.Rename(dir, gone); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	return os.RemoveAll(gone)
}

// Diagnostics implements diagnostics: the session id, what is installed and
// the effective grants as JSON.
func (s *Session) Diagnostics(ctx context.Context) (wit.RuntimeState, error) {
	l, err := s.List(ctx)
	if err != nil {
		return wit.RuntimeState{}, err
	}
	return wit.RuntimeState{CapsuleID: s.cfg.Session.ID, Installed: l, Capabilities: s.grantsJSON}, nil
}

// compareVersions orders versions by dot-separated parts, numerically where
// both parts are numbers ("0.10.0" after "0.9.1"), else as text.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, ea := strconv.Atoi(pa[i])
		nb, eb := strconv.Atoi(pb[i])
		switch {
		case ea == nil && eb == nil:
			if na != nb {
				if na < nb {
					return -1
				}
				return 1
			}
		case pa[i] != pb[i]:
			return strings.Compare(pa[i], pb[i])
		}
	}
	return len(pa) - len(pb)
}
