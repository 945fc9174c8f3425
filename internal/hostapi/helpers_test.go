package hostapi

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
)

// testEngine is shared by the tests, as the runtime shares one per process.
var testEngine *wasmhost.Engine

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hostapi-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testEngine, err = wasmhost.NewEngine(wasmhost.Config{CacheDir: filepath.Join(dir, "compiled")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	testEngine.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	watMu    sync.Mutex
	watCache = map[string][]byte{}
)

// componentBytes is testdata/<name>.wat as a tool's payload: the engine
// compiles WAT text as it does binary components, so the tests need no
// second WAT parser of their own (wasmtime stays behind internal/wasmhost).
func componentBytes(t testing.TB, name string) []byte {
	t.Helper()
	watMu.Lock()
	defer watMu.Unlock()
	if b, ok := watCache[name]; ok {
		return b
	}
	src, err := os.ReadFile(filepath.Join("testdata", name+".wat"))
	if err != nil {
		t.Fatal(err)
	}
	watCache[name] = src
	return src
}

// murZip packs a .mur.zip: murmur.yaml and the given entries.
func murZip(t testing.TB, yaml string, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("murmur.yaml")
	w.Write([]byte(yaml))
	for n, b := range files {
		w, _ := zw.Create(n)
		w.Write(b)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// publishTool publishes a runtime: tool artifact whose component is wasm.
func publishTool(t testing.TB, st *store.Store, name, version string, wasm []byte, extra string) *store.Resolved {
	t.Helper()
	y := fmt.Sprintf("name: %s\nversion: %q\nruntime: tool\n%s", name, version, extra)
	r, err := st.Publish(murZip(t, y, map[string][]byte{manifest.Bare(name) + ".wasm": wasm}), false)
	if err != nil {
		t.Fatalf("publish %s@%s: %v", name, version, err)
	}
	return r
}

func publishSkill(t testing.TB, st *store.Store, name, version, extra string) *store.Resolved {
	t.Helper()
	y := fmt.Sprintf("name: %s\nversion: %q\nruntime: skill\n%s", name, version, extra)
	r, err := st.Publish(murZip(t, y, map[string][]byte{"skill.md": []byte("# " + name + "\n")}), false)
	if err != nil {
		t.Fatalf("publish %s@%s: %v", name, version, err)
	}
	return r
}

// env is one capsule session in a temp HOME: a project with murmur.yaml,
// its stores, the session's dirs, a real trace writer and the Imports.
type env struct {
	home, project string
	m             *manifest.Manifest
	chain         store.Chain
	sess          *session.Session
	tw            *trace.Writer
	rec           *trace.Recorder
	inv           *tools.Inventory
	api           *Imports
}

// newEnv writes manifestYAML into a fresh project; before runs with the
// stores (to publish artifacts) before the session starts.
func newEnv(t testing.TB, manifestYAML string, before func(e *env)) *env {
	t.Helper()
	return newEnvTask(t, manifestYAML, "", before)
}

// newEnvTask is newEnv with a task (task.md in the runtime dir).
func newEnvTask(t testing.TB, manifestYAML, task string, before func(e *env)) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{home: filepath.Join(root, "home"), project: filepath.Join(root, "project")}
	for _, d := range []string{e.home, e.project} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mp := filepath.Join(e.project, "murmur.yaml")
	if err := os.WriteFile(mp, []byte(manifestYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Load(mp, manifest.Options{SkipSecrets: true})
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	e.chain, err = store.ChainFor(e.project, e.home)
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(e)
	}
	e.sess, err = session.New(session.Config{Home: e.home, ManifestDir: e.project, Name: m.Name, Version: m.Version,
		Task: task, ManifestYAML: []byte(manifestYAML)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.sess.Close() })
	e.tw, err = trace.Create(filepath.Join(e.sess.RecordsDir, trace.FileName), e.sess.ID, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.tw.Close() })
	e.rec = trace.NewRecorder(e.tw, nil, time.Now(), nil)
	e.rec.Emit(trace.SessionStart{CapsuleName: m.Name, CapsuleVersion: m.Version, Kind: "script"})
	// As the launch does: every declared tool resolved once, before the
	// session's host exists; one that does not resolve fails when called.
	var resolved []*store.Resolved
	for _, a := range m.Artifacts {
		if k := a.RuntimeKind(); k == manifest.RuntimeTool || k == manifest.RuntimeSkill {
			if r, err := e.chain.Resolve(a.Name, a.Version, manifest.Options{SkipSecrets: true}); err == nil {
				resolved = append(resolved, r)
			}
		}
	}
	grants, _ := m.EffectiveGrants()
	e.inv, err = tools.Build(&tools.Env{Engine: testEngine, Session: e.sess}, m, grants, resolved)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.inv.Close)
	e.api, err = New(Config{Manifest: m, Tools: e.inv, Stores: e.chain, Session: e.sess})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.api.Close() })
	e.api.Register(wasmhost.NewHost(), e.rec)
	return e
}

// lines reads the session's trace back and returns the lines of one type.
func (e *env) lines(t testing.TB, typ string) []trace.Line {
	t.Helper()
	f, err := trace.ReadFile(filepath.Join(e.sess.RecordsDir, trace.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var out []trace.Line
	for _, l := range f.Lines {
		if l.EventType == typ {
			out = append(out, l)
		}
	}
	return out
}

func ptr(s string) *string { return &s }

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error containing %q, got none", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not contain %q", err, p)
		}
	}
}

// testTool finds a declared component tool without counting it in flight.
func (s *Imports) testTool(name string) (*tools.WASM, error) {
	e, err := s.tools.Lookup(name)
	if err != nil {
		return nil, err
	}
	return e.(*tools.WASM), nil
}
