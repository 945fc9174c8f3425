package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
)

var noSecrets = manifest.Options{SkipSecrets: true}

// artifactZip is a .mur.zip of a tool name@version whose payload carries extra,
// so two calls with different extra give different bytes.
func artifactZip(t testing.TB, name, version, extra string) []byte {
	t.Helper()
	y := fmt.Sprintf("name: %s\nversion: %q\nruntime: tool\ndescription: test tool\ntags: [a, b]\n", name, version)
	return buildZip(t, zent{"murmur.yaml", []byte(y), 0},
		zent{"tool.wasm", append(append([]byte{}, wasmComponentHeader...), extra...), 0})
}

// snapshot lists every path under root with its size, to show a refused
// operation changed nothing.
func snapshot(t testing.TB, root string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		fmt.Fprintf(&b, "%s %d %v\n", strings.TrimPrefix(p, root), fi.Size(), fi.Mode())
		return nil
	})
	return b.String()
}

func TestPublishResolveRoundTrip(t *testing.T) {
	s := At(t.TempDir())
	z := artifactZip(t, "acme/lint", "1.2.0", "v1")
	r, err := s.Publish(z, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "acme/lint" || r.Version != "1.2.0" || r.Runtime != "tool" || r.SHA256 != HashHex(z) {
		t.Fatalf("published %+v", r)
	}
	zp, sp, mp := s.Paths("acme/lint", "1.2.0")
	if zp != filepath.Join(s.Root, "acme", "lint", "1.2.0", "lint-1.2.0.mur.zip") {
		t.Fatalf("zip path %s", zp)
	}
	if b, _ := os.ReadFile(sp); string(b) != HashHex(z)+"\n" {
		t.Fatalf(".sha256 = %q", b)
	}
	mb, _ := os.ReadFile(mp)
	for _, want := range []string{`"name": "acme/lint"`, `"version": "1.2.0"`, `"runtime": "tool"`, `"description": "test tool"`, `"sha256": "` + HashHex(z)} {
		if !bytes.Contains(mb, []byte(want)) {
			t.Errorf(".meta.json lacks %s:\n%s", want, mb)
		}
	}
	got, err := s.Resolve("acme/lint", "1.2.0", noSecrets)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Archive.Bytes(), z) || got.Manifest.Name != "acme/lint" {
		t.Fatal("resolved other bytes")
	}
	if n, _, ok := got.Archive.Payload(); !ok || n != "tool.wasm" {
		t.Fatalf("payload %q", n)
	}
	// Same bytes again: idempotent. Other bytes: refused, store unchanged.
	if r.Unchanged {
		t.Error("first publish reported Unchanged")
	}
	if again, err := s.Publish(z, false); err != nil || !again.Unchanged {
		t.Fatalf("republish same bytes: %v (unchanged=%v)", err, again != nil && again.Unchanged)
	}
	before := snapshot(t, s.Root)
	z2 := artifactZip(t, "acme/lint", "1.2.0", "v2")
	if _, err := s.Publish(z2, false); diag.Code(err) != "E-REG-003" {
		t.Fatalf("republish other bytes: %v", err)
	}
	if after := snapshot(t, s.Root); after != before {
		t.Fatalf("refused publish changed the store:\n%s\nvs\n%s", before, after)
	}
	// --force replaces it whole.
	r2, err := s.Publish(z2, true)
	if err != nil {
		t.Fatalf("forced publish: %v", err)
	}
	if r2.SHA256 != HashHex(z2) {
		t.Fatal("forced publish kept the old bytes")
	}
	if ents, _ := os.ReadDir(filepath.Dir(s.Dir("acme/lint", "1.2.0"))); len(ents) != 1 {
		t.Fatalf("leftovers beside the version dir: %v", ents)
	}
	// A bare name publishes as local/<name>.
	r3, err := s.Publish(artifactZip(t, "bare", "0.1.0", ""), false)
	if err != nil || r3.Name != "local/bare" {
		t.Fatalf("bare name: %v %v", r3, err)
	}
	if _, err := s.Resolve("bare", "0.1.0", noSecrets); err != nil {
		t.Fatalf("resolve by bare name: %v", err)
	}
}

func TestResolveRefusals(t *testing.T) {
	type tamper func(t *testing.T, s *Store)
	write := func(path, data string) { os.WriteFile(path, []byte(data), 0o644) }
	tests := []struct {
		name    string
		tamper  tamper
		name2   string // resolve this instead of acme/lint
		version string
		code    string
	}{
		{name: "missing", name2: "acme/none", code: "E-REG-001"},
		{name: "other version", version: "9.9.9", code: "E-REG-001"},
		{name: "reserved version", version: "latest", code: "E-REG-004"},
		{name: "bad name", name2: "Acme/../x", code: "E-REG-014"},
		{name: "bad version", version: "../../etc", code: "E-REG-014"},
		{name: "zip changed", code: "E-REG-002", tamper: func(t *testing.T, s *Store) {
			zp, _, _ := s.Paths("acme/lint", "1.0.0")
			os.WriteFile(zp, artifactZip(t, "acme/lint", "1.0.0", "evil"), 0o644)
		}},
		{name: "sha256 sidecar changed", code: "E-REG-002", tamper: func(t *testing.T, s *Store) {
			_, sp, _ := s.Paths("acme/lint", "1.0.0")
			write(sp, strings.Repeat("0", 64)+"\n")
		}},
		{name: "sha256 sidecar missing", code: "E-REG-002", tamper: func(t *testing.T, s *Store) {
			_, sp, _ := s.Paths("acme/lint", "1.0.0")
			os.Remove(sp)
		}},
		{name: "meta sidecar missing", code: "E-REG-008", tamper: func(t *testing.T, s *Store) {
			_, _, mp := s.Paths("acme/lint", "1.0.0")
			os.Remove(mp)
		}},
		{name: "meta sidecar garbage", code: "E-REG-008", tamper: func(t *testing.T, s *Store) {
			_, _, mp := s.Paths("acme/lint", "1.0.0")
			write(mp, "{not json")
		}},
		{name: "meta sidecar other hash", code: "E-REG-008", tamper: func(t *testing.T, s *Store) {
			_, _, mp := s.Paths("acme/lint", "1.0.0")
			b, _ := os.ReadFile(mp)
			_, sp, _ := s.Paths("acme/lint", "1.0.0")
			h, _ := os.ReadFile(sp)
			write(mp, strings.Replace(string(b), strings.TrimSpace(string(h)), strings.Repeat("a", 64), 1))
		}},
		{name: "meta sidecar other runtime", code: "E-REG-008", tamper: func(t *testing.T, s *Store) {
			_, _, mp := s.Paths("acme/lint", "1.0.0")
			b, _ := os.ReadFile(mp)
			write(mp, strings.Replace(string(b), `"runtime": "tool"`, `"runtime": "capsule"`, 1))
		}},
		{name: "zip names another artifact", code: "E-REG-009", tamper: func(t *testing.T, s *Store) {
			// A consistent set of sidecars around a zip that declares another name.
			other := artifactZip(t, "acme/other", "1.0.0", "")
			zp, sp, mp := s.Paths("acme/lint", "1.0.0")
			os.WriteFile(zp, other, 0o644)
			write(sp, HashHex(other)+"\n")
			b, _ := os.ReadFile(mp)
			var old string
			fmt.Sscanf(string(b[strings.Index(string(b), `"sha256": "`)+11:]), "%64s", &old)
			write(mp, strings.Replace(string(b), old, HashHex(other), 1))
		}},
		{name: "truncated zip with matching sidecars", code: "E-REG-010", tamper: func(t *testing.T, s *Store) {
			zp, sp, mp := s.Paths("acme/lint", "1.0.0")
			b, _ := os.ReadFile(zp)
			cut := b[:len(b)/2]
			old := HashHex(b)
			os.WriteFile(zp, cut, 0o644)
			write(sp, HashHex(cut)+"\n")
			m, _ := os.ReadFile(mp)
			write(mp, strings.Replace(string(m), old, HashHex(cut), 1))
		}},
		{name: "file where the scope dir belongs", name2: "file/lint", code: "E-REG-001", tamper: func(t *testing.T, s *Store) {
			write(filepath.Join(s.Root, "file"), "x")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := At(t.TempDir())
			if _, err := s.Publish(artifactZip(t, "acme/lint", "1.0.0", ""), false); err != nil {
				t.Fatal(err)
			}
			warm := NewManifestCache(1)
			if _, err := s.ResolveManifest("acme/lint", "1.0.0", warm); err != nil {
				t.Fatal(err)
			}
			if tc.tamper != nil {
				tc.tamper(t, s)
			}
			n, v := "acme/lint", "1.0.0"
			defer func() {
				if r, err := s.ResolveManifest(n, v, warm); diag.Code(err) != tc.code {
					t.Fatalf("ResolveManifest after a warm cache = %v, %v; want code %s", r, err, tc.code)
				}
			}()
			if tc.name2 != "" {
				n = tc.name2
			}
			if tc.version != "" {
				v = tc.version
			}
			r, err := s.Resolve(n, v, noSecrets)
			if diag.Code(err) != tc.code {
				t.Fatalf("Resolve = %v, %v; want code %s", r, err, tc.code)
			}
			// The streaming resolve refuses alike, with a fresh cache and
			// with one that resolved the artifact before it was tampered.
			if r, err := s.ResolveManifest(n, v, NewManifestCache(1)); diag.Code(err) != tc.code {
				t.Fatalf("ResolveManifest = %v, %v; want code %s", r, err, tc.code)
			}
		})
	}
}

func TestPublishRefusals(t *testing.T) {
	tests := []struct {
		name string
		zip  []byte
		code string
	}{
		{"not a zip", []byte("hello"), "E-REG-010"},
		{"no manifest", buildZip(t, zent{"tool.wasm", wasmComponentHeader, 0}), "E-REG-012"},
		{"bad manifest", buildZip(t, zent{"murmur.yaml", []byte("name: [\n"), 0}), ""},
		{"reserved version", buildZip(t, zent{"murmur.yaml", []byte("name: a\nversion: latest\n"), 0}), "E-MAN-006"},
		{"bomb", buildZip(t, zent{"murmur.yaml", []byte(yamlOK), 0}, zent{"x", make([]byte, 3<<20), 0}), "E-REG-011"},
	}
	t.Setenv(MaxDecompressedEnv, "2097152")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			s := At(filepath.Join(root, "store"))
			_, err := s.Publish(tc.zip, false)
			if err == nil || (tc.code != "" && diag.Code(err) != tc.code) || diag.Code(err) == "" {
				t.Fatalf("Publish = %v, want code %q", err, tc.code)
			}
			if _, err := os.Stat(s.Root); !os.IsNotExist(err) {
				t.Fatalf("refused publish created the store (%v)", err)
			}
		})
	}
}

func TestPublishUnwritable(t *testing.T) {
	root := t.TempDir()
	// A file where the store's scope directory belongs (root bypasses modes).
	s := At(filepath.Join(root, "store"))
	os.MkdirAll(s.Root, 0o755)
	os.WriteFile(filepath.Join(s.Root, "acme"), []byte("not a dir"), 0o644)
	before := snapshot(t, root)
	if _, err := s.Publish(artifactZip(t, "acme/lint", "1.0.0", ""), false); diag.Code(err) != "E-IO-002" {
		t.Fatalf("Publish = %v, want E-IO-002", err)
	}
	if after := snapshot(t, root); after != before {
		t.Fatalf("store changed:\n%s\nvs\n%s", before, after)
	}
	// A store root that is a file.
	s2 := At(filepath.Join(root, "store", "acme"))
	if _, err := s2.Publish(artifactZip(t, "acme/lint", "1.0.0", ""), false); diag.Code(err) != "E-IO-002" {
		t.Fatalf("Publish into a file = %v, want E-IO-002", err)
	}
}

func TestPublishRace(t *testing.T) {
	s := At(t.TempDir())
	const n = 8
	for round := 0; round < 5; round++ {
		ver := fmt.Sprintf("1.0.%d", round)
		var wg sync.WaitGroup
		errs := make([]error, n)
		zips := make([][]byte, n)
		for i := range zips {
			zips[i] = artifactZip(t, "acme/race", ver, fmt.Sprint(i%2)) // two distinct contents
		}
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) { defer wg.Done(); _, errs[i] = s.Publish(zips[i], false) }(i)
		}
		wg.Wait()
		r, err := s.Resolve("acme/race", ver, noSecrets)
		if err != nil {
			t.Fatalf("after the race the store does not resolve: %v", err)
		}
		for i, err := range errs {
			same := bytes.Equal(zips[i], r.Archive.Bytes())
			switch {
			case same && err != nil:
				t.Errorf("publisher %d has the winning bytes but failed: %v", i, err)
			case !same && diag.Code(err) != "E-REG-003":
				t.Errorf("publisher %d lost with other bytes but got %v", i, err)
			}
		}
		ents, _ := os.ReadDir(filepath.Dir(s.Dir("acme/race", ver)))
		if len(ents) != round+1 {
			t.Errorf("round %d: leftovers %v", round, ents)
		}
	}
}

func TestList(t *testing.T) {
	s := At(t.TempDir())
	if l, err := s.List(); err != nil || len(l) != 0 {
		t.Fatalf("empty store: %v %v", l, err)
	}
	for _, z := range [][]byte{artifactZip(t, "b/x", "2.0.0", ""), artifactZip(t, "a/y", "1.0.0", ""), artifactZip(t, "b/x", "1.0.0", "")} {
		if _, err := s.Publish(z, false); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(s.Root, "b", "x", ".staging-junk"), 0o755)
	l, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range l {
		got = append(got, e.Name+"@"+e.Version+":"+e.Runtime)
		if len(e.SHA256) != 64 || e.Problem != "" {
			t.Errorf("entry %+v", e)
		}
	}
	if strings.Join(got, " ") != "a/y@1.0.0:tool b/x@1.0.0:tool b/x@2.0.0:tool" {
		t.Fatalf("List = %v", got)
	}
}

func TestFindProject(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "p", "a", "b")
	os.MkdirAll(deep, 0o755)
	if _, ok := FindProject(deep); ok {
		// Only if some ancestor of the temp dir holds a murmur.yaml; unlikely.
		t.Skip("an ancestor of the temp dir holds a murmur.yaml")
	}
	os.WriteFile(filepath.Join(root, "p", "murmur.yaml"), []byte(yamlOK), 0o644)
	if d, ok := FindProject(deep); !ok || d != filepath.Join(root, "p") {
		t.Fatalf("FindProject = %q %v", d, ok)
	}
	os.Mkdir(filepath.Join(root, "p", "a", "murmur.yaml"), 0o755) // a directory is not a manifest
	if d, _ := FindProject(deep); d != filepath.Join(root, "p") {
		t.Fatalf("FindProject took a directory named murmur.yaml: %q", d)
	}
}

func TestStoreRoots(t *testing.T) {
	if g := Global("/h"); g.Root != "/h/.murmur/artifacts" || g.Kind != KindGlobal {
		t.Fatal(g)
	}
	if p := Project("/p"); p.Root != "/p/.murmur/artifacts" || p.Kind != KindProject {
		t.Fatal(p)
	}
	if r := At("/r"); r.Root != "/r" || r.Kind != KindRegistry {
		t.Fatal(r)
	}
}

func TestStaleStagingRemoved(t *testing.T) {
	s := At(t.TempDir())
	parent := filepath.Join(s.Root, "acme", "lint")
	old := filepath.Join(parent, ".staging-1.0.0-crashed")
	fresh := filepath.Join(parent, ".staging-1.0.0-inflight")
	os.MkdirAll(old, 0o755)
	os.MkdirAll(fresh, 0o755)
	long := time.Now().Add(-2 * staleStaging)
	os.Chtimes(old, long, long)
	if _, err := s.Publish(artifactZip(t, "acme/lint", "1.0.0", ""), false); err != nil {
		t.Fatal(err)
	}
	if exists(old) {
		t.Error("a stale staging dir survived")
	}
	if !exists(fresh) {
		t.Error("an in-flight staging dir was removed")
	}
}

// TestResolveDuringForcedRepublish: readers racing forced republishes of one
// version always get one whole artifact, never a refusal or a mix.
func TestResolveDuringForcedRepublish(t *testing.T) {
	s := At(t.TempDir())
	zips := [][]byte{artifactZip(t, "acme/flip", "1.0.0", "one"), artifactZip(t, "acme/flip", "1.0.0", "two")}
	ok := map[string]bool{HashHex(zips[0]): true, HashHex(zips[1]): true}
	if _, err := s.Publish(zips[0], false); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.Publish(zips[i%2], true); err != nil {
				t.Errorf("forced publish: %v", err)
				return
			}
		}
	}()
	for i := 0; i < 300; i++ {
		r, err := s.Resolve("acme/flip", "1.0.0", noSecrets)
		if err != nil {
			t.Errorf("resolve %d during republish: %v", i, err)
			break
		}
		if !ok[r.SHA256] || HashHex(r.Archive.Bytes()) != r.SHA256 {
			t.Errorf("resolve %d: bytes %s are neither artifact", i, r.SHA256)
			break
		}
	}
	close(stop)
	wg.Wait()
	if ents, _ := os.ReadDir(filepath.Dir(s.Dir("acme/flip", "1.0.0"))); len(ents) != 1 {
		t.Errorf("leftovers: %v", ents)
	}
}

func TestPublishOverCorruptVersion(t *testing.T) {
	s := At(t.TempDir())
	z := artifactZip(t, "acme/lint", "1.0.0", "")
	if _, err := s.Publish(z, false); err != nil {
		t.Fatal(err)
	}
	_, sp, _ := s.Paths("acme/lint", "1.0.0")
	os.WriteFile(sp, []byte("garbage\n"), 0o644)
	_, err := s.Publish(z, false)
	if diag.Code(err) != "E-REG-003" || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("publish over a corrupt copy: %v", err)
	}
	if r, err := s.Publish(z, true); err != nil || r.SHA256 != HashHex(z) {
		t.Fatalf("forced repair: %v", err)
	}
	if _, err := s.Resolve("acme/lint", "1.0.0", noSecrets); err != nil {
		t.Fatalf("after repair: %v", err)
	}
}
