package tools

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/session"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

const (
	watEcho   = "../wasmhost/testdata/echo_tool.wat"
	goKitEcho = "../../testdata/components/tool-echo/tool-echo.wasm"
)

const echoCapsule = `name: local/user
version: "0.1.0"
artifacts:
  - name: local/echo
    version: "0.1.0"
`

// wasmFixture is a session of a capsule declaring one WASM tool,
// local/echo@0.1.0, published to a real project store and resolved the way
// a launch resolves it.
type wasmFixture struct {
	root     string
	m        *manifest.Manifest
	grants   manifest.Grants
	resolved []*store.Resolved
	sess     *session.Session
}

func newWASMFixture(tb testing.TB, componentPath string) *wasmFixture {
	tb.Helper()
	wasm, err := os.ReadFile(componentPath)
	if err != nil {
		tb.Skip("no component:", err)
	}
	f := &wasmFixture{root: tb.TempDir()}
	home, project := filepath.Join(f.root, "home"), filepath.Join(f.root, "project")
	for _, d := range []string{home, project} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			tb.Fatal(err)
		}
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("murmur.yaml")
	fmt.Fprintf(w, "name: local/echo\nversion: \"0.1.0\"\nruntime: tool\n")
	w, _ = zw.CreateHeader(&zip.FileHeader{Name: "echo.wasm", Method: zip.Store})
	w.Write(wasm)
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	st := store.Project(project)
	if _, err := st.Publish(buf.Bytes(), false); err != nil {
		tb.Fatal(err)
	}
	r, err := st.Resolve("local/echo", "0.1.0", manifest.Options{SkipSecrets: true})
	if err != nil {
		tb.Fatal(err)
	}
	f.resolved = []*store.Resolved{r}
	if f.m, err = manifest.Parse([]byte(echoCapsule), filepath.Join(project, "murmur.yaml"), manifest.Options{SkipSecrets: true}); err != nil {
		tb.Fatal(err)
	}
	f.grants, _ = f.m.EffectiveGrants()
	f.sess, err = session.New(session.Config{Home: home, ManifestDir: project, Name: f.m.Name, Version: f.m.Version,
		ManifestYAML: []byte(echoCapsule)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.sess.Close() })
	return f
}

// engine is an engine over the fixture's compile cache (shared by every
// engine of the fixture, as by successive runs), reporting compiles to
// onCompile.
func (f *wasmFixture) engine(tb testing.TB, onCompile func(string)) *wasmhost.Engine {
	tb.Helper()
	eng, err := wasmhost.NewEngine(wasmhost.Config{CacheDir: filepath.Join(f.root, "compiled"),
		KeyFile: filepath.Join(f.root, "keys", "compiled.key"), OnCompile: onCompile})
	if err != nil {
		tb.Fatal(err)
	}
	return eng
}

func (f *wasmFixture) tool(tb testing.TB, env *Env) *WASM {
	tb.Helper()
	inv, err := Build(env, f.m, f.grants, f.resolved)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(inv.Close)
	t, ok := inv.byName["local/echo"].(*WASM)
	if !ok {
		tb.Fatalf("no WASM tool local/echo in %v", inv.byName)
	}
	return t
}

// cpuTime is the process's CPU time so far: on a shared machine, CPU per
// invoke is steadier than wall time.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

var echoInput = wit.ToolInput{Data: ptr("hello, tool")}

func ptr(s string) *string { return &s }

// A launch compiles every tool before the session starts (Preload): the
// first call then compiles nothing, so a tool_call's duration holds no
// compile, and the compile is announced once, by name@version. The next
// run's engine loads the tool from the cache the resolve's digest names,
// announcing nothing.
func TestPreloadKeepsCompilesOutOfCalls(t *testing.T) {
	f := newWASMFixture(t, watEcho)
	var mu sync.Mutex
	var heard []string
	onCompile := func(name string) { mu.Lock(); heard = append(heard, name); mu.Unlock() }
	for run, want := range [][]string{{"local/echo@0.1.0"}, nil} {
		heard = nil
		eng := f.engine(t, onCompile)
		pre := Preload(eng, f.m, f.resolved)
		if l := pre["local/echo@0.1.0"]; l.Err != nil || l.Comp == nil {
			t.Fatalf("run %d: preload: %+v", run, l)
		}
		if fmt.Sprint(heard) != fmt.Sprint(want) {
			t.Fatalf("run %d: compiles announced %q, want %q", run, heard, want)
		}
		tool := f.tool(t, &Env{Engine: eng, Session: f.sess, Preloaded: pre})
		res, err := tool.Run(context.Background(), Invocation{Input: echoInput})
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if res.Data == nil || *res.Data == "" {
			t.Fatalf("run %d: echo answered %+v", run, res)
		}
		if fmt.Sprint(heard) != fmt.Sprint(want) {
			t.Fatalf("run %d: the call compiled: %q", run, heard)
		}
		tool.Close()
		pre.Close()
		if err := eng.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A tool that cannot be loaded keeps its error through Preload: its calls
// answer it, the launch goes on.
func TestPreloadKeepsTheError(t *testing.T) {
	f := newWASMFixture(t, "../wasmhost/testdata/basic.wat") // exports no murmur:tool/run
	eng := f.engine(t, nil)
	defer eng.Close()
	pre := Preload(eng, f.m, f.resolved)
	defer pre.Close()
	if l := pre["local/echo@0.1.0"]; l.Err == nil {
		t.Fatal("a component without tool/run preloaded")
	}
	tool := f.tool(t, &Env{Engine: eng, Session: f.sess, Preloaded: pre})
	if _, err := tool.Run(context.Background(), Invocation{Input: echoInput}); err == nil {
		t.Fatal("the call did not answer the load error")
	}
}

// BenchmarkInvoke is N invokes of one tool inside a run, as a script's
// calls do: a fresh instance each (the spec's per-call isolation), the
// component preloaded from the warm compile cache before the run. Reported
// per invoke; N = 1 includes the run's cache load of the tool.
func BenchmarkInvoke(b *testing.B) {
	for _, c := range []struct{ name, path string }{{"wat", watEcho}, {"gokit", goKitEcho}} {
		for _, n := range []int{1, 100, 10000} {
			b.Run(fmt.Sprintf("%s/N=%d", c.name, n), func(b *testing.B) {
				f := newWASMFixture(b, c.path)
				warm := f.engine(b, nil)
				Preload(warm, f.m, f.resolved).Close()
				warm.Close()
				ctx := context.Background()
				cpu0 := cpuTime(b)
				for b.Loop() {
					eng := f.engine(b, nil)
					pre := Preload(eng, f.m, f.resolved)
					tool := f.tool(b, &Env{Engine: eng, Session: f.sess, Preloaded: pre})
					for range n {
						if _, err := tool.Run(ctx, Invocation{Input: echoInput}); err != nil {
							b.Fatal(err)
						}
					}
					tool.Close()
					pre.Close()
					eng.Close()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/invoke")
				b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N*n), "cpu-ns/invoke")
			})
		}
	}
}
