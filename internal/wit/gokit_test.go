package wit_test

// Components built with the Go guest kit (guest/, scripts/build-component.sh) run
// through this package with real host imports. The components are the committed
// builds: testdata/components/{capsule-probe,tool-echo} and examples/{hello-script,
// echo-tool}; .ci/run checks they match their sources.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

var (
	gokitOnce   sync.Once
	gokitEngine *wasmhost.Engine
	gokitErr    error
	gokitMu     sync.Mutex
	gokitComps  = map[string]*wasmhost.Component{}
)

// gokitComponent compiles a committed Go-kit component once per test process (a Go
// component takes about a second to compile).
func gokitComponent(tb testing.TB, rel string) (*wasmhost.Engine, *wasmhost.Component) {
	tb.Helper()
	gokitOnce.Do(func() { gokitEngine, gokitErr = wasmhost.NewEngine(wasmhost.Config{NoCache: true}) })
	if gokitErr != nil {
		tb.Fatal(gokitErr)
	}
	gokitMu.Lock()
	defer gokitMu.Unlock()
	if c, ok := gokitComps[rel]; ok {
		return gokitEngine, c
	}
	wasm, err := os.ReadFile(filepath.Join("..", "..", rel))
	if err != nil {
		tb.Fatal(err)
	}
	c, err := gokitEngine.Compile(wasm)
	if err != nil {
		tb.Fatalf("compile %s: %v", rel, err)
	}
	gokitComps[rel] = c
	return gokitEngine, c
}

const (
	probeWasm       = "testdata/components/capsule-probe/capsule-probe.wasm"
	toolEchoWasm    = "testdata/components/tool-echo/tool-echo.wasm"
	helloScriptWasm = "examples/hello-script/hello-script.wasm"
	echoToolWasm    = "examples/echo-tool/echo-tool.wasm"
)

// session is a capsule's filesystem as mur run lays it out (internal/script's
// Preopens): the work folder read-write as "/" and ".", the runtime dir holding
// task.md read-only as "/murmur-runtime" and "murmur-runtime". The "/" views come
// first because Go's wasip1 runtime takes its working directory from the first
// preopen and resolves relative paths by prefix. Both dirs sit inside a parent dir
// so escapes can be looked for.
type session struct {
	parent, work, runtimeDir, stdout, stderr string
}

func newSession(t testing.TB, task string) session {
	t.Helper()
	parent := t.TempDir()
	s := session{
		parent:     parent,
		work:       filepath.Join(parent, "work"),
		runtimeDir: filepath.Join(parent, "runtime"),
		stdout:     filepath.Join(parent, "stdout.log"),
		stderr:     filepath.Join(parent, "stderr.log"),
	}
	for _, d := range []string{s.work, s.runtimeDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.runtimeDir, "task.md"), []byte(task), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s session) wasi(env map[string]string) wasmhost.WASI {
	return wasmhost.WASI{
		Env:        env,
		StdoutPath: s.stdout,
		StderrPath: s.stderr,
		Preopens: []wasmhost.Preopen{
			{HostDir: s.work, GuestPath: "/"},
			{HostDir: s.runtimeDir, GuestPath: "/murmur-runtime", ReadOnly: true},
			{HostDir: s.work, GuestPath: "."},
			{HostDir: s.runtimeDir, GuestPath: "murmur-runtime", ReadOnly: true},
		},
	}
}

func (s session) result(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.work, "out", "result.txt"))
	if err != nil {
		t.Fatalf("out/result.txt: %v (stderr: %s)", err, s.read("stderr"))
	}
	return string(b)
}

func (s session) read(which string) string {
	p := s.stdout
	if which == "stderr" {
		p = s.stderr
	}
	b, _ := os.ReadFile(p)
	return string(b)
}

// runCapsule instantiates a capsule component in s with host h and calls run once.
func runCapsule(t testing.TB, rel string, s session, h *wasmhost.Host, lim wasmhost.Limits, env map[string]string) error {
	t.Helper()
	e, c := gokitComponent(t, rel)
	if lim.Deadline == 0 {
		lim.Deadline = time.Minute // a hung guest fails the test instead of stalling it
	}
	inst, err := instantiate(e, context.Background(), c, wasmhost.RunConfig{Limits: lim, WASI: s.wasi(env), Host: h})
	if err != nil {
		t.Fatalf("instantiate %s: %v", rel, err)
	}
	defer inst.Close()
	return wit.CallCapsuleRun(context.Background(), inst)
}

// toolRunner runs a tool component in a fresh instance per invoke, as the runtime's
// murmur:tool-registry/invoke does; it also records what the host saw.
type toolRunner struct {
	t        *testing.T
	tools    map[string]string // name -> component
	mu       sync.Mutex
	invoked  []string
	answers  map[string]string // request-input prompt -> answer
	chunks   []string
	lastErrs []error
}

func (r *toolRunner) invoke(ctx context.Context, name string, in wit.ToolInput) (wit.ToolResult, error) {
	r.mu.Lock()
	r.invoked = append(r.invoked, name)
	r.mu.Unlock()
	rel, ok := r.tools[name]
	if !ok {
		return wit.ToolResult{}, fmt.Errorf("tool not declared by this capsule: %s", name)
	}
	e, c := gokitComponent(r.t, rel)
	h := wasmhost.NewHost()
	wit.GrantTask(h, func(_ context.Context, prompt string) (string, error) { return r.answers[prompt], nil })
	wit.GrantTextChunks(h, func(_ context.Context, text string, thinking bool) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if thinking {
			text = "thinking:" + text
		}
		r.chunks = append(r.chunks, text)
		return nil
	})
	inst, err := instantiate(e, ctx, c, wasmhost.RunConfig{Host: h, Limits: wasmhost.Limits{Deadline: 30 * time.Second}})
	if err != nil {
		return wit.ToolResult{}, err
	}
	defer inst.Close()
	res, err := wit.CallToolRun(ctx, inst, in)
	if err != nil {
		r.mu.Lock()
		r.lastErrs = append(r.lastErrs, err)
		r.mu.Unlock()
	}
	return res, err
}

func (r *toolRunner) host() *wasmhost.Host {
	h := wasmhost.NewHost()
	wit.GrantToolRegistry(h, r.invoke)
	return h
}

func some(s string) *string { return &s }

func TestGoKitToolEcho(t *testing.T) {
	e, c := gokitComponent(t, toolEchoWasm)
	r := &toolRunner{t: t, answers: map[string]string{"your name?": "Gopher"}}
	h := wasmhost.NewHost()
	wit.GrantTask(h, func(_ context.Context, prompt string) (string, error) { return r.answers[prompt], nil })
	wit.GrantTextChunks(h, func(_ context.Context, text string, thinking bool) error {
		if thinking {
			text = "thinking:" + text
		}
		r.chunks = append(r.chunks, text)
		return nil
	})
	inst, err := instantiate(e, context.Background(), c, wasmhost.RunConfig{Host: h})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()

	meta := [][2]string{{"tool", "tool-echo"}}
	tests := []struct {
		name string
		in   wit.ToolInput
		want wit.ToolResult
	}{
		{"echo", wit.ToolInput{Data: some("hello")},
			wit.ToolResult{Status: wit.StatusPassed, Summary: some("echoed 5 bytes"), Data: some("hello"), Metadata: meta}},
		{"no input", wit.ToolInput{},
			wit.ToolResult{Status: wit.StatusPassed, Summary: some("no input"), Metadata: meta}},
		{"log path", wit.ToolInput{Data: some("ünï ✓"), LogPath: some("logs/x.log")},
			wit.ToolResult{Status: wit.StatusPassed, Summary: some("echoed 9 bytes"), Data: some("ünï ✓"),
				Metadata: [][2]string{{"tool", "tool-echo"}, {"log-path", "logs/x.log"}}}},
		{"empty", wit.ToolInput{Data: some("")},
			wit.ToolResult{Status: wit.StatusPassed, Summary: some("echoed 0 bytes"), Data: some(""), Metadata: meta}},
		{"fail", wit.ToolInput{Data: some("fail")},
			wit.ToolResult{Status: wit.StatusFailed, Summary: some("failure requested"), Metadata: meta}},
		{"request-input", wit.ToolInput{Data: some("ask:your name?")},
			wit.ToolResult{Status: wit.StatusPassed, Summary: some("echoed 6 bytes"), Data: some("Gopher"), Metadata: meta}},
		{"chunks", wit.ToolInput{Data: some("chunks:a,b,c")},
			wit.ToolResult{Status: wit.StatusPassed, Summary: some("echoed 12 bytes"), Data: some("chunks:a,b,c"), Metadata: meta}},
	}
	// All on one instance: each call's parameters and result memory must be
	// released and reused correctly (post-return) for the next.
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wit.CallToolRun(context.Background(), inst, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %s\nwant %s", show(got), show(tt.want))
			}
		})
	}
	if want := []string{"thinking:thinking about chunks:a,b,c", "a", "b", "c"}; !slices.Equal(r.chunks, want) {
		t.Errorf("chunks %q, want %q", r.chunks, want)
	}
}

func show(r wit.ToolResult) string {
	o := func(p *string) string {
		if p == nil {
			return "none"
		}
		return fmt.Sprintf("%q", *p)
	}
	return fmt.Sprintf("{%s summary=%s data=%s path=%s trunc=%t meta=%q}", r.Status, o(r.Summary), o(r.Data), o(r.DataPath), r.Truncated, r.Metadata)
}

// Many calls with large inputs on one instance: parameters lifted after start-up
// must come from the Go heap and be released, not from the start-up arena
// (128 KiB), and nothing may leak call to call.
func TestGoKitToolManyLargeCalls(t *testing.T) {
	e, c := gokitComponent(t, toolEchoWasm)
	inst, err := instantiate(e, context.Background(), c, wasmhost.RunConfig{Limits: wasmhost.Limits{MemoryBytes: 256 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	for i := range 60 {
		data := strings.Repeat(string(rune('a'+i%26)), 200_000+i*1000)
		got, err := wit.CallToolRun(context.Background(), inst, wit.ToolInput{Data: &data})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if got.Data == nil || *got.Data != data {
			t.Fatalf("call %d: data not echoed intact", i)
		}
	}
	t.Logf("memory peak after 60 calls of ~230 KB: %d MiB", inst.MemoryPeak()>>20)
	if peak := inst.MemoryPeak(); peak > 128<<20 {
		t.Errorf("memory peak %d MiB: the glue leaks per call", peak>>20)
	}
}

func TestGoKitToolPanicTraps(t *testing.T) {
	e, c := gokitComponent(t, toolEchoWasm)
	s := newSession(t, "")
	inst, err := instantiate(e, context.Background(), c, wasmhost.RunConfig{WASI: s.wasi(nil), Limits: wasmhost.Limits{Deadline: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	_, err = wit.CallToolRun(context.Background(), inst, wit.ToolInput{Data: some("panic")})
	var trap *wasmhost.TrapError
	if !errors.As(err, &trap) {
		t.Fatalf("got %v, want a *TrapError", err)
	}
	if stderr := s.read("stderr"); !strings.Contains(stderr, "panic: tool-echo: panic requested") {
		t.Errorf("stderr does not carry the panic: %q", stderr)
	}
}

func TestGoKitCapsuleInvokesTool(t *testing.T) {
	tests := []struct {
		name, task string
		want       []string
	}{
		{"declared tool", "invoke tool-echo hello there",
			[]string{"status: passed", `summary: "echoed 11 bytes"`, `data: "hello there"`, "data-path: none",
				"truncated: false", "metadata tool: tool-echo", "metadata log-path: logs/tool-echo.log"}},
		{"tool fails", "invoke tool-echo fail",
			[]string{"status: failed", `summary: "failure requested"`, "data: none"}},
		{"undeclared tool", "invoke not-declared x",
			[]string{"invoke error: murmur:tool-registry/invoke@0.1.0#invoke: tool not declared by this capsule: not-declared"}},
		{"tool traps, capsule goes on", "invoke tool-echo panic",
			[]string{"invoke error: murmur:tool-registry/invoke@0.1.0#invoke: trapped"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t, tt.task+"\n")
			r := &toolRunner{t: t, tools: map[string]string{"tool-echo": toolEchoWasm}}
			if err := runCapsule(t, probeWasm, s, r.host(), wasmhost.Limits{}, nil); err != nil {
				t.Fatalf("run: %v (stderr %q)", err, s.read("stderr"))
			}
			got := s.result(t)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("result lacks %q:\n%s", w, got)
				}
			}
			if want := strings.Fields(tt.task)[1]; !slices.Equal(r.invoked, []string{want}) {
				t.Errorf("host saw invokes %q, want [%s]", r.invoked, want)
			}
		})
	}
}

// A large tool result comes back through cabi_import_realloc (strings lowered into
// the capsule while it waits in the import): it must arrive intact, many times over.
func TestGoKitCapsuleInvokeLargeResults(t *testing.T) {
	data := strings.Repeat("0123456789", 40_000) // 400 KB, one word
	s := newSession(t, "invoke tool-echo "+data+"\n")
	r := &toolRunner{t: t, tools: map[string]string{"tool-echo": toolEchoWasm}}
	if err := runCapsule(t, probeWasm, s, r.host(), wasmhost.Limits{}, nil); err != nil {
		t.Fatalf("run: %v (stderr %q)", err, s.read("stderr"))
	}
	got := s.result(t)
	if !strings.Contains(got, fmt.Sprintf("data: %q\n", data)) || !strings.Contains(got, `summary: "echoed 400000 bytes"`) {
		t.Fatalf("large result not echoed intact (%d bytes of report)", len(got))
	}
}

func TestGoKitCapsuleFilesystemEscape(t *testing.T) {
	outside := []string{"/escape-absolute.txt", "/tmp/capsule-probe-escape.txt", "/tmp/capsule-probe-symlink.txt"}
	for _, p := range outside {
		if _, err := os.Lstat(p); err == nil {
			t.Skipf("%s exists before the run; cannot tell an escape from it", p)
		}
	}
	s := newSession(t, "escape\n")
	if err := runCapsule(t, probeWasm, s, nil, wasmhost.Limits{}, nil); err != nil {
		t.Fatalf("run: %v (stderr %q)", err, s.read("stderr"))
	}
	got := s.result(t)
	t.Logf("capsule-probe escape report:\n%s", got)
	// The guest's view: the read-only runtime dir, the host's /etc and anything a
	// symlink points at outside the work folder are out of reach.
	for _, attempt := range []string{"runtime-dir-write", "absolute-read", "symlink-absolute", "symlink-dotdot"} {
		if !strings.Contains(got, "escape "+attempt+": blocked") {
			t.Errorf("attempt %s not blocked", attempt)
		}
	}
	// ".." from the work folder's root is the root itself: a listing shows the work
	// folder (the probe created out/ there), never the parent with "runtime".
	for _, line := range strings.Split(got, "\n") {
		if rest, ok := strings.CutPrefix(line, "escape dotdot-read: allowed"); ok &&
			(strings.Contains(rest, "runtime") || strings.Contains(rest, "work")) {
			t.Errorf("'..' listed the work folder's parent: %s", line)
		}
	}
	// The host's view: nothing outside the work folder, nothing new in the runtime dir.
	for _, p := range outside {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s was written by the guest", p)
		}
	}
	for _, dir := range []string{s.parent, filepath.Dir(s.parent)} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.Contains(e.Name(), "escape") {
				t.Errorf("%s appeared outside the work folder", filepath.Join(dir, e.Name()))
			}
		}
	}
	entries, _ := os.ReadDir(s.parent)
	for _, e := range entries {
		if !slices.Contains([]string{"work", "runtime", "stdout.log", "stderr.log"}, e.Name()) {
			t.Errorf("%s appeared beside the work folder", e.Name())
		}
	}
	if rt, _ := os.ReadDir(s.runtimeDir); len(rt) != 1 {
		t.Errorf("runtime dir holds %d entries, want task.md only", len(rt))
	}
}

func TestGoKitCapsuleEnvironment(t *testing.T) {
	t.Setenv("GOKIT_HOST_SECRET", "must-not-leak")
	s := newSession(t, "env\n")
	env := map[string]string{"MURMUR_SESSION_ID": "ses_0123456789abcdef0123456789abcdef", "ALLOWED_VAR": "allowed value"}
	if err := runCapsule(t, probeWasm, s, nil, wasmhost.Limits{}, env); err != nil {
		t.Fatalf("run: %v", err)
	}
	want := "env ALLOWED_VAR: allowed value\nenv MURMUR_SESSION_ID: ses_0123456789abcdef0123456789abcdef\n"
	if got := s.result(t); got != want {
		t.Fatalf("the guest sees\n%s\nwant exactly\n%s", got, want)
	}
}

func TestGoKitCapsuleEndings(t *testing.T) {
	t.Run("trap", func(t *testing.T) {
		s := newSession(t, "trap\n")
		err := runCapsule(t, probeWasm, s, nil, wasmhost.Limits{}, nil)
		var trap *wasmhost.TrapError
		if !errors.As(err, &trap) {
			t.Fatalf("got %v, want *TrapError", err)
		}
		if !strings.Contains(s.read("stderr"), "panic: capsule-probe: trap requested") {
			t.Errorf("stderr: %q", s.read("stderr"))
		}
	})
	t.Run("error return exits 1", func(t *testing.T) {
		s := newSession(t, "fail\n")
		err := runCapsule(t, probeWasm, s, nil, wasmhost.Limits{}, nil)
		var exit *wasmhost.ExitError
		if !errors.As(err, &exit) || exit.Code != 1 {
			t.Fatalf("got %v, want *ExitError with code 1", err)
		}
		if !strings.Contains(s.read("stderr"), "capsule: failure requested") {
			t.Errorf("stderr: %q", s.read("stderr"))
		}
	})
	t.Run("sleep past the deadline", func(t *testing.T) {
		s := newSession(t, "sleep 20s\n")
		gokitComponent(t, probeWasm) // compile first: time the run only
		start := time.Now()
		err := runCapsule(t, probeWasm, s, nil, wasmhost.Limits{Deadline: 500 * time.Millisecond, Grace: 500 * time.Millisecond}, nil)
		took := time.Since(start)
		var dl *wasmhost.DeadlineError
		if !errors.As(err, &dl) {
			t.Fatalf("got %v after %v, want *DeadlineError", err, took)
		}
		t.Logf("stopped after %v: %v", took, err)
		if _, err := os.Stat(filepath.Join(s.work, "out", "result.txt")); err == nil {
			t.Error("the guest wrote its result after its deadline")
		}
	})
	t.Run("memory balloon", func(t *testing.T) {
		// The Go runtime sees its growth refused and exits ("out of
		// memory", status 2): the refusal makes that a resource limit.
		s := newSession(t, "balloon\n")
		err := runCapsule(t, probeWasm, s, nil, wasmhost.Limits{MemoryBytes: 64 << 20}, nil)
		var le *wasmhost.ResourceLimitError
		if !errors.As(err, &le) || le.Which != "memory" {
			t.Fatalf("got %T %v, want *ResourceLimitError{memory}", err, err)
		}
		if !strings.Contains(s.read("stderr"), "out of memory") {
			t.Errorf("stderr: %q", s.read("stderr"))
		}
	})
	t.Run("spin past the deadline", func(t *testing.T) {
		s := newSession(t, "spin\n")
		gokitComponent(t, probeWasm)
		err := runCapsule(t, probeWasm, s, nil, wasmhost.Limits{Deadline: 300 * time.Millisecond}, nil)
		var dl *wasmhost.DeadlineError
		if !errors.As(err, &dl) || dl.Waiting {
			t.Fatalf("got %T %v, want *DeadlineError while running", err, err)
		}
	})
	t.Run("init blocked on a FIFO", func(t *testing.T) {
		// The Go guest's package init runs inside Instantiate and blocks in
		// wasmtime's native WASI code: Instantiate still ends shortly after
		// deadline + grace, as a waiting deadline.
		s := newSession(t, "task\n")
		fifo := filepath.Join(s.work, "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skip("no FIFOs here:", err)
		}
		e, c := gokitComponent(t, probeWasm)
		ended := make(chan error, 1)
		go func() {
			inst, err := instantiate(e, context.Background(), c, wasmhost.RunConfig{
				Limits: wasmhost.Limits{Deadline: 300 * time.Millisecond, Grace: 300 * time.Millisecond},
				WASI:   s.wasi(map[string]string{"PROBE_INIT_READ": "fifo"}),
			})
			if err == nil {
				inst.Close()
			}
			ended <- err
		}()
		var err error
		select {
		case err = <-ended:
		case <-time.After(30 * time.Second):
			t.Fatal("Instantiate blocked in the guest's init past deadline + grace")
		}
		var dl *wasmhost.DeadlineError
		if !errors.As(err, &dl) || !dl.Waiting || dl.Call != wasmhost.BlockedInWASI {
			t.Fatalf("got %T %v, want a waiting DeadlineError blocked in WASI", err, err)
		}
		// Let the native read finish, so the store can be freed.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	t.Run("short sleep is fine", func(t *testing.T) {
		s := newSession(t, "sleep 50ms\n")
		if err := runCapsule(t, probeWasm, s, nil, wasmhost.Limits{}, nil); err != nil {
			t.Fatal(err)
		}
		if got := s.result(t); got != "slept: 50ms\n" {
			t.Fatalf("result %q", got)
		}
	})
}

// artifactStore answers murmur:artifact-manager/manage from a fixed catalogue and
// records the calls; the runtime's real one is in the script-capsule runtime.
type artifactStore struct {
	calls []string
}

var catalogue = []wit.ArtifactSummary{
	{Name: "local/echo-tool", Version: "0.1.0", Runtime: "wasm"},
	{Name: "acme/fetch", Version: "1.2.3", Runtime: "native"},
}

func (a *artifactStore) List(context.Context) ([]wit.ArtifactSummary, error) {
	a.calls = append(a.calls, "list")
	return catalogue, nil
}

func (a *artifactStore) Describe(_ context.Context, name string) (wit.ArtifactInfo, error) {
	a.calls = append(a.calls, "describe "+name)
	if name != "acme/fetch" {
		return wit.ArtifactInfo{}, fmt.Errorf("no artifact named %s", name)
	}
	return wit.ArtifactInfo{Name: name, Version: "1.2.3", Description: "fetches", Tags: []string{"net", "http"},
		Runtime: "native", InputSchema: some(`{"type":"string"}`)}, nil
}

func (a *artifactStore) Search(_ context.Context, q string) ([]wit.ArtifactSummary, error) {
	a.calls = append(a.calls, "search "+q)
	return catalogue[1:], nil
}

func (a *artifactStore) Pull(_ context.Context, name, version string) (wit.ArtifactSummary, error) {
	a.calls = append(a.calls, "pull "+name+" "+version)
	return wit.ArtifactSummary{Name: name, Version: version, Runtime: "native"}, nil
}

func (a *artifactStore) Remove(_ context.Context, name string) (bool, error) {
	a.calls = append(a.calls, "remove "+name)
	return false, errors.New("remove refused: not in the project store")
}

func (a *artifactStore) Diagnostics(context.Context) (wit.RuntimeState, error) {
	a.calls = append(a.calls, "diagnostics")
	return wit.RuntimeState{CapsuleID: "ses_probe", Installed: catalogue, Capabilities: "install.tool: acme/*"}, nil
}

func TestGoKitCapsuleArtifactManager(t *testing.T) {
	s := newSession(t, "artifacts acme/fetch 1.2.3\n")
	store := &artifactStore{}
	h := wasmhost.NewHost()
	wit.GrantArtifactManager(h, store)
	if err := runCapsule(t, probeWasm, s, h, wasmhost.Limits{}, nil); err != nil {
		t.Fatalf("run: %v (stderr %q)", err, s.read("stderr"))
	}
	want := `list: local/echo-tool 0.1.0 wasm
list: acme/fetch 1.2.3 native
search: acme/fetch 1.2.3 native
describe: acme/fetch 1.2.3 native "fetches" tags=net,http in="{\"type\":\"string\"}" out=none
pull: acme/fetch 1.2.3 native
diagnostics: ses_probe installed=2 capabilities="install.tool: acme/*"
remove error: murmur:artifact-manager/manage@0.1.0#remove: remove refused: not in the project store
`
	if got := s.result(t); got != want {
		t.Fatalf("result\n%s\nwant\n%s", got, want)
	}
	wantCalls := []string{"list", "search acme/fetch", "describe acme/fetch", "pull acme/fetch 1.2.3", "diagnostics", "remove acme/fetch"}
	if !slices.Equal(store.calls, wantCalls) {
		t.Errorf("host calls %q, want %q", store.calls, wantCalls)
	}
}

func TestGoKitCapsuleMessageSend(t *testing.T) {
	tests := []struct {
		name string
		fn   func(context.Context, string, wit.Message) (wit.TaskResult, error)
		want string
	}{
		{"answered", func(_ context.Context, peer string, m wit.Message) (wit.TaskResult, error) {
			if peer != "http://127.0.0.1:7777" || m.MessageID != "msg-capsule-probe-1" || m.ContextID == nil ||
				*m.ContextID != "ctx-probe" || m.Text != "hello peer ✓" {
				return wit.TaskResult{}, fmt.Errorf("host received %q %+v", peer, m)
			}
			return wit.TaskResult{TaskID: "task-9", ContextID: "ctx-probe", State: "TASK_STATE_SUBMITTED"}, nil
		}, "send: task=task-9 context=ctx-probe state=TASK_STATE_SUBMITTED\n"},
		{"refused", func(context.Context, string, wit.Message) (wit.TaskResult, error) {
			return wit.TaskResult{}, errors.New("peer not covered by capabilities.network.allow")
		}, "send error: murmur:message/send@0.1.0#send: peer not covered by capabilities.network.allow\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t, "send http://127.0.0.1:7777 hello peer ✓\n")
			h := wasmhost.NewHost()
			wit.GrantMessageSend(h, tt.fn)
			if err := runCapsule(t, probeWasm, s, h, wasmhost.Limits{}, nil); err != nil {
				t.Fatalf("run: %v", err)
			}
			if got := s.result(t); got != tt.want {
				t.Fatalf("result %q, want %q", got, tt.want)
			}
		})
	}
}

// A capsule that calls a murmur import the host did not grant ends with the
// capability error, not a crash.
func TestGoKitCapsuleUngrantedImport(t *testing.T) {
	s := newSession(t, "invoke tool-echo hi\n")
	err := runCapsule(t, probeWasm, s, nil, wasmhost.Limits{}, nil)
	var capErr *wasmhost.CapabilityError
	if !errors.As(err, &capErr) || !strings.Contains(capErr.Name, "invoke") {
		t.Fatalf("got %v, want a capability error naming invoke", err)
	}
}

// The example: hello-script invokes echo-tool and writes out/result.txt.
func TestGoKitExampleHelloScript(t *testing.T) {
	s := newSession(t, "hello, murmur\n")
	r := &toolRunner{t: t, tools: map[string]string{"echo-tool": echoToolWasm}}
	if err := runCapsule(t, helloScriptWasm, s, r.host(), wasmhost.Limits{}, nil); err != nil {
		t.Fatalf("run: %v (stderr %q)", err, s.read("stderr"))
	}
	want := "task: hello, murmur\necho-tool: HELLO, MURMUR\nsummary: echo-tool read 13 bytes\n"
	if got := s.result(t); got != want {
		t.Fatalf("result %q, want %q", got, want)
	}
	if got := s.read("stdout"); got != "hello-script: wrote out/result.txt\n" {
		t.Errorf("stdout %q", got)
	}
}

// Go-kit instances in parallel (each goroutine its own store), under -race.
func TestGoKitParallelInstances(t *testing.T) {
	e, c := gokitComponent(t, toolEchoWasm)
	n := min(4, runtime.GOMAXPROCS(0)*2)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 3 {
				inst, err := instantiate(e, context.Background(), c, wasmhost.RunConfig{})
				if err != nil {
					errs <- err
					return
				}
				data := fmt.Sprintf("g%d-k%d", g, k)
				res, err := wit.CallToolRun(context.Background(), inst, wit.ToolInput{Data: &data})
				inst.Close()
				if err != nil || res.Data == nil || *res.Data != data {
					errs <- fmt.Errorf("goroutine %d call %d: %v %s", g, k, err, show(res))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// BenchmarkGoKitToolRun: host -> Go guest murmur:tool/run on a warm instance.
func BenchmarkGoKitToolRun(b *testing.B) {
	e, c := gokitComponent(b, toolEchoWasm)
	inst, err := instantiate(e, context.Background(), c, wasmhost.RunConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer inst.Close()
	in := wit.ToolInput{Data: some("hello")}
	b.ResetTimer()
	for b.Loop() {
		if _, err := wit.CallToolRun(context.Background(), inst, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGoKitInstantiate: store + WASI + instantiate (Go runtime start) + drop.
func BenchmarkGoKitInstantiate(b *testing.B) {
	e, c := gokitComponent(b, toolEchoWasm)
	b.ResetTimer()
	for b.Loop() {
		inst, err := instantiate(e, context.Background(), c, wasmhost.RunConfig{})
		if err != nil {
			b.Fatal(err)
		}
		inst.Close()
	}
}

// BenchmarkGoKitColdToolRun: instantiate + one tool/run + drop, the cost of one
// invoke of a Go-kit tool by a capsule (compiled component in memory).
func BenchmarkGoKitColdToolRun(b *testing.B) {
	e, c := gokitComponent(b, toolEchoWasm)
	in := wit.ToolInput{Data: some("hello")}
	b.ResetTimer()
	for b.Loop() {
		inst, err := instantiate(e, context.Background(), c, wasmhost.RunConfig{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := wit.CallToolRun(context.Background(), inst, in); err != nil {
			b.Fatal(err)
		}
		inst.Close()
	}
}

// BenchmarkGoKitCompile: compiling a ~2.7 MB Go-kit component with Cranelift (what
// the on-disk cache saves on every later run).
func BenchmarkGoKitCompile(b *testing.B) {
	e, _ := gokitComponent(b, toolEchoWasm)
	wasm, err := os.ReadFile(filepath.Join("..", "..", toolEchoWasm))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		c, err := e.Compile(wasm)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// Each Go-kit component imports exactly the murmur and wasi:http interfaces it calls
// (the glue's unused imports are not linked in) and exports its world's run.
func TestGoKitComponentShapes(t *testing.T) {
	tests := []struct {
		rel              string
		imports, exports []string
		invokeSig        bool
	}{
		{probeWasm, []string{wit.IfaceToolRun, wit.IfaceToolRegistry, wit.IfaceArtifactManager, wit.IfaceMessageSend},
			[]string{wit.IfaceCapsuleRun}, true},
		{toolEchoWasm, []string{wit.IfaceTask, wit.IfaceTextChunks}, []string{wit.IfaceToolRun}, false},
		{"testdata/components/capsule-http/capsule-http.wasm", []string{"wasi:http/types@0.2.12", "wasi:http/outgoing-handler@0.2.12"},
			[]string{wit.IfaceCapsuleRun}, false},
		{helloScriptWasm, []string{wit.IfaceToolRun, wit.IfaceToolRegistry}, []string{wit.IfaceCapsuleRun}, true},
		{echoToolWasm, nil, []string{wit.IfaceToolRun}, false},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.rel), func(t *testing.T) {
			_, c := gokitComponent(t, tt.rel)
			var imports, exports []string
			var invoke string
			for _, it := range c.Imports() {
				if strings.HasPrefix(it.Name, "wasi:") && !strings.HasPrefix(it.Name, "wasi:http/") {
					continue // the preview1 adapter's WASI imports
				}
				imports = append(imports, it.Name)
				if it.Name == wit.IfaceToolRegistry {
					invoke = it.String()
				}
			}
			for _, it := range c.Exports() {
				exports = append(exports, it.Name)
			}
			if !slices.Equal(imports, tt.imports) {
				t.Errorf("imports %q, want %q", imports, tt.imports)
			}
			if !slices.Equal(exports, tt.exports) {
				t.Errorf("exports %q, want %q", exports, tt.exports)
			}
			// The full WIT shape, as the engine's introspection prints it.
			const invokeWIT = "invoke: func(name: string, input: record { data: option<string>, log-path: option<string> }) -> " +
				"result<record { status: enum { passed, failed, error }, summary: option<string>, data: option<string>, " +
				"data-path: option<string>, truncated: bool, metadata: list<tuple<string, string>> }, string>"
			if tt.invokeSig && !strings.Contains(invoke, invokeWIT) {
				t.Errorf("invoke's type as the component imports it:\n%s", invoke)
			}
		})
	}
}

// instantiate is Engine.Instantiate with every limit the test leaves zero
// taken from the manifest's defaults (the engine has none of its own).
func instantiate(e *wasmhost.Engine, ctx context.Context, c *wasmhost.Component, rc wasmhost.RunConfig) (*wasmhost.Instance, error) {
	def := grant.Limits(manifest.Capabilities{}.EffLimits())
	l := &rc.Limits
	for _, f := range []struct{ v, d *int64 }{
		{&l.MemoryBytes, &def.MemoryBytes}, {&l.TableElements, &def.TableElements}, {&l.Instances, &def.Instances},
		{&l.Memories, &def.Memories}, {&l.Tables, &def.Tables},
		{(*int64)(&l.Deadline), (*int64)(&def.Deadline)}, {(*int64)(&l.Grace), (*int64)(&def.Grace)},
	} {
		if *f.v == 0 {
			*f.v = *f.d
		}
	}
	if !rc.GoIO {
		wit.ChooseIO(c, &rc) // as internal/tools and internal/script do
	}
	return e.Instantiate(ctx, c, rc)
}
