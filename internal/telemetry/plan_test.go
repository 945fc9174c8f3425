package telemetry

import (
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/trace"
)

// A plan's lines become capsule.plan under the task, capsule.plan_step
// under the plan, and each step's call spans under its step; a refused
// plan is a capsule.plan of its own; a failed step and a plan that did not
// complete carry error status.
func TestPlanLinesBecomeSpans(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	dir := t.TempDir()
	sink, err := Open(trace.SpanExport{Endpoint: srv.URL, SessionID: "ses_p", CapsuleName: "local/agent", CapsuleVersion: "0.2.0",
		Kind: "agent", LogPath: filepath.Join(dir, "otel.log"), Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := trace.Create(filepath.Join(dir, trace.FileName), "ses_p", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Close()
	rec := trace.NewRecorder(tw, sink, time.Now(), nil)
	rec.Emit(trace.AgentSessionStart{SessionStart: trace.SessionStart{CapsuleName: "local/agent", CapsuleVersion: "0.2.0", Kind: "agent"}})
	task := rec.Emit(trace.TaskStart{TaskID: "tsk_1", ContextID: "ctx_1", Source: "a2a", Origin: "user"})
	inf := rec.EmitUnder(task, trace.Inference{TaskID: "tsk_1", Turn: 1, Model: "replay", ToolCalls: []string{"submit-plan"}})
	ps := rec.EmitUnder(inf, trace.PlanStart{TaskID: "tsk_1", Turn: 1, ToolCallID: "call_1", PlanID: "build", StepCount: 2})
	st := rec.EmitUnder(ps, trace.PlanStepStart{PlanID: "build", StepID: "a", Kind: "tool"})
	rec.EmitUnder(st, trace.AgentToolCall{ToolCall: trace.ToolCall{ToolName: "echo", Status: "ok"}, TaskID: "tsk_1", Turn: 1,
		ToolCallID: "call_1.a.1", Kind: "wasm", PlanCall: trace.PlanCall{PlanID: "build", StepID: "a", Attempt: 1}})
	rec.EmitUnder(ps, trace.PlanStep{PlanID: "build", StepID: "a", Kind: "tool", Status: "success", Attempts: 1})
	st = rec.EmitUnder(ps, trace.PlanStepStart{PlanID: "build", StepID: "b", Kind: "shell"})
	rec.EmitUnder(st, trace.Shell{TaskID: "tsk_1", Turn: 1, ToolCallID: "call_1.b.1", Binary: "/bin/false", ExitCode: 1})
	e := "exit code 1"
	rec.EmitUnder(ps, trace.PlanStep{PlanID: "build", StepID: "b", Kind: "shell", Status: "failed", Attempts: 1, Error: &e})
	failed := "b"
	rec.EmitUnder(ps, trace.PlanEnd{PlanID: "build", Outcome: "failed", FailedStep: &failed, StepsTotal: 2, StepsSucceeded: 1, StepsFailed: 1})
	rec.EmitUnder(inf, trace.PlanEnd{PlanID: "bad", Outcome: "refused"})
	rec.EmitUnder(task, &trace.TaskEnd{TaskID: "tsk_1", ExitStatus: "ok", Turns: 1})
	rec.EndAgent("ok", "", true)

	ts := c.one(t, SpanTask)
	plans := c.byName(SpanPlan)
	if len(plans) != 2 {
		t.Fatalf("%d plan spans", len(plans))
	}
	var plan = plans[0]
	if attrs(plan)["plan_id"] != "build" {
		plan = plans[1]
	}
	if !under(plan, ts) || attrs(plan)["outcome"] != "failed" || attrs(plan)["failed_step"] != "b" || plan.Status == nil || plan.Status.Code != 2 {
		t.Errorf("plan span %v %v", attrs(plan), plan.Status)
	}
	steps := c.byName(SpanPlanStep)
	if len(steps) != 2 {
		t.Fatalf("%d step spans", len(steps))
	}
	for _, s := range steps {
		if !under(s, plan) {
			t.Errorf("step %v not under the plan", attrs(s))
		}
	}
	if sp := c.one(t, SpanToolCall); !under(sp, steps[0]) && !under(sp, steps[1]) {
		t.Errorf("the step's tool_call is not under a step span")
	}
	if sp := c.one(t, SpanShell); !under(sp, steps[0]) && !under(sp, steps[1]) {
		t.Errorf("the step's shell is not under a step span")
	}
}
