package hooks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/wit"
)

// probe is the committed Go-kit policy hook whose answer the call's input picks
// (testdata/components/policy-probe).
func probe(t testing.TB) []byte {
	t.Helper()
	wasm, err := os.ReadFile("../../testdata/components/policy-probe/policy-probe.wasm")
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// loadProbes loads the probe under each name, in order, with a 1 s deadline
// and a 64 MiB memory limit; infer answers run-inference.
func loadProbes(t *testing.T, infer InferenceFunc, names ...string) (*Dispatcher, *rec, string) {
	t.Helper()
	r, dir := &rec{}, t.TempDir()
	var hs []Hook
	for _, n := range names {
		l := defaultLimits()
		l.HookDeadlineSeconds, l.MemoryBytes = 1, 64<<20
		hs = append(hs, Hook{Resolved: resolved(t, n, "", probe(t)), Limits: l})
	}
	d, err := Load(bg, Config{Engine: testEngine, Hooks: hs, Recorder: r, RecordsDir: dir, Inference: infer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, r, dir
}

func req(input string) wit.CallRequest {
	return wit.CallRequest{TaskID: "tsk_1", Turn: 1, ToolCallID: "call_1", ToolName: "echo", Kind: "wasm", Input: input}
}

// Each answer of a policy hook, and each way it can fail to answer: only
// ok(allow) lets a call through, and every denial says why in the words
// docs/policy.md gives. The instance a failure poisoned is made afresh for
// the next call, which is asked.
func TestPolicyHookFailsClosed(t *testing.T) {
	d, r, dir := loadProbes(t, nil, "local/probe")
	if got := d.PolicyNames(); len(got) != 1 || got[0] != "local/probe" || !d.HasPolicy() {
		t.Fatalf("policy hooks %v", got)
	}
	cannot := ", and a policy hook that cannot answer denies"
	tests := []struct {
		name, input    string
		why            string // "" allows
		status, output string
	}{
		{"allow", `{"message":"hi"}`, "", StatusOK, "allow"},
		{"deny", `{"message":"policy:deny"}`, "the policy hook local/probe denied it: probe denies echo", StatusOK, "deny"},
		{"blank reason", `{"message":"policy:blank"}`, "the policy hook local/probe denied it without giving a reason", StatusOK, "deny"},
		{"err", `{"message":"policy:fail"}`, "the policy hook local/probe failed (probe failed on purpose)" + cannot, StatusError, ""},
		{"trap", `{"message":"policy:trap"}`, "the policy hook local/probe trapped (", StatusTrapped, ""},
		{"deadline", `{"message":"policy:hang"}`, "the policy hook local/probe did not answer within its deadline of 1s" + cannot, StatusDeadlineExceeded, ""},
		{"memory", `{"message":"policy:hog"}`, "the policy hook local/probe hit a resource limit (", StatusResourceLimit, ""},
		{"asked afresh after a failure", `{"message":"again"}`, "", StatusOK, "allow"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := len(r.calls)
			v := d.CheckCall(bg, req(tc.input))
			if v.Denied != (tc.why != "") || !strings.HasPrefix(v.Reason, tc.why) {
				t.Fatalf("verdict %+v, want the reason %q", v, tc.why)
			}
			if v.Denied && (v.Hook != "local/probe" || !strings.HasSuffix(v.Reason, cannot) && tc.status != StatusOK) {
				t.Errorf("verdict %+v", v)
			}
			if len(r.calls) != n+1 {
				t.Fatalf("hook_call lines %+v", r.calls[n:])
			}
			c := r.calls[n]
			if c.Event != wit.HookCheckCall || c.Status != tc.status || (c.Output == nil) != (tc.output == "") ||
				c.Output != nil && *c.Output != tc.output {
				t.Errorf("hook_call %+v (output %v)", c, c.Output)
			}
		})
	}
	log, _ := os.ReadFile(filepath.Join(dir, "logs", "hooks", "local", "probe.log"))
	for _, s := range []string{"check-call error: probe failed on purpose", "check-call trapped", "check-call deadline_exceeded", "check-call resource_limit"} {
		if !strings.Contains(string(log), s) {
			t.Errorf("logs/hooks/local/probe.log lacks %q:\n%s", s, log)
		}
	}
}

// Two policy hooks: asked in manifest order; the first that does not allow
// a call decides, and the second is never asked about it.
func TestPolicyHooksFirstDenyStops(t *testing.T) {
	d, r, _ := loadProbes(t, nil, "local/first", "local/second")
	if v := d.CheckCall(bg, req(`{}`)); v.Denied || len(r.calls) != 2 || r.calls[0].Hook != "local/first" || r.calls[1].Hook != "local/second" {
		t.Fatalf("allowed call: %+v, lines %+v", v, r.calls)
	}
	v := d.CheckCall(bg, req(`"policy:deny"`))
	if !v.Denied || v.Hook != "local/first" || len(r.calls) != 3 {
		t.Fatalf("denied call: %+v, lines %+v", v, r.calls)
	}
}

// A policy hook stopped at its deadline while it waited on the runtime (a
// run-inference that did not return) is never asked again: each later call
// writes hook_call not_called and is denied.
func TestPolicyHookStoppedWhileWaitingDeniesEveryLaterCall(t *testing.T) {
	infer := func(ctx context.Context, _ string, _ wit.InferenceRequest) (wit.InferenceResponse, error) {
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
		return wit.InferenceResponse{}, ctx.Err()
	}
	d, r, _ := loadProbes(t, infer, "local/asker")
	v := d.CheckCall(bg, req(`"policy:ask"`))
	if !v.Denied || !strings.Contains(v.Reason, "did not answer within its deadline of 1s") {
		t.Fatalf("first call %+v (lines %+v)", v, r.calls)
	}
	if len(r.deadlines) != 1 || !strings.HasPrefix(r.deadlines[0], "local/asker check-call") {
		t.Errorf("call_deadline lines %v", r.deadlines)
	}
	for i := 0; i < 2; i++ {
		v = d.CheckCall(bg, req(`{}`))
		want := "the policy hook local/asker was stopped at its deadline earlier in this session and is no longer asked, so every call is denied"
		if !v.Denied || v.Reason != want {
			t.Fatalf("later call %+v", v)
		}
		if c := r.calls[len(r.calls)-1]; c.Status != StatusNotCalled || c.Event != wit.HookCheckCall {
			t.Errorf("hook_call %+v", c)
		}
	}
}

// A lifecycle-only hook is no policy hook, and a policy-only hook gets no
// lifecycle event: each export is called for what it is.
func TestPolicyAndLifecycleHooksApart(t *testing.T) {
	r := &rec{}
	d, err := Load(bg, Config{Engine: testEngine, Recorder: r, Hooks: []Hook{
		{Resolved: resolved(t, "local/life", "", hookWAT(t, nil)), Limits: defaultLimits()},
		{Resolved: resolved(t, "local/gate", "", probe(t)), Limits: defaultLimits()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got := strings.Join(d.Names(), ","); got != "local/life,local/gate" {
		t.Errorf("hooks %s", got)
	}
	if got := strings.Join(d.PolicyNames(), ","); got != "local/gate" {
		t.Errorf("policy hooks %s", got)
	}
	d.OnTaskStart(bg, wit.TaskStartEvent{TaskID: "t"})
	d.CheckCall(bg, req(`{}`))
	if len(r.calls) != 2 || r.calls[0].Hook != "local/life" || r.calls[0].Event != wit.HookOnTaskStart ||
		r.calls[1].Hook != "local/gate" || r.calls[1].Event != wit.HookCheckCall {
		t.Errorf("lines %+v", r.calls)
	}
}

// With no policy hook nothing is asked and nothing is allocated: the gate's
// cost when unused.
func TestNoPolicyHookAsksNothing(t *testing.T) {
	var d *Dispatcher
	if v := d.CheckCall(bg, req(`{}`)); v.Denied || d.HasPolicy() {
		t.Fatal(v)
	}
	d2, _, _ := load(t, nil, spec{name: "acme/life"})
	if n := testing.AllocsPerRun(100, func() { d2.CheckCall(bg, req(`{}`)) }); n != 0 {
		t.Errorf("%v allocations per call", n)
	}
}

// One component exporting both the lifecycle and the gate is one hook with
// one instance: its binding binds lifecycle events only (on-task-start
// here), while the gate is asked about every call; both exports see the
// same state.
func TestHookExportingBoth(t *testing.T) {
	wasm, err := os.ReadFile("../../testdata/components/policy-both/policy-both.wasm")
	if err != nil {
		t.Fatal(err)
	}
	r := &rec{}
	d, err := Load(bg, Config{Engine: testEngine, Recorder: r,
		Hooks: []Hook{{Resolved: resolved(t, "local/both", "binding: on-task-start\n", wasm), Limits: defaultLimits()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if strings.Join(d.Names(), ",") != "local/both" || strings.Join(d.PolicyNames(), ",") != "local/both" {
		t.Fatalf("hooks %v, policy hooks %v", d.Names(), d.PolicyNames())
	}
	if outs := d.OnToolCall(bg, wit.ToolEvent{ToolName: "echo"}); len(outs) != 0 || len(r.calls) != 0 {
		t.Errorf("an event it is not bound to: %+v %+v", outs, r.calls)
	}
	outs := d.OnTaskStart(bg, wit.TaskStartEvent{TaskID: "t1"})
	if len(outs) != 1 || outs[0].Text != "started t1" {
		t.Errorf("on-task-start: %+v", outs)
	}
	if v := d.CheckCall(bg, req(`{}`)); v.Denied {
		t.Errorf("allowed call: %+v", v)
	}
	v := d.CheckCall(bg, req(`"policy:deny"`))
	if !v.Denied || v.Reason != "the policy hook local/both denied it: denied after 1 task starts" {
		t.Errorf("denied call: %+v", v)
	}
}

// TestPolicyHookSeesEveryCallKind: each of call-kind's cases, mcp among
// them, reaches a policy hook built from the WIT and is decided by it; a
// kind the hook could not be handed would deny every such call.
func TestPolicyHookSeesEveryCallKind(t *testing.T) {
	d, _, _ := loadProbes(t, nil, "local/probe")
	for _, k := range wit.CallKinds {
		r := req(`{}`)
		r.Kind = k
		if v := d.CheckCall(bg, r); v.Denied {
			t.Errorf("kind %s: denied: %s", k, v.Reason)
		}
		r = req(`"policy:deny"`)
		r.Kind = k
		if v := d.CheckCall(bg, r); !v.Denied || !strings.Contains(v.Reason, "probe denies") {
			t.Errorf("kind %s: want the probe's deny, got %+v", k, v)
		}
	}
}
