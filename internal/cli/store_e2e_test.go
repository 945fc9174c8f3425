package cli_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// The store end-to-end tests drive the real mur binary (murBin, built once per
// test process) through build -> publish -> install -> list -> doctor in a
// private HOME, and through the refusals a person can hit on the way.

var componentHeader = []byte{0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00}

// writeFiles writes files (relative path -> content) under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// toolDir writes a tool artifact name@version whose component body is body.
func toolDir(t testing.TB, dir, name, version, body string) string {
	t.Helper()
	writeFiles(t, dir, map[string]string{
		"murmur.yaml": fmt.Sprintf("name: %s\nversion: %q\nruntime: tool\ndescription: a test tool\n", name, version),
		"tool.wasm":   string(componentHeader) + body,
	})
	return dir
}

// expectFail checks a mur run failed with the diagnostic code (and exit status).
func expectFail(t *testing.T, r murResult, code string, status int) {
	t.Helper()
	if r.Code != status || !strings.Contains(r.Stderr, "error["+code+"]") {
		t.Fatalf("want exit %d with error[%s]; got exit %d\nstdout: %s\nstderr: %s", status, code, r.Code, r.Stdout, r.Stderr)
	}
}

func expectOK(t *testing.T, r murResult) {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
}

func TestStoreBuildPublishInstallListDoctor(t *testing.T) {
	base := t.TempDir()
	home, work := filepath.Join(base, "home"), filepath.Join(base, "work")
	os.MkdirAll(home, 0o755)
	os.MkdirAll(work, 0o755)

	// build + publish the repository's example agent capsule and a tool.
	r := runMur(t, home, work, nil, "build", filepath.Join(repoRoot(), "examples", "hello-agent"))
	expectOK(t, r)
	if _, err := os.Stat(filepath.Join(work, "hello-agent-0.1.0.mur.zip")); err != nil {
		t.Fatalf("build did not write hello-agent-0.1.0.mur.zip in the cwd: %v\n%s", err, r.Stdout)
	}
	expectOK(t, runMur(t, home, work, nil, "publish", "hello-agent-0.1.0.mur.zip"))
	// Publishing the same bytes again (the README's demo run twice) is a success.
	if r := runMur(t, home, work, nil, "publish", "hello-agent-0.1.0.mur.zip"); r.Code != 0 || !strings.Contains(r.Stdout, "already published (same bytes)") {
		t.Fatalf("second publish: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	lint := toolDir(t, filepath.Join(base, "lint"), "acme/lint", "1.0.0", "lint v1")
	expectOK(t, runMur(t, home, work, nil, "build", lint, "-o", filepath.Join(base, "lint.mur.zip")))
	// publish with no ZIP takes the zip mur build would write in the cwd.
	expectOK(t, runMur(t, home, lint, nil, "build"))
	expectOK(t, runMur(t, home, lint, nil, "publish"))

	r = runMur(t, home, work, nil, "list", "-g")
	expectOK(t, r)
	for _, want := range []string{"NAME", "VERSION", "RUNTIME", "SHA256", "SCOPE", "local/hello-agent", "acme/lint", "tool", "capsule", "global"} {
		if !strings.Contains(r.Stdout, want) {
			t.Fatalf("list -g lacks %q:\n%s", want, r.Stdout)
		}
	}

	// A project that declares the tool; install from a subdirectory.
	proj := filepath.Join(base, "proj")
	writeFiles(t, proj, map[string]string{
		"murmur.yaml":  "name: app\nversion: 0.1.0\nartifacts:\n  - name: acme/lint\n    version: \"1.0.0\"\n    runtime: tool\n",
		"capsule.wasm": string(componentHeader),
	})
	sub := filepath.Join(proj, "src", "deep")
	os.MkdirAll(sub, 0o755)
	r = runMur(t, home, sub, nil, "install")
	expectOK(t, r)
	lockData, err := os.ReadFile(filepath.Join(proj, "murmur.lock"))
	if err != nil {
		t.Fatalf("no murmur.lock: %v\n%s%s", err, r.Stdout, r.Stderr)
	}
	if !bytes.HasPrefix(lockData, []byte("lock_version: 1\nartifacts:\n  - name: acme/lint\n    version: 1.0.0\n    sha256: ")) {
		t.Fatalf("murmur.lock:\n%s", lockData)
	}
	if _, err := os.Stat(filepath.Join(proj, ".murmur", "artifacts", "acme", "lint", "1.0.0", "lint-1.0.0.mur.zip")); err != nil {
		t.Fatal("not installed into the project store")
	}
	r = runMur(t, home, sub, nil, "list")
	expectOK(t, r)
	if !strings.Contains(r.Stdout, "acme/lint") || !strings.Contains(r.Stdout, "project") || strings.Contains(r.Stdout, "hello-agent") {
		t.Fatalf("list (project):\n%s", r.Stdout)
	}
	r = runMur(t, home, sub, nil, "list", "--all")
	expectOK(t, r)
	if strings.Count(r.Stdout, "acme/lint") != 2 || !strings.Contains(r.Stdout, "hello-agent") {
		t.Fatalf("list --all:\n%s", r.Stdout)
	}
	r = runMur(t, home, proj, nil, "doctor")
	expectOK(t, r)
	if !strings.Contains(r.Stdout, "ok    acme/lint@1.0.0") || !strings.Contains(r.Stdout, "matches murmur.lock") {
		t.Fatalf("doctor:\n%s", r.Stdout)
	}

	// install REF forms: a zip path, and name@version from the global store.
	expectOK(t, runMur(t, home, proj, nil, "install", filepath.Join(work, "hello-agent-0.1.0.mur.zip")))
	expectOK(t, runMur(t, home, proj, nil, "install", "local/hello-agent@0.1.0"))
	expectFail(t, runMur(t, home, proj, nil, "install", "acme/nothing@1.0.0"), "E-REG-001", 1)
	expectFail(t, runMur(t, home, proj, nil, "install", "no-version"), "E-REG-014", 1)
	expectFail(t, runMur(t, home, proj, nil, "install", "acme/lint@latest"), "E-REG-004", 1)

	// The global copy changes (forced republish): the project copy is still
	// pinned, so doctor is fine; then the project copy is replaced too, and the
	// lock refuses it.
	lint2 := toolDir(t, filepath.Join(base, "lint2"), "acme/lint", "1.0.0", "lint v2")
	expectOK(t, runMur(t, home, work, nil, "build", lint2, "-o", filepath.Join(base, "lint2.mur.zip")))
	expectFail(t, runMur(t, home, work, nil, "publish", filepath.Join(base, "lint2.mur.zip")), "E-REG-003", 1)
	expectOK(t, runMur(t, home, work, nil, "publish", "--force", filepath.Join(base, "lint2.mur.zip")))
	expectOK(t, runMur(t, home, proj, nil, "doctor"))
	expectFail(t, runMur(t, home, proj, nil, "install", "acme/lint@1.0.0"), "E-REG-003", 1)
	expectOK(t, runMur(t, home, proj, nil, "install", "--force", "acme/lint@1.0.0"))
	r = runMur(t, home, proj, nil, "doctor")
	expectFail(t, r, "E-REG-018", 1)
	if !strings.Contains(r.Stdout, "FAIL  acme/lint@1.0.0") || !strings.Contains(r.Stderr, "error[E-REG-005]") {
		t.Fatalf("doctor after the bytes changed:\n%s\n%s", r.Stdout, r.Stderr)
	}
	// mur install re-pins; doctor is clean again.
	expectOK(t, runMur(t, home, proj, nil, "install"))
	expectOK(t, runMur(t, home, proj, nil, "doctor"))

	// Tampering with the installed zip: doctor names the hash mismatch.
	zp := filepath.Join(proj, ".murmur", "artifacts", "acme", "lint", "1.0.0", "lint-1.0.0.mur.zip")
	good, _ := os.ReadFile(zp)
	os.WriteFile(zp, append(append([]byte{}, good...), 0), 0o644)
	r = runMur(t, home, proj, nil, "doctor")
	expectFail(t, r, "E-REG-018", 1)
	if !strings.Contains(r.Stderr, "error[E-REG-002]") || strings.Contains(r.Stdout, "error[") {
		t.Fatalf("doctor after tampering (errors on stderr only):\n%s\n%s", r.Stdout, r.Stderr)
	}
	os.WriteFile(zp, good, 0o644)

	// A declared artifact nobody published: install fails, the lock is kept.
	lockBefore, _ := os.ReadFile(filepath.Join(proj, "murmur.lock"))
	writeFiles(t, proj, map[string]string{"murmur.yaml": "name: app\nversion: 0.1.0\nartifacts:\n  - name: acme/lint\n    version: \"1.0.0\"\n  - name: acme/missing\n    version: \"3.0.0\"\n"})
	r = runMur(t, home, proj, nil, "install")
	expectFail(t, r, "E-REG-019", 1)
	if !strings.Contains(r.Stderr, "error[E-REG-001]") {
		t.Fatalf("install did not name the missing artifact:\n%s", r.Stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(proj, "murmur.lock")); !bytes.Equal(after, lockBefore) {
		t.Fatal("a failed install changed murmur.lock")
	}
	r = runMur(t, home, proj, nil, "doctor")
	expectFail(t, r, "E-REG-018", 1)
	if !strings.Contains(r.Stdout, "FAIL  acme/missing@3.0.0") || !strings.Contains(r.Stderr, "E-REG-005") {
		t.Fatalf("doctor with an unpinned declared artifact:\n%s\n%s", r.Stdout, r.Stderr)
	}
	// Without the lock, resolution is presence-only: the missing one is E-REG-001.
	os.Remove(filepath.Join(proj, "murmur.lock"))
	r = runMur(t, home, proj, nil, "doctor")
	expectFail(t, r, "E-REG-018", 1)
	if !strings.Contains(r.Stdout, "ok    acme/lint@1.0.0") || !strings.Contains(r.Stderr, "error[E-REG-001]") {
		t.Fatalf("doctor presence-only:\n%s\n%s", r.Stdout, r.Stderr)
	}
	// A broken lock is a coded failure, not a pass.
	os.WriteFile(filepath.Join(proj, "murmur.lock"), []byte("lock_version: 7\n"), 0o644)
	expectFail(t, runMur(t, home, proj, nil, "doctor"), "E-REG-018", 1)
}

func TestStoreCLIRefusals(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	os.MkdirAll(home, 0o755)
	core := string([]byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00})
	tests := []struct {
		name   string
		files  map[string]string
		args   []string
		env    []string
		code   string
		status int
	}{
		{name: "build core module", files: map[string]string{"murmur.yaml": "name: s\nversion: 1.0.0\n", "capsule.wasm": core}, args: []string{"build"}, code: "E-BLD-003", status: 1},
		{name: "build not wasm", files: map[string]string{"murmur.yaml": "name: s\nversion: 1.0.0\n", "capsule.wasm": "MZ\x90\x00"}, args: []string{"build"}, code: "E-BLD-004", status: 1},
		{name: "build literal secret", files: map[string]string{"murmur.yaml": "name: a\nversion: 1.0.0\nartifacts:\n  - name: x/d\n    version: \"1\"\n    runtime: driver\n    gateway:\n      endpoint: https://api.example.com\n      api_key: sk-live-abc\ninference:\n  model: m\n  driver:\n    artifact: x/d\n"}, args: []string{"build"}, code: "E-BLD-002", status: 1},
		{name: "build bad yaml", files: map[string]string{"murmur.yaml": "name: [\n"}, args: []string{"build"}, code: "E-MAN-002", status: 1},
		{name: "build no manifest", files: map[string]string{"x": ""}, args: []string{"build"}, code: "E-BLD-001", status: 1},
		{name: "build output unwritable", files: map[string]string{"murmur.yaml": "name: s\nversion: 1.0.0\n", "capsule.wasm": string(componentHeader)}, args: []string{"build", "-o", "/nonexistent-dir/x.zip"}, code: "E-IO-004", status: 1},
		{name: "publish no zip, no manifest", files: map[string]string{"x": ""}, args: []string{"publish"}, code: "E-REG-015", status: 1},
		{name: "publish missing zip", files: map[string]string{"x": ""}, args: []string{"publish", "nope.mur.zip"}, code: "E-IO-001", status: 1},
		{name: "publish not a zip", files: map[string]string{"bad.mur.zip": "hello"}, args: []string{"publish", "bad.mur.zip"}, code: "E-REG-010", status: 1},
		{name: "publish truncated zip", files: map[string]string{"t.mur.zip": "PK\x03\x04\x14\x00\x00\x00\x08\x00"}, args: []string{"publish", "t.mur.zip"}, code: "E-REG-010", status: 1},
		{name: "publish with unusable ceiling", files: map[string]string{"bad.mur.zip": "hello"}, args: []string{"publish", "bad.mur.zip"}, env: []string{"MURMUR_MAX_ARTIFACT_DECOMPRESSED_BYTES=lots"}, code: "E-REG-016", status: 1},
		{name: "list outside a project", files: map[string]string{"x": ""}, args: []string{"list"}, code: "E-REG-017", status: 1},
		{name: "doctor outside a project", files: map[string]string{"x": ""}, args: []string{"doctor"}, code: "E-REG-017", status: 1},
		{name: "install outside a project", files: map[string]string{"x": ""}, args: []string{"install"}, code: "E-REG-017", status: 1},
		{name: "install -g without ref", files: map[string]string{"x": ""}, args: []string{"install", "-g"}, code: "E-CFG-001", status: 2},
		{name: "list extra arg", files: map[string]string{"x": ""}, args: []string{"list", "extra"}, code: "E-CFG-001", status: 2},
		{name: "list -g and --all", files: map[string]string{"x": ""}, args: []string{"list", "-g", "--all"}, code: "E-CFG-001", status: 2},
		{name: "build unknown flag", files: map[string]string{"x": ""}, args: []string{"build", "--nope"}, code: "E-CFG-001", status: 2},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(base, fmt.Sprint("case", i))
			writeFiles(t, dir, tc.files)
			before := tree(t, home)
			r := runMur(t, home, dir, tc.env, tc.args...)
			expectFail(t, r, tc.code, tc.status)
			if after := tree(t, home); after != before {
				t.Fatalf("a refused command changed HOME:\n%s\nvs\n%s", before, after)
			}
		})
	}
	// HOME unset.
	cmd := exec.Command(murBin(t), "list", "-g")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Run(); err == nil || !strings.Contains(se.String(), "error[E-IO-003]") {
		t.Fatalf("HOME unset: %v %s", err, se.String())
	}
}

// bigZip builds a tool artifact whose component holds n incompressible bytes.
func bigZip(t *testing.T, base, name string, n int) string {
	t.Helper()
	body := make([]byte, n)
	rand.New(rand.NewSource(int64(n))).Read(body)
	d := toolDir(t, filepath.Join(base, name), "acme/"+name, "1.0.0", string(body))
	out := filepath.Join(base, name+".mur.zip")
	expectOK(t, runMur(t, filepath.Join(base, "buildhome"), base, nil, "build", d, "-o", out))
	return out
}

func TestStorePublishRace(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	a := filepath.Join(base, "a.mur.zip")
	b := filepath.Join(base, "b.mur.zip")
	expectOK(t, runMur(t, home, base, nil, "build", toolDir(t, filepath.Join(base, "a"), "acme/race", "1.0.0", "AAAA"), "-o", a))
	expectOK(t, runMur(t, home, base, nil, "build", toolDir(t, filepath.Join(base, "b"), "acme/race", "1.0.0", "BBBB"), "-o", b))
	for round := 0; round < 4; round++ {
		os.RemoveAll(filepath.Join(home, ".murmur"))
		var wg sync.WaitGroup
		res := make([]murResult, 4)
		zips := []string{a, b, a, b}
		for i := range res {
			wg.Add(1)
			go func(i int) { defer wg.Done(); res[i] = runMur(t, home, base, nil, "publish", zips[i]) }(i)
		}
		wg.Wait()
		// Exactly one content won; every publisher of it succeeded, every
		// publisher of the other got E-REG-003.
		l := runMur(t, home, base, nil, "list", "-g")
		expectOK(t, l)
		var winner string
		for i, r := range res {
			if r.Code == 0 {
				if winner != "" && winner != zips[i] {
					t.Fatalf("round %d: both contents won", round)
				}
				winner = zips[i]
			}
		}
		if winner == "" {
			t.Fatalf("round %d: nobody won: %+v", round, res)
		}
		for i, r := range res {
			if zips[i] != winner && (r.Code != 1 || !strings.Contains(r.Stderr, "error[E-REG-003]")) {
				t.Fatalf("round %d: loser %d got exit %d: %s", round, i, r.Code, r.Stderr)
			}
		}
		// The store holds exactly the winner, whole.
		want, _ := os.ReadFile(winner)
		got, err := os.ReadFile(filepath.Join(home, ".murmur", "artifacts", "acme", "race", "1.0.0", "race-1.0.0.mur.zip"))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("round %d: stored bytes are not the winner's (%v)", round, err)
		}
		if ents, _ := os.ReadDir(filepath.Join(home, ".murmur", "artifacts", "acme", "race")); len(ents) != 1 {
			t.Fatalf("round %d: leftovers %v", round, ents)
		}
	}
}

// mountTmpfs mounts a tmpfs of the given options at dir, or skips the test with
// the reason when this host does not permit it.
func mountTmpfs(t *testing.T, dir, opts string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Skipf("skipping: cannot mount a tmpfs here (%v); needs root with CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
}

func TestStorePublishDiskFull(t *testing.T) {
	base := t.TempDir()
	zip := bigZip(t, base, "big", 2<<20)
	home := filepath.Join(base, "home")
	mountTmpfs(t, filepath.Join(home, ".murmur"), "size=1m")
	// Something already in the store must survive the failed publish.
	small := bigZip(t, base, "small", 10<<10)
	expectOK(t, runMur(t, home, base, nil, "publish", small))
	before := tree(t, home)
	r := runMur(t, home, base, nil, "publish", zip)
	expectFail(t, r, "E-IO-002", 1)
	if after := tree(t, home); after != before {
		t.Fatalf("a disk-full publish changed the store:\n%s\nvs\n%s", before, after)
	}
	expectOK(t, runMur(t, home, base, nil, "list", "-g"))
}

func TestStorePublishUnwritable(t *testing.T) {
	base := t.TempDir()
	zip := bigZip(t, base, "tiny", 100)
	// A file where the store directory belongs (root ignores permission bits).
	home := filepath.Join(base, "home")
	writeFiles(t, home, map[string]string{".murmur/artifacts": "not a directory"})
	before := tree(t, home)
	expectFail(t, runMur(t, home, base, nil, "publish", zip), "E-IO-002", 1)
	if tree(t, home) != before {
		t.Fatal("store changed")
	}
	// A read-only filesystem.
	home2 := filepath.Join(base, "home2")
	mountTmpfs(t, filepath.Join(home2, ".murmur"), "size=1m,mode=0755")
	if err := syscall.Mount("", filepath.Join(home2, ".murmur"), "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Skipf("skipping the read-only case: remount refused (%v)", err)
	}
	expectFail(t, runMur(t, home2, base, nil, "publish", zip), "E-IO-002", 1)
}

// BenchmarkMurBuild5MB is the wall time of one real `mur build` process on a
// capsule with a 5 MB component (process start included).
func BenchmarkMurBuild5MB(b *testing.B) {
	base := b.TempDir()
	body := make([]byte, 5<<20)
	rand.New(rand.NewSource(5)).Read(body[:len(body)/2]) // half noise, half zeros
	dir := filepath.Join(base, "cap")
	writeFiles(b, dir, map[string]string{
		"murmur.yaml":  "name: big\nversion: 1.0.0\n",
		"capsule.wasm": string(componentHeader) + string(body[8:]),
	})
	bin := murBin(b)
	out := filepath.Join(base, "big.mur.zip")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, "build", dir, "-o", out)
		cmd.Env = []string{"HOME=" + base}
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("mur build: %v\n%s", err, o)
		}
	}
}

// TestStoreInstallHostileZip: a zip bomb, a truncated zip and a zip with
// escaping entries are handled at install, and a refusal writes nothing.
func TestStoreInstallHostileZip(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	proj := filepath.Join(base, "proj")
	writeFiles(t, proj, map[string]string{"murmur.yaml": "name: app\nversion: 0.1.0\n", "capsule.wasm": string(componentHeader)})
	mk := func(name string, ents map[string][]byte) string {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for n, d := range ents {
			w, _ := zw.Create(n)
			w.Write(d)
		}
		zw.Close()
		p := filepath.Join(base, name)
		os.WriteFile(p, buf.Bytes(), 0o644)
		return p
	}
	yaml := []byte("name: acme/t\nversion: 1.0.0\nruntime: tool\n")
	bomb := mk("bomb.mur.zip", map[string][]byte{"murmur.yaml": yaml, "tool.wasm": append(append([]byte{}, componentHeader...), make([]byte, 8<<20)...)})
	good := mk("good.mur.zip", map[string][]byte{"murmur.yaml": yaml, "tool.wasm": componentHeader})
	gb, _ := os.ReadFile(good)
	trunc := filepath.Join(base, "trunc.mur.zip")
	os.WriteFile(trunc, gb[:len(gb)-10], 0o644)
	escape := mk("escape.mur.zip", map[string][]byte{"murmur.yaml": yaml, "tool.wasm": componentHeader, "../../evil": []byte("x")})

	ceiling := []string{"MURMUR_MAX_ARTIFACT_DECOMPRESSED_BYTES=1048576"}
	expectFail(t, runMur(t, home, proj, ceiling, "install", bomb), "E-REG-011", 1)
	expectFail(t, runMur(t, home, proj, nil, "install", trunc), "E-REG-010", 1)
	if _, err := os.Stat(filepath.Join(proj, ".murmur")); !os.IsNotExist(err) {
		t.Fatalf("a refused install wrote into the project (%v)", err)
	}
	// The bomb is fine under the default 500 MB ceiling.
	expectOK(t, runMur(t, home, proj, nil, "install", bomb))
	// The escaping entry is ignored by every reader; nothing lands outside.
	expectOK(t, runMur(t, home, proj, nil, "install", "--force", escape))
	if _, err := os.Stat(filepath.Join(base, "evil")); !os.IsNotExist(err) {
		t.Fatal("an escaping entry was written")
	}
	expectOK(t, runMur(t, home, proj, nil, "doctor"))
}
