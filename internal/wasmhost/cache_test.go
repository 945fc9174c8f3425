package wasmhost

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestCacheHitAndCorruption(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "compiled")
	e, err := NewEngine(Config{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("cache dir mode %v, %v", st.Mode(), err)
	}
	src, _ := os.ReadFile("testdata/basic.wat")

	c1, err := e.Compile(src)
	if err != nil || c1.FromCache {
		t.Fatalf("first compile: cached=%v err=%v", c1 != nil && c1.FromCache, err)
	}
	c1.Close()
	path := e.cachePath(src)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no cache entry: %v", err)
	}

	c2, err := e.Compile(src)
	if err != nil || !c2.FromCache {
		t.Fatalf("second compile not from cache: %v", err)
	}
	runAdd(t, e, c2)
	c2.Close()

	// Damage the entry in ways that keep its size, then truncate it: each is
	// detected before wasmtime sees it, deleted and rebuilt.
	good, _ := os.ReadFile(path)
	damage := map[string][]byte{
		"flipped payload byte": flip(good, len(good)-100),
		"flipped early byte":   flip(good, 10),
		"truncated":            good[:len(good)/2],
		"bad magic":            append([]byte("XXXXXXXX"), good[8:]...),
		"empty":                {},
	}
	for name, bad := range damage {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := e.Compile(src)
			if err != nil {
				t.Fatal(err)
			}
			if c.FromCache {
				t.Fatal("a damaged cache entry was loaded")
			}
			runAdd(t, e, c)
			c.Close()
			rebuilt, _ := os.ReadFile(path)
			if !bytes.Equal(rebuilt[:8], good[:8]) || len(rebuilt) < 100 {
				t.Fatal("entry not rebuilt")
			}
		})
	}

	// Damage to the MAC file, or its absence, rejects the entry too.
	macPath := strings.TrimSuffix(path, ".cwasm") + ".mac"
	goodMAC, err := os.ReadFile(macPath)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]byte{"flipped tag": flip(goodMAC, len(goodMAC)-1), "flipped nonce": flip(goodMAC, 10), "short": goodMAC[:20], "missing": nil} {
		t.Run("mac "+name, func(t *testing.T) {
			if bad == nil {
				os.Remove(macPath)
			} else if err := os.WriteFile(macPath, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := e.Compile(src)
			if err != nil || c.FromCache {
				t.Fatalf("cached=%v err=%v", c != nil && c.FromCache, err)
			}
			runAdd(t, e, c)
			c.Close()
			c, err = e.Compile(src) // rebuilt: a hit again
			if err != nil || !c.FromCache {
				t.Fatalf("not rebuilt: %v", err)
			}
			c.Close()
		})
	}

	// An entry written under another key (another machine, an attacker
	// without the key) is not trusted either.
	e2, err := NewEngine(Config{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	c, _ := e2.Compile(src)
	c.Close()
	foreign, _ := os.ReadFile(e2.cachePath(src))
	foreignMAC, _ := os.ReadFile(strings.TrimSuffix(e2.cachePath(src), ".cwasm") + ".mac")
	os.WriteFile(path, foreign, 0o600)
	os.WriteFile(macPath, foreignMAC, 0o600)
	c, err = e.Compile(src)
	if err != nil || c.FromCache {
		t.Fatalf("foreign entry loaded (cached=%v, err=%v)", c.FromCache, err)
	}
	c.Close()
}

func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 0x5a
	return out
}

func runAdd(t *testing.T, e *Engine, c *Component) {
	t.Helper()
	i, err := instantiateFull(e, bg, c, RunConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer i.Close()
	if v, err := i.Call(bg, "", "add", uint32(20), uint32(22)); err != nil || v != uint32(42) {
		t.Fatalf("add = %v, %v", v, err)
	}
}

func TestCacheDirUnusable(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o600)
	_, err := NewEngine(Config{CacheDir: f})
	if err == nil || !strings.Contains(err.Error(), "E-RUN-102") {
		t.Fatalf("cache dir over a file: %v", err)
	}
}

func TestHostileComponentBytes(t *testing.T) {
	src, _ := os.ReadFile("testdata/basic.wat")
	valid, err := testEngine.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	valid.Close()
	coreModule := []byte("\x00asm\x01\x00\x00\x00")
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(i*7919 + i>>3)
	}
	header := []byte("\x00asm\x0d\x00\x01\x00")
	cases := map[string][]byte{
		"empty":               nil,
		"core module":         coreModule,
		"core module w/ func": append(coreModule, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00),
		"random":              random,
		"truncated header":    header[:6],
		"header + garbage":    append(append([]byte{}, header...), random[:100]...),
		"bad wat":             []byte("(component (core module $m (func (export \"f\") (unknown-instr))))"),
		"invalid utf-8 text":  []byte("(component \xff\xfe)"),
		"wat core module":     []byte("(module (func (export \"f\")))"),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := testEngine.Compile(b)
			if err == nil {
				c.Close()
				t.Fatal("hostile bytes compiled")
			}
			if !strings.Contains(err.Error(), "E-RUN-100") {
				t.Fatalf("error without code: %v", err)
			}
		})
	}
	// The bare header is a valid, empty component: it compiles, and has no
	// capsule run to call.
	empty, err := testEngine.Compile(header)
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	i, err := instantiateFull(testEngine, bg, empty, RunConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer i.Close()
	if err := callCapsuleRun(i); err == nil || !strings.Contains(err.Error(), "E-RUN-103") {
		t.Fatalf("run on an empty component: %v", err)
	}
	// Truncations of a real binary component.
	bin := binaryOf(t, src)
	for _, n := range []int{9, len(bin) / 3, len(bin) / 2, len(bin) - 1} {
		if c, err := testEngine.Compile(bin[:n]); err == nil {
			c.Close()
			t.Errorf("component truncated to %d bytes compiled", n)
		}
	}
}

// binaryOf returns the binary form of a WAT component (wasmtime serializes
// only compiled artefacts, so build one by hand from the cache-less path:
// the WAT text itself is parsed by wasmtime; for truncation we need binary).
func binaryOf(t *testing.T, wat []byte) []byte {
	t.Helper()
	b, err := parseWAT(wat)
	if err != nil {
		t.Skip("no WAT-to-binary converter:", err)
	}
	return b
}

func TestUnsupportedImportKinds(t *testing.T) {
	// Values of async types would abort the process inside wasmtime 39's C
	// API, and core-module imports cannot be provided: such components fail
	// to instantiate with a diagnostic, never abort.
	for _, src := range []string{
		`(component (import "a:b/c" (instance (export "f" (func (param "x" error-context))))))`,
		`(component (import "f" (func (result error-context))))`,
		`(component (import "m" (core module)))`,
	} {
		c, err := testEngine.Compile([]byte(src))
		if err != nil {
			continue // refused at compile time is fine too
		}
		i, err := instantiateFull(testEngine, bg, c, RunConfig{})
		if err == nil {
			i.Close()
			t.Errorf("%s instantiated", src)
		} else if !strings.Contains(err.Error(), "E-RUN-101") {
			t.Errorf("%s: %v", src, err)
		}
		c.Close()
	}
}

func TestEngineCloseRefusedWithLiveInstances(t *testing.T) {
	e, err := NewEngine(Config{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	src, _ := os.ReadFile("testdata/basic.wat")
	c, err := e.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	i, err := instantiateFull(e, bg, c, RunConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err == nil {
		t.Fatal("engine closed under a live instance")
	}
	if v, err := i.Call(bg, "", "add", uint32(1), uint32(1)); err != nil || v != uint32(2) {
		t.Fatalf("instance unusable after the refused close: %v, %v", v, err)
	}
	i.Close()
	c.Close()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Compile(src); err != ErrClosed {
		t.Fatalf("compile on a closed engine: %v", err)
	}
}

// TestComponentCloseUnderLiveInstances: closing a component while instances
// of it are open used to free what their stores still used (a later
// Instantiate of it crashed the process). Now the open instances keep it,
// calls through them (including functions not called before) still work,
// a new Instantiate is refused, and the last Close frees it.
func TestComponentCloseUnderLiveInstances(t *testing.T) {
	src, _ := os.ReadFile("testdata/basic.wat")
	c, err := testEngine.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	a, err := instantiateFull(testEngine, bg, c, RunConfig{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := instantiateFull(testEngine, bg, c, RunConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := a.Call(bg, "", "add", uint32(1), uint32(1)); err != nil || v != uint32(2) {
		t.Fatalf("add: %v, %v", v, err)
	}
	c.Close()
	c.Close()
	if _, err := instantiateFull(testEngine, bg, c, RunConfig{}); err != ErrClosed {
		t.Fatalf("instantiate a closed component: %v, want ErrClosed", err)
	}
	if v, err := a.Call(bg, "", "add", uint32(2), uint32(3)); err != nil || v != uint32(5) {
		t.Fatalf("add after the component's Close: %v, %v", v, err)
	}
	a.Close()
	// b's first call resolves an export after the component was closed.
	asTrap(t, func() error { _, err := b.Call(bg, "", "trap"); return err }())
	if c.freed {
		t.Fatal("component freed under an open instance")
	}
	b.Close()
	if !c.freed {
		t.Fatal("component not freed with its last instance")
	}
	if _, err := instantiateFull(testEngine, bg, c, RunConfig{}); err != ErrClosed {
		t.Fatalf("instantiate a freed component: %v", err)
	}
}

// TestEngineCloseRacesInstantiate: Close racing with Compile and Instantiate
// on other goroutines either waits for them (refused while they are open) or
// makes them fail with ErrClosed; never frees the engine under them.
func TestEngineCloseRacesInstantiate(t *testing.T) {
	src, _ := os.ReadFile("testdata/basic.wat")
	for range 20 {
		e, err := NewEngine(Config{NoCache: true})
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if c2, err := e.Compile(src); err == nil {
					c2.Close()
				} else if err != ErrClosed {
					t.Error(err)
				}
				i, err := instantiateFull(e, bg, c, RunConfig{})
				if err != nil {
					if err != ErrClosed {
						t.Error(err)
					}
					return
				}
				if v, err := i.Call(bg, "", "add", uint32(1), uint32(2)); err != nil || v != uint32(3) {
					t.Errorf("add: %v, %v", v, err)
				}
				i.Close()
			}()
		}
		for e.Close() != nil {
			runtime.Gosched()
		}
		wg.Wait()
		c.Close()
	}
}

// The MAC key can live apart from the cache (Murmur keeps it in
// ~/.murmur/keys): a reader of the cache directory finds no key there, and
// a key file others may read is refused rather than trusted.
func TestCacheKeyApart(t *testing.T) {
	dir, keys := t.TempDir(), t.TempDir()
	kf := filepath.Join(keys, "compiled.key")
	eng, err := NewEngine(Config{CacheDir: dir, KeyFile: kf})
	if err != nil {
		t.Fatal(err)
	}
	eng.Close()
	if _, err := os.Stat(filepath.Join(dir, keyFile)); !os.IsNotExist(err) {
		t.Errorf("a key was left in the cache dir: %v", err)
	}
	st, err := os.Stat(kf)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v, %v", st, err)
	}
	os.Chmod(kf, 0o644)
	if _, err := NewEngine(Config{CacheDir: dir, KeyFile: kf}); err == nil || !strings.Contains(err.Error(), "readable or writable by others") {
		t.Errorf("a world-readable key was used: %v", err)
	}
}

// A caller's digest names the entry (the bytes are not hashed again), a
// Cranelift compile is announced through OnCompile and a cache hit is not,
// and an entry whose file was rewritten with its very own bytes is still
// refused: the MAC binds the file's identity, which any write changes.
func TestCacheDigestAndIdentity(t *testing.T) {
	dir := t.TempDir()
	var compiled []string
	e, err := NewEngine(Config{CacheDir: dir, OnCompile: func(name string) { compiled = append(compiled, name) }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	src, _ := os.ReadFile("testdata/basic.wat")
	opts := CompileOptions{Name: "basic@1.0.0", Digest: "0123abcd/basic.wasm"}
	for i, want := range []bool{false, true} {
		c, err := e.CompileWith(src, opts)
		if err != nil {
			t.Fatal(err)
		}
		if c.FromCache != want {
			t.Fatalf("compile %d: from cache %v, want %v", i, c.FromCache, want)
		}
		runAdd(t, e, c)
		c.Close()
	}
	if len(compiled) != 1 || compiled[0] != "basic@1.0.0" {
		t.Fatalf("OnCompile heard %q, want one basic@1.0.0", compiled)
	}
	// The digest, not the bytes, names the entry: the plain name is a miss.
	if _, err := os.Stat(e.cachePath(src)); !os.IsNotExist(err) {
		t.Fatalf("an entry named by the bytes' hash exists: %v", err)
	}
	c, err := e.CompileWith(src, CompileOptions{Digest: "another/basic.wasm"})
	if err != nil || c.FromCache {
		t.Fatalf("another digest: cached=%v err=%v", c != nil && c.FromCache, err)
	}
	c.Close()

	entry := filepath.Join(dir, cacheName(sourceID(nil, opts.Digest))+".cwasm")
	same, err := os.ReadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(entry, same, 0o600); err != nil { // same bytes, same size, in place
		t.Fatal(err)
	}
	c, err = e.CompileWith(src, opts)
	if err != nil || c.FromCache {
		t.Fatalf("a rewritten entry was trusted: cached=%v err=%v", c != nil && c.FromCache, err)
	}
	c.Close()
	c, err = e.CompileWith(src, opts) // rebuilt and MACed again
	if err != nil || !c.FromCache {
		t.Fatalf("not rebuilt: %v", err)
	}
	c.Close()
	if len(compiled) != 3 {
		t.Fatalf("OnCompile heard %q, want three compiles", compiled)
	}
}

// The clock helper goes through the compile cache: a second engine (the
// next mur run) loads it instead of compiling it.
func TestClockHelperCached(t *testing.T) {
	dir := t.TempDir()
	for i, want := range []bool{false, true} {
		e, err := NewEngine(Config{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		h, err := e.clockHelper()
		if err != nil {
			t.Fatal(err)
		}
		if h.FromCache != want {
			t.Errorf("engine %d: helper from cache %v, want %v", i, h.FromCache, want)
		}
		e.Close()
	}
}

// CompileDigest reads the bytes only on a miss: a hit is loaded by the
// digest alone, and a load's refusal is the caller's error, unwrapped.
func TestCompileDigestLoadsOnMiss(t *testing.T) {
	e, err := NewEngine(Config{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	src, _ := os.ReadFile("testdata/basic.wat")
	opts := CompileOptions{Name: "basic@1.0.0", Digest: "0123abcd/basic.wasm"}
	loads := 0
	load := func() ([]byte, error) { loads++; return src, nil }
	for i, want := range []struct {
		fromCache bool
		loads     int
	}{{false, 1}, {true, 1}} {
		c, err := e.CompileDigest(opts, load)
		if err != nil {
			t.Fatal(err)
		}
		if c.FromCache != want.fromCache || loads != want.loads {
			t.Fatalf("compile %d: from cache %v after %d loads, want %v after %d", i, c.FromCache, loads, want.fromCache, want.loads)
		}
		runAdd(t, e, c)
		c.Close()
	}
	refused := errors.New("the bytes changed")
	if _, err := e.CompileDigest(CompileOptions{Digest: "other/basic.wasm"}, func() ([]byte, error) { return nil, refused }); !errors.Is(err, refused) {
		t.Fatalf("a miss whose load fails: %v", err)
	}
}
