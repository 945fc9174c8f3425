//go:build linux

package contain_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/murmur-go/murmur/internal/contain"
)

type cached struct {
	Key    string          `json:"key"`
	Report *contain.Report `json:"report"`
}

func writeCache(t *testing.T, file, key string, r *contain.Report) {
	t.Helper()
	b, err := json.Marshal(cached{key, r})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readCache(t *testing.T, file string) cached {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var c cached
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// fullHost skips where the probe finds a mechanism missing: only such a
// host's answer is ever cached.
func fullHost(t *testing.T) *contain.Report {
	t.Helper()
	r := contain.Probe()
	if r.Lacks(contain.Sealed) != "" || !r.NetNS {
		t.Skipf("this host does not deliver every mechanism (%s; netns %v): its probe answer is never cached", r.Lacks(contain.Sealed), r.NetNS)
	}
	return r
}

func TestProbeCacheWrittenThenRead(t *testing.T) {
	real := fullHost(t)
	file := filepath.Join(t.TempDir(), "sub", "host-probe.json")
	if got := contain.ProbeFile(file); got.Best() != real.Best() || got.LandlockABI != real.LandlockABI {
		t.Fatalf("first answer %+v, the probe says %+v", got, real)
	}
	c := readCache(t, file)
	if c.Key != contain.HostKey() || c.Report == nil {
		t.Fatalf("cache holds key %q report %v, want key %q", c.Key, c.Report, contain.HostKey())
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache file mode: %v %v", fi.Mode(), err)
	}
	// A marked answer under the right key is what the next launch reads:
	// nothing is probed.
	c.Report.LandlockABI = 999
	writeCache(t, file, c.Key, c.Report)
	if got := contain.ProbeFile(file); got.LandlockABI != 999 {
		t.Fatalf("the cached answer was not read: Landlock ABI %d", got.LandlockABI)
	}
}

func TestProbeCacheIgnored(t *testing.T) {
	real := fullHost(t)
	key := contain.HostKey()
	negative := *real
	negative.Namespaces, negative.NamespacesBlocker = false, "cached: namespaces denied"
	marked := *real
	marked.LandlockABI = 999
	for _, c := range []struct {
		name string
		body func(file string)
	}{
		{"another host state's key", func(f string) { writeCache(t, f, "0000", &marked) }},
		{"no key", func(f string) { writeCache(t, f, "", &marked) }},
		// A negative answer is never trusted, even under this host's key:
		// it could hold commands a tier below what the host delivers.
		{"a negative answer", func(f string) { writeCache(t, f, key, &negative) }},
		{"not JSON", func(f string) { os.WriteFile(f, []byte("{\"key\":"), 0o600) }},
		{"no report", func(f string) { os.WriteFile(f, []byte(`{"key":"`+key+`"}`), 0o600) }},
		{"a directory", func(f string) { os.Mkdir(f, 0o700) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "host-probe.json")
			c.body(file)
			got := contain.ProbeFile(file)
			if got.LandlockABI != real.LandlockABI || !got.Namespaces || got.Best() != contain.Sealed {
				t.Fatalf("answer %+v: the file should have been ignored and the host probed (%+v)", got, real)
			}
			if fi, err := os.Stat(file); err == nil && !fi.IsDir() {
				if c := readCache(t, file); c.Key != key || c.Report.LandlockABI != real.LandlockABI || !c.Report.Namespaces {
					t.Fatalf("the probe's answer was not written back: %+v", c)
				}
			}
		})
	}
}

func TestProbeCacheUnwritable(t *testing.T) {
	// A launch that cannot write its answer still gets one.
	file := filepath.Join(t.TempDir(), "ro", "host-probe.json")
	os.MkdirAll(filepath.Dir(file), 0o500)
	r := contain.ProbeFile(file)
	if r == nil || r.OS != "linux" {
		t.Fatalf("no answer: %+v", r)
	}
	if os.Getuid() != 0 {
		if _, err := os.Stat(file); err == nil {
			t.Fatal("a cache file was written into a read-only directory")
		}
	}
}

func BenchmarkProbe(b *testing.B) {
	for _, bc := range []struct {
		name string
		file func() string
	}{
		{"uncached", func() string { return "" }},
		{"cached", func() string { return filepath.Join(b.TempDir(), "host-probe.json") }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			file := bc.file()
			contain.ProbeFile(file)
			for b.Loop() {
				contain.ProbeFile(file)
			}
		})
	}
}
