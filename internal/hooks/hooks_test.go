package hooks

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/wit"
)

func ptr(s string) *string { return &s }

// TestEachEventReceivesItsFields binds one probe hook to each event (and one
// unbound probe, which gets every event but on-stage) and checks every field
// of each record as the component received it.
func TestEachEventReceivesItsFields(t *testing.T) {
	var specs []spec
	for _, ev := range wit.HookEvents {
		specs = append(specs, spec{name: "acme/" + ev, binding: ev, behaviour: map[string]string{ev: "probe"}})
	}
	all := map[string]string{}
	for _, ev := range wit.HookEvents {
		all[ev] = "probe"
	}
	specs = append(specs, spec{name: "acme/unbound", behaviour: all})
	d, r, _ := load(t, nil, specs...)

	cases := []struct {
		event string
		call  func() []Output
		want  string
	}{
		{wit.HookOnStage, func() []Output { return d.OnStage(bg, wit.StageEvent{ShellAllow: []string{"bash", "ls"}}) }, "bash,ls,|"},
		{wit.HookOnSessionStart, func() []Output {
			return d.OnSessionStart(bg, wit.SessionContext{CapsuleName: "local/a", CapsuleVersion: "1.2.3", SessionID: "ses_9",
				Model: "claude", Capabilities: []string{"shell", "network ✓"}})
		}, s("local/a", "1.2.3", "ses_9", "claude") + "shell,network ✓,|"},
		{wit.HookOnTaskStart, func() []Output {
			return d.OnTaskStart(bg, wit.TaskStartEvent{TaskID: "t1", ContextID: "c1", Source: "a2a", InputBytes: 1234})
		}, s("t1", "c1", "a2a") + hex(1234)},
		{wit.HookOnInference, func() []Output {
			return d.OnInference(bg, wit.InferenceEvent{Turn: 3, InputTokens: 100, OutputTokens: 1 << 40, Decision: "tool_call",
				ToolName: ptr("echo"), Output: ptr("out"), Tools: ptr(`["echo"]`)})
		}, hex(3) + hex(100) + hex(1<<40) + s("tool_call", "echo", "~", "out", `["echo"]`)},
		{wit.HookOnToolCall, func() []Output {
			return d.OnToolCall(bg, wit.ToolEvent{Turn: 2, ToolName: "echo", InputBytes: 5, OutputBytes: 6, DurationMS: 7, Status: "ok"})
		}, hex(2) + "echo|" + hex(5) + hex(6) + hex(7) + "ok|"},
		{wit.HookOnShell, func() []Output {
			return d.OnShell(bg, wit.ShellEvent{Turn: 4, Binary: "/bin/bash", Command: "echo 'a b'", ExitCode: -1, Stdout: "a b\n",
				Stderr: "", StdoutBytes: 4, StderrBytes: 0, DurationMS: 9})
		}, hex(4) + s("/bin/bash", "echo 'a b'") + hex(uint64(uint32(0xffffffff))) + s("a b\n", "") + hex(4) + hex(0) + hex(9)},
		{wit.HookOnCompaction, func() []Output {
			return d.OnCompaction(bg, wit.CompactionEvent{Messages: []wit.HookMessage{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "yo"}},
				SessionTokens: 5000, Threshold: 0.8, Model: ptr("m")})
		}, "user=hi,assistant=yo,|" + hex(5000) + hex(math.Float64bits(0.8)) + s("m", "~")},
		{wit.HookOnTaskEnd, func() []Output {
			return d.OnTaskEnd(bg, wit.TaskEndEvent{TaskID: "t1", ExitStatus: "max_turns_reached"})
		},
			s("t1", "max_turns_reached")},
		{wit.HookOnSessionEnd, func() []Output {
			return d.OnSessionEnd(bg, wit.SessionEndEvent{TotalTurns: 8, TotalInputTokens: 10, TotalOutputTokens: 11, TotalToolCalls: 12,
				TotalShellCalls: 13, DurationMS: 14, ExitStatus: "ok"})
		}, hex(8) + hex(10) + hex(11) + hex(12) + hex(13) + hex(14) + "ok|"},
	}
	for _, tc := range cases {
		t.Run(tc.event, func(t *testing.T) {
			r.calls = nil
			outs := tc.call()
			want := []Output{{Hook: "acme/" + tc.event, Case: wit.OutputArtifact, Text: tc.want}}
			if tc.event != wit.HookOnStage { // unbound: every event but on-stage
				want = append(want, Output{Hook: "acme/unbound", Case: wit.OutputArtifact, Text: tc.want})
			}
			if !reflect.DeepEqual(outs, want) {
				t.Fatalf("outputs\n got %q\nwant %q", outs, want)
			}
			if len(r.calls) != len(want) {
				t.Fatalf("%d hook_call lines, want %d: %+v", len(r.calls), len(want), r.calls)
			}
			for i, c := range r.calls {
				if c.Hook != want[i].Hook || c.Event != tc.event || c.Status != StatusOK || c.Error != nil ||
					c.Output == nil || *c.Output != wit.OutputArtifact {
					t.Errorf("hook_call %+v", c)
				}
			}
		})
	}
	if got := d.Names(); len(got) != 10 || got[0] != "acme/on-stage" || got[9] != "acme/unbound" {
		t.Errorf("Names = %v", got)
	}
}

func lim(deadline int, mem int64) *manifest.EffLimits {
	l := defaultLimits()
	if deadline > 0 {
		l.HookDeadlineSeconds = deadline
	}
	if mem > 0 {
		l.MemoryBytes = mem
	}
	return &l
}

// TestFailuresAreRecordedAndTheSessionMovesOn: a hook that fails, traps,
// balloons or spins is one hook_call line with its status and one line in
// its log; the next hook is still called, and the failed hook is called
// again at the next event with a fresh instance.
func TestFailuresAreRecordedAndTheSessionMovesOn(t *testing.T) {
	tests := []struct {
		behaviour, status, errPart string
		limits                     *manifest.EffLimits
	}{
		{"fail", StatusError, "it failed", nil},
		{"trap", StatusTrapped, "unreachable", nil},
		{"balloon", StatusResourceLimit, "memory", lim(0, 8<<20)},
		{"spin", StatusDeadlineExceeded, "deadline exceeded", lim(1, 0)},
	}
	for _, tc := range tests {
		t.Run(tc.behaviour, func(t *testing.T) {
			d, r, dir := load(t, nil,
				spec{name: "acme/bad", behaviour: map[string]string{wit.HookOnTaskStart: tc.behaviour, wit.HookOnTaskEnd: "artifact"}, limits: tc.limits},
				spec{name: "acme/next", behaviour: map[string]string{wit.HookOnTaskStart: "artifact"}})
			outs := d.OnTaskStart(bg, wit.TaskStartEvent{TaskID: "t1"})
			if len(outs) != 1 || outs[0].Hook != "acme/next" {
				t.Fatalf("outputs %+v: the next hook must still run", outs)
			}
			c := r.calls[0]
			if c.Hook != "acme/bad" || c.Status != tc.status || c.Error == nil || !strings.Contains(*c.Error, tc.errPart) || c.Output != nil {
				t.Fatalf("hook_call %+v (error %q)", c, deref(c.Error))
			}
			if len(r.deadlines) != 0 {
				t.Errorf("call_deadline for a hook running its own code: %v", r.deadlines)
			}
			log, err := os.ReadFile(filepath.Join(dir, "logs", "hooks", "acme", "bad.log"))
			if err != nil {
				t.Fatal(err)
			}
			if lines := strings.Split(strings.TrimSpace(string(log)), "\n"); len(lines) != 1 ||
				!strings.Contains(lines[0], "on-task-start "+tc.status+": ") || !strings.Contains(lines[0], tc.errPart) {
				t.Errorf("log %q", log)
			}
			if _, err := os.Stat(filepath.Join(dir, "logs", "hooks", "acme", "next.log")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a hook that did not fail has a log: %v", err)
			}
			// The failed hook is still bound: its next event runs on a fresh instance.
			outs = d.OnTaskEnd(bg, wit.TaskEndEvent{TaskID: "t1", ExitStatus: "ok"})
			if len(outs) != 1 || outs[0].Hook != "acme/bad" || outs[0].Text != "a" {
				t.Fatalf("after a %s: %+v, calls %+v", tc.behaviour, outs, r.calls)
			}
		})
	}
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// TestStoppedWhileWaitingIsNeverCalledAgain: a hook waiting on the runtime
// (a WASI clock wait, or run-inference that does not answer) past deadline +
// grace writes call_deadline, and each later event it is bound to is a
// hook_call with status not_called; the other hooks go on.
func TestStoppedWhileWaitingIsNeverCalledAgain(t *testing.T) {
	block := func(ctx context.Context, hook string, req wit.InferenceRequest) (wit.InferenceResponse, error) {
		<-ctx.Done()
		return wit.InferenceResponse{}, ctx.Err()
	}
	for _, behaviour := range []string{"sleep", "infer"} {
		t.Run(behaviour, func(t *testing.T) {
			d, r, dir := load(t, block,
				spec{name: "acme/sleepy", behaviour: map[string]string{wit.HookOnTaskStart: behaviour, wit.HookOnTaskEnd: "artifact"}, limits: lim(1, 0)},
				spec{name: "acme/next", behaviour: map[string]string{wit.HookOnTaskStart: "artifact", wit.HookOnTaskEnd: "artifact"}})
			outs := d.OnTaskStart(bg, wit.TaskStartEvent{TaskID: "t1"})
			if len(outs) != 1 || outs[0].Hook != "acme/next" {
				t.Fatalf("outputs %+v", outs)
			}
			if c := r.calls[0]; c.Status != StatusDeadlineExceeded || c.Error == nil || !strings.Contains(*c.Error, "waiting") {
				t.Fatalf("hook_call %+v (%s)", c, deref(c.Error))
			}
			if want := []string{"acme/sleepy on-task-start 1000"}; !reflect.DeepEqual(r.deadlines, want) {
				t.Fatalf("call_deadline lines %v, want %v", r.deadlines, want)
			}
			for range 2 {
				r.calls = nil
				outs = d.OnTaskEnd(bg, wit.TaskEndEvent{TaskID: "t1"})
				if len(outs) != 1 || outs[0].Hook != "acme/next" {
					t.Fatalf("outputs %+v", outs)
				}
				if c := r.calls[0]; c.Hook != "acme/sleepy" || c.Event != wit.HookOnTaskEnd || c.Status != StatusNotCalled || c.DurationMS != 0 {
					t.Fatalf("later event: %+v", c)
				}
			}
			// Events it is not bound to write nothing for it.
			r.calls = nil
			d.OnStage(bg, wit.StageEvent{})
			if len(r.calls) != 0 {
				t.Errorf("on-stage wrote %+v", r.calls)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "logs", "hooks", "acme", "sleepy.log")); strings.Count(string(b), "\n") != 1 {
				t.Errorf("log %q", b)
			}
		})
	}
}

// TestRunInference: the hook's run-inference reaches the caller's function
// with the request decoded, its answer goes back to the hook, and the tokens
// are on the hook_call line; an error is the hook's to handle.
func TestRunInference(t *testing.T) {
	var got []wit.InferenceRequest
	var hooksSeen []string
	infer := func(ctx context.Context, hook string, req wit.InferenceRequest) (wit.InferenceResponse, error) {
		got = append(got, req)
		hooksSeen = append(hooksSeen, hook)
		if len(got) == 2 {
			return wit.InferenceResponse{}, errors.New("spend ceiling reached")
		}
		return wit.InferenceResponse{Text: "a summary", ModelUsed: "m1", InputTokens: 7, OutputTokens: 3}, nil
	}
	d, r, _ := load(t, infer, spec{name: "acme/summarize", behaviour: map[string]string{wit.HookOnTaskEnd: "infer"}})
	outs := d.OnTaskEnd(bg, wit.TaskEndEvent{TaskID: "t1", ExitStatus: "ok"})
	if len(outs) != 1 || outs[0].Text != "a summary" {
		t.Fatalf("outputs %+v", outs)
	}
	want := wit.InferenceRequest{Messages: []wit.HookMessage{{Role: "user", Content: "summarize"}}, Model: ptr("m1")}
	if !reflect.DeepEqual(got[0], want) || hooksSeen[0] != "acme/summarize" {
		t.Fatalf("request %+v from %s", got[0], hooksSeen[0])
	}
	if c := r.calls[0]; c.Status != StatusOK || c.InputTokens != 7 || c.OutputTokens != 3 {
		t.Fatalf("hook_call %+v", c)
	}
	outs = d.OnTaskEnd(bg, wit.TaskEndEvent{TaskID: "t2"})
	if c := r.calls[1]; len(outs) != 0 || c.Status != StatusError || deref(c.Error) != "spend ceiling reached" || c.InputTokens != 0 {
		t.Fatalf("second call %+v, outputs %+v", c, outs)
	}
}

// TestOutputs: which outputs come back to the loop at which event.
func TestOutputs(t *testing.T) {
	tests := []struct {
		event, behaviour string
		honoured         bool
	}{
		{wit.HookOnTaskEnd, "reopen", true},
		{wit.HookOnTaskStart, "reopen", false},
		{wit.HookOnStage, "manifests", true},
		{wit.HookOnTaskEnd, "manifests", false},
		{wit.HookOnSessionStart, "artifact", true},
		{wit.HookOnCompaction, "replace", false},
		{wit.HookOnTaskEnd, "replace", false},
		{wit.HookOnTaskEnd, "none", false},
	}
	wantCase := map[string]string{"reopen": wit.OutputReopenTask, "manifests": wit.OutputWriteManifests,
		"artifact": wit.OutputArtifact, "replace": wit.OutputReplaceContext, "none": wit.OutputNone}
	for _, tc := range tests {
		t.Run(tc.event+"/"+tc.behaviour, func(t *testing.T) {
			d, r, _ := load(t, nil, spec{name: "acme/h", binding: tc.event, behaviour: map[string]string{tc.event: tc.behaviour}})
			var outs []Output
			switch tc.event {
			case wit.HookOnTaskEnd:
				outs = d.OnTaskEnd(bg, wit.TaskEndEvent{})
			case wit.HookOnTaskStart:
				outs = d.OnTaskStart(bg, wit.TaskStartEvent{})
			case wit.HookOnStage:
				outs = d.OnStage(bg, wit.StageEvent{})
			case wit.HookOnSessionStart:
				outs = d.OnSessionStart(bg, wit.SessionContext{})
			case wit.HookOnCompaction:
				outs = d.OnCompaction(bg, wit.CompactionEvent{})
			}
			if got := len(outs) == 1; got != tc.honoured {
				t.Fatalf("outputs %+v, honoured %v", outs, tc.honoured)
			}
			c := r.calls[0]
			if c.Status != StatusOK || deref(c.Output) != wantCase[tc.behaviour] {
				t.Fatalf("hook_call %+v output %s", c, deref(c.Output))
			}
			if !tc.honoured {
				return
			}
			o := outs[0]
			switch tc.behaviour {
			case "reopen":
				if o.Case != wit.OutputReopenTask || o.Text != "again" {
					t.Errorf("%+v", o)
				}
			case "manifests":
				if o.Case != wit.OutputWriteManifests || !reflect.DeepEqual(o.Manifests, []wit.ToolManifest{{BinaryName: "a", Content: "again"}}) {
					t.Errorf("%+v", o)
				}
			}
		})
	}
}

// TestBadHooksAreRefused: at staging, with a coded diagnostic.
func TestBadHooksAreRefused(t *testing.T) {
	good := hookWAT(t, nil)
	echoTool, err := os.ReadFile("../wasmhost/testdata/echo_tool.wat")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, extra string
		wasm        []byte
		code, part  string
	}{
		{"binding names no event", "binding: on-lunch\n", good, "E-RUN-095", `binding "on-lunch" names no event`},
		{"binding is a list", "binding: [on-stage, on-shell]\n", good, "E-RUN-095", "binding"},
		{"binding is empty", "binding: \"\"\n", good, "E-RUN-095", "binding"},
		{"a tool, not a hook", "", echoTool, "E-RUN-096", "exports neither"},
		{"a function missing", "", []byte(strings.Replace(string(good), `(export "on-shell" (func`, `(export "on-shelly" (func`, 1)),
			"E-RUN-096", "has no on-shell function"},
		{"no component", "", nil, "E-RUN-096", "no component"},
		{"not WebAssembly", "", []byte("hello"), "E-RUN-096", "cannot be compiled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := resolved(t, "acme/bad", tc.extra, tc.wasm)
			ok := resolved(t, "acme/ok", "", good)
			_, err := Load(bg, Config{Engine: testEngine, Hooks: []Hook{{Resolved: ok, Limits: defaultLimits()}, {Resolved: res, Limits: defaultLimits()}}})
			var dg *diag.Diagnostic
			if !errors.As(err, &dg) || dg.Code != tc.code || !strings.Contains(err.Error(), tc.part) || !strings.Contains(err.Error(), "acme/bad") {
				t.Fatalf("Load = %v, want %s containing %q", err, tc.code, tc.part)
			}
			if dg.Hint == "" {
				t.Error("no hint")
			}
		})
	}
}

// TestDeadlineRules: 30 s per hook call by default, a declared
// capabilities.limits.deadline_seconds replaces it, a hook's own
// deadline_seconds wins for that hook.
func TestDeadlineRules(t *testing.T) {
	const base = "name: a\nversion: 1.0.0\ninference:\n  model: m\n"
	tests := []struct {
		name, yaml string
		want       []int // per artifact, seconds
	}{
		{"default", base + "artifacts:\n  - {name: acme/h1, version: 1.0.0, runtime: hook}\n", []int{30}},
		{"declared replaces", base + "capabilities:\n  limits:\n    deadline_seconds: 120\nartifacts:\n  - {name: acme/h1, version: 1.0.0, runtime: hook}\n", []int{120}},
		{"own wins", base + "capabilities:\n  limits:\n    deadline_seconds: 120\nartifacts:\n  - {name: acme/h1, version: 1.0.0, runtime: hook, deadline_seconds: 5}\n  - {name: acme/h2, version: 1.0.0, runtime: hook}\n", []int{5, 120}},
		{"own over default", base + "artifacts:\n  - {name: acme/h1, version: 1.0.0, runtime: hook, deadline_seconds: 45}\n", []int{45}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := manifest.Parse([]byte(tc.yaml), "murmur.yaml", manifest.Options{})
			if err != nil {
				t.Fatal(err)
			}
			g, _ := m.EffectiveGrants()
			for i, want := range tc.want {
				if got := Deadline(g.Artifacts[i].Grants.Limits); got.Seconds() != float64(want) {
					t.Errorf("artifact %d: %v, want %ds", i, got, want)
				}
			}
		})
	}
}

func TestNilDispatcherCallsNothing(t *testing.T) {
	var d *Dispatcher
	if outs := d.OnTaskEnd(bg, wit.TaskEndEvent{}); outs != nil {
		t.Fatal(outs)
	}
}

// BenchmarkNoOpHookCall is one blocking call of a hook that returns none, on
// its warm instance, with its hook_call line (docs/benchmarks.md: ≤ 100 µs).
func BenchmarkNoOpHookCall(b *testing.B) {
	d, r, _ := load(b, nil, spec{name: "acme/noop"})
	r.discard = true
	e := wit.TaskEndEvent{TaskID: "task_1", ExitStatus: "ok"}
	b.ResetTimer()
	for b.Loop() {
		d.OnTaskEnd(bg, e)
	}
}
