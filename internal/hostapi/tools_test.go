package hostapi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/grant"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

const toolsManifest = `name: local/caller
version: "0.1.0"
artifacts:
  - name: local/echo
    version: "0.1.0"
  - name: acme/crash
    version: "1.0.0"
  - name: local/notes
    version: "0.1.0"
    runtime: skill
`

func publishStandardTools(t testing.TB) func(*env) {
	return func(e *env) {
		publishTool(t, e.chain.Project, "local/echo", "0.1.0", componentBytes(t, "echo_tool"), "")
		publishTool(t, e.chain.Global, "acme/crash", "1.0.0", componentBytes(t, "trap_tool"), "")
		publishSkill(t, e.chain.Project, "local/notes", "0.1.0", "")
	}
}

func TestInvokeDeclaredTool(t *testing.T) {
	e := newEnv(t, toolsManifest, publishStandardTools(t))
	ctx := context.Background()
	for _, name := range []string{"echo", "local/echo"} {
		res, err := e.api.Invoke(ctx, name, wit.ToolInput{Data: ptr("hello")})
		if err != nil {
			t.Fatalf("invoke %s: %v", name, err)
		}
		if res.Status != wit.StatusPassed || res.Data == nil || *res.Data != "hello" ||
			res.Summary == nil || *res.Summary != "ok" || len(res.Metadata) != 1 || res.Metadata[0] != [2]string{"echo", "1"} {
			t.Fatalf("invoke %s: unexpected result %+v", name, res)
		}
	}
	ls := e.lines(t, trace.TypeToolCall)
	if len(ls) != 2 {
		t.Fatalf("want 2 tool_call lines, got %d", len(ls))
	}
	for _, l := range ls {
		if l.Str("tool_name") != "local/echo" || l.Str("status") != "ok" || l.Int("input_bytes") != 5 ||
			l.Int("output_bytes") != 5 || string(l.Fields["error"]) != "null" || l.ParentID != e.tw.StartID() {
			t.Fatalf("bad tool_call line: %v", l.Fields)
		}
		if _, ok := l.Fields["duration_ms"]; !ok {
			t.Fatal("tool_call has no duration_ms")
		}
	}
	if calls, errs := e.rec.Totals(); calls != 2 || errs != 0 {
		t.Fatalf("totals %d/%d", calls, errs)
	}
}

func TestInvokeRefusals(t *testing.T) {
	e := newEnv(t, toolsManifest, publishStandardTools(t))
	ctx := context.Background()
	cases := []struct {
		name, code string
		parts      []string
	}{
		{"nope", "E-RUN-062", []string{`"nope"`, "not declared", "local/echo"}},
		{"other/echo", "E-RUN-062", []string{`"other/echo"`}},
		{"notes", "E-RUN-062", []string{`"notes"`}}, // a skill is not a tool
		{"delegate-task", "E-RUN-062", []string{`"delegate-task"`}},
		{"", "E-RUN-062", []string{`""`}},
	}
	for _, c := range cases {
		_, err := e.api.Invoke(ctx, c.name, wit.ToolInput{})
		wantErr(t, err, c.parts...)
		if diag.Code(err) != c.code {
			t.Fatalf("%s: code %s, want %s", c.name, diag.Code(err), c.code)
		}
	}
	// The session goes on: a declared tool still runs.
	if _, err := e.api.Invoke(ctx, "echo", wit.ToolInput{Data: ptr("x")}); err != nil {
		t.Fatal(err)
	}
	ls := e.lines(t, trace.TypeToolCall)
	if len(ls) != len(cases)+1 {
		t.Fatalf("want %d tool_call lines, got %d", len(cases)+1, len(ls))
	}
	if ls[0].Str("tool_name") != "nope" || ls[0].Str("status") != "error" || !strings.Contains(ls[0].Str("error"), "nope") {
		t.Fatalf("bad error line %v", ls[0].Fields)
	}
	if calls, errs := e.rec.Totals(); calls != len(cases)+1 || errs != len(cases) {
		t.Fatalf("totals %d/%d", calls, errs)
	}
}

func TestInvokeTrappingToolGoesOn(t *testing.T) {
	e := newEnv(t, toolsManifest, publishStandardTools(t))
	ctx := context.Background()
	for i := 0; i < 2; i++ { // the second call gets a fresh instance, and traps again
		_, err := e.api.Invoke(ctx, "crash", wit.ToolInput{Data: ptr("boom")})
		wantErr(t, err, "acme/crash", "trapped", "unreachable")
		if diag.Code(err) != "E-RUN-064" {
			t.Fatalf("code %s", diag.Code(err))
		}
	}
	res, err := e.api.Invoke(ctx, "echo", wit.ToolInput{Data: ptr("after")})
	if err != nil || *res.Data != "after" {
		t.Fatalf("echo after a trap: %v %+v", err, res)
	}
	ls := e.lines(t, trace.TypeToolCall)
	if len(ls) != 3 || ls[0].Str("status") != "error" || ls[0].Str("tool_name") != "acme/crash" ||
		ls[0].Int("input_bytes") != 4 || ls[0].Int("output_bytes") != 0 || ls[2].Str("status") != "ok" {
		t.Fatalf("lines: %v", ls)
	}
}

func TestInvokeMissingOrWrongArtifact(t *testing.T) {
	e := newEnv(t, `name: local/caller
version: "0.1.0"
artifacts:
  - name: local/ghost
    version: "0.1.0"
  - name: local/lying
    version: "0.1.0"
`, func(e *env) {
		// local/lying is installed as a skill: the store's runtime wins.
		publishSkill(t, e.chain.Project, "local/lying", "0.1.0", "")
	})
	_, err := e.api.Invoke(context.Background(), "ghost", wit.ToolInput{})
	wantErr(t, err, "local/ghost@0.1.0", "cannot be loaded", "not installed")
	if diag.Code(err) != "E-RUN-063" {
		t.Fatalf("code %s", diag.Code(err))
	}
	_, err = e.api.Invoke(context.Background(), "lying", wit.ToolInput{})
	wantErr(t, err, "local/lying@0.1.0", "skill, not a tool")
}

func TestInvokeToolDeadlineWritesCallDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a 1 s deadline and its grace")
	}
	e := newEnv(t, `name: local/caller
version: "0.1.0"
artifacts:
  - name: local/sleepy
    version: "0.1.0"
    capabilities:
      limits:
        deadline_seconds: 1
`, func(e *env) {
		publishTool(t, e.chain.Project, "local/sleepy", "0.1.0", componentBytes(t, "sleep_tool"), "")
	})
	_, err := e.api.Invoke(context.Background(), "sleepy", wit.ToolInput{})
	wantErr(t, err, "local/sleepy", "deadline exceeded", "1s")
	cd := e.lines(t, trace.TypeCallDeadline)
	if len(cd) != 1 || cd[0].Str("component") != "local/sleepy" || cd[0].Str("call") != ToolRunCall || cd[0].Int("deadline_ms") != 1000 {
		t.Fatalf("call_deadline lines: %v", cd)
	}
}

// TestInvokeGoKitTool runs the Go guest kit's tool-echo fixture (a real
// wasip1 Go program wrapped as a component) through invoke: a normal call
// echoes; "panic" traps and is answered as err; request-input (no one to
// ask in a script capsule) stops the tool with an error saying so.
func TestInvokeGoKitTool(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a 2.7 MB Go component")
	}
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "components", "tool-echo", "tool-echo.wasm"))
	if err != nil {
		t.Skip("Go-kit fixture not present:", err)
	}
	e := newEnv(t, `name: local/caller
version: "0.1.0"
artifacts:
  - name: local/tool-echo
    version: "0.1.0"
`, func(e *env) { publishTool(t, e.chain.Global, "local/tool-echo", "0.1.0", wasm, "") })
	ctx := context.Background()
	res, err := e.api.Invoke(ctx, "tool-echo", wit.ToolInput{Data: ptr("hi there")})
	if err != nil || res.Data == nil || *res.Data != "hi there" || res.Status != wit.StatusPassed {
		t.Fatalf("echo: %v %+v", err, res)
	}
	_, err = e.api.Invoke(ctx, "tool-echo", wit.ToolInput{Data: ptr("panic")})
	wantErr(t, err, "local/tool-echo", "trapped")
	stderr, _ := os.ReadFile(filepath.Join(e.sess.RecordsDir, "logs", "tools", "local", "tool-echo.stderr.log"))
	if !strings.Contains(string(stderr), "panic: tool-echo: panic requested") {
		t.Errorf("the tool's stderr log does not hold its panic: %q", stderr)
	}
	_, err = e.api.Invoke(ctx, "tool-echo", wit.ToolInput{Data: ptr("ask:name?")})
	wantErr(t, err, "no one to ask")
	res, err = e.api.Invoke(ctx, "tool-echo", wit.ToolInput{Data: ptr("chunks:a,b")})
	if err != nil || res.Status != wit.StatusPassed {
		t.Fatalf("chunks: %v %+v", err, res)
	}
}

// runCapsule runs capsule_echo.wat (invoke("echo", "hi"), then trap unless
// the answer is ok("hi")) with this session's interfaces as its host
// imports, the way the script runtime does.
func runCapsule(t *testing.T, e *env) error {
	t.Helper()
	comp, err := testEngine.Compile(componentBytes(t, "capsule_echo"))
	if err != nil {
		t.Fatal(err)
	}
	defer comp.Close()
	h := wasmhost.NewHost()
	e.api.Register(h, e.rec)
	inst, err := testEngine.Instantiate(context.Background(), comp, wasmhost.RunConfig{Host: h, Limits: grant.Limits(manifest.Capabilities{}.EffLimits()),
		WASI: wasmhost.WASI{Preopens: grant.Preopens(e.sess.Workdir, e.sess.RuntimeDir)}})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	return wit.CallCapsuleRun(context.Background(), inst)
}

// TestCapsuleInvokesTool: a real capsule component calls invoke through the
// host function this package registers.
func TestCapsuleInvokesTool(t *testing.T) {
	e := newEnv(t, toolsManifest, publishStandardTools(t))
	if err := runCapsule(t, e); err != nil {
		t.Fatalf("capsule run: %v", err)
	}
	ls := e.lines(t, trace.TypeToolCall)
	if len(ls) != 1 || ls[0].Str("tool_name") != "local/echo" || ls[0].Int("input_bytes") != 2 || ls[0].Str("status") != "ok" {
		t.Fatalf("tool_call lines: %v", ls)
	}
}

// TestCapsuleUndeclaredToolGetsErr: the same capsule whose manifest declares
// no echo gets err from invoke (not a trap of the host) and, by its own
// choice, traps with unreachable.
func TestCapsuleUndeclaredToolGetsErr(t *testing.T) {
	e := newEnv(t, "name: local/caller\nversion: \"0.1.0\"\n", nil)
	err := runCapsule(t, e)
	var trap *wasmhost.TrapError
	if !errors.As(err, &trap) || trap.Err != nil || !strings.Contains(trap.Message, "unreachable") {
		t.Fatalf("want the capsule's own unreachable trap, got %v", err)
	}
	ls := e.lines(t, trace.TypeToolCall)
	if len(ls) != 1 || ls[0].Str("status") != "error" || !strings.Contains(ls[0].Str("error"), `"echo"`) {
		t.Fatalf("tool_call lines: %v", ls)
	}
}

func TestToolSandbox(t *testing.T) {
	e := newEnv(t, `name: local/caller
version: "0.1.0"
artifacts:
  - name: local/echo
    version: "0.1.0"
    capabilities:
      env:
        allow: [HOSTAPI_TEST_OK, HOSTAPI_TEST_UNSET, MURMUR_SESSION_ID]
      filesystem:
        scope: src
  - name: local/wide
    version: "0.1.0"
capabilities:
  env:
    allow: [HOSTAPI_TEST_OK, HOSTAPI_TEST_UNSET, HOSTAPI_TEST_CAPSULE_ONLY, MURMUR_SESSION_ID]
`, nil)
	t.Setenv("HOSTAPI_TEST_OK", "yes")
	t.Setenv("HOSTAPI_TEST_CAPSULE_ONLY", "capsule")
	t.Setenv("MURMUR_SESSION_ID", "ses_forged")
	t.Setenv("HOSTAPI_TEST_NOT_ALLOWED", "no")
	tl, err := e.api.testTool("echo")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := tl.RunConfig(tools.Invocation{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"HOSTAPI_TEST_OK": "yes", "MURMUR_SESSION_ID": e.sess.ID, "MURMUR_CAPSULE_NAME": "local/caller",
		"MURMUR_CAPSULE_VERSION": "0.1.0", "MURMUR_RUNTIME_DIR": "murmur-runtime",
	}
	if len(rc.WASI.Env) != len(want) {
		t.Fatalf("env %v, want %v", rc.WASI.Env, want)
	}
	for k, v := range want {
		if rc.WASI.Env[k] != v {
			t.Fatalf("env %s=%q, want %q (env %v)", k, rc.WASI.Env[k], v, rc.WASI.Env)
		}
	}
	src := filepath.Join(e.sess.Workdir, "src")
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		t.Fatalf("scope dir not created: %v", err)
	}
	for _, p := range rc.WASI.Preopens {
		switch p.GuestPath {
		case ".", "/":
			if p.HostDir != src || p.ReadOnly {
				t.Fatalf("work preopen %+v, want %s read-write", p, src)
			}
		case "murmur-runtime", "/murmur-runtime":
			if p.HostDir != e.sess.RuntimeDir || !p.ReadOnly {
				t.Fatalf("runtime preopen %+v", p)
			}
		default:
			t.Fatalf("unexpected preopen %+v", p)
		}
	}
	if rc.Limits.Deadline.Seconds() != 600 || rc.Limits.MemoryBytes != 512<<20 {
		t.Fatalf("limits %+v", rc.Limits)
	}

	// The undeclared-grant artifact inherits the capsule's: whole work folder.
	wide, _ := e.api.testTool("wide")
	rc, err = wide.RunConfig(tools.Invocation{})
	if err != nil {
		t.Fatal(err)
	}
	if rc.WASI.Preopens[0].HostDir != e.sess.Workdir || rc.WASI.Env["HOSTAPI_TEST_CAPSULE_ONLY"] != "capsule" {
		t.Fatalf("wide tool: %+v", rc.WASI)
	}

	// A scope that a symlink leads out of the work folder is refused.
	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), src); err != nil {
		t.Fatal(err)
	}
	_, err = tl.RunConfig(tools.Invocation{})
	wantErr(t, err, "E-RUN-065", "outside the work folder")
}

// TestInvokeConcurrent: invokes from many goroutines (a session is shared by
// whatever calls it) each get their own instance; every call is recorded.
func TestInvokeConcurrent(t *testing.T) {
	e := newEnv(t, toolsManifest, publishStandardTools(t))
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			data := fmt.Sprintf("call-%d", i)
			if i%4 == 3 {
				if _, err := e.api.Invoke(context.Background(), "crash", wit.ToolInput{Data: &data}); err == nil {
					errs <- fmt.Errorf("crash %d did not fail", i)
				}
				return
			}
			res, err := e.api.Invoke(context.Background(), "echo", wit.ToolInput{Data: &data})
			if err != nil || res.Data == nil || *res.Data != data {
				errs <- fmt.Errorf("echo %d: %v %+v", i, err, res)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if calls, fails := e.rec.Totals(); calls != n || fails != n/4 {
		t.Fatalf("totals %d/%d", calls, fails)
	}
	if got := len(e.lines(t, trace.TypeToolCall)); got != n {
		t.Fatalf("%d tool_call lines, want %d", got, n)
	}
}

// TestInvokeLongNameAndClose: a huge undeclared name is clipped in the err
// and the trace line; after Close, invoke answers err.
func TestInvokeLongNameAndClose(t *testing.T) {
	e := newEnv(t, toolsManifest, publishStandardTools(t))
	long := strings.Repeat("é", 10000)
	_, err := e.api.Invoke(context.Background(), long, wit.ToolInput{})
	wantErr(t, err, "E-RUN-062", "…")
	if len(err.Error()) > 600 {
		t.Fatalf("error of %d bytes", len(err.Error()))
	}
	ls := e.lines(t, trace.TypeToolCall)
	if n := len(ls[0].Str("tool_name")); n > 260 {
		t.Fatalf("tool_name of %d bytes in the trace", n)
	}
	if err := e.api.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = e.api.Invoke(context.Background(), "echo", wit.ToolInput{})
	wantErr(t, err, "session is over")
	if err := e.api.Close(); err != nil { // twice is fine
		t.Fatal(err)
	}
}

// TestInvokeDelegateTaskWithoutItsRuntime: delegate-task is a runtime tool
// the launch registers for a session with spawn.allow (TestScriptCapsuleDelegates);
// an inventory without it answers as for any undeclared tool.
func TestInvokeDelegateTaskWithoutItsRuntime(t *testing.T) {
	e := newEnv(t, "name: local/parent\nversion: \"0.1.0\"\ncapabilities:\n  spawn:\n    allow: [local/worker]\n", nil)
	_, err := e.api.Invoke(context.Background(), "delegate-task", wit.ToolInput{Data: ptr("{}")})
	wantErr(t, err, "E-RUN-062", "delegate-task", "is not declared")
}
