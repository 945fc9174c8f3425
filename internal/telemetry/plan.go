package telemetry

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	mtrace "github.com/murmur-go/murmur/internal/trace"
)

// Span names of plans (docs/plans.md).
const (
	SpanPlan     = "capsule.plan"
	SpanPlanStep = "capsule.plan_step"
)

// planSpans are a session's open plan and plan-step spans, by the event_id
// of the line that opened them (plan_start, plan_step_start): the lines
// under those find their parent span here.
type planSpans struct {
	mu    sync.Mutex
	open  map[string]*openSpan // plan_start / plan_step_start event_id
	steps map[string]string    // plan_start event_id + "/" + step_id → plan_step_start event_id
}

type openSpan struct {
	ctx  context.Context
	span trace.Span
}

func (p *planSpans) get(id string) *openSpan {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open[id]
}

// planCtx is the span context a line under parent goes in: a plan step's,
// else nil (its task's).
func (s *Session) planCtx(parent string) context.Context {
	if o := s.plans.get(parent); o != nil {
		return o.ctx
	}
	return nil
}

// planLine mirrors the four plan lines: capsule.plan under the task (from
// plan_start to plan_end), capsule.plan_step under it (from plan_step_start
// to plan_step); each step's call spans go under its step's span.
func (s *Session) planLine(l mtrace.Emitted, ev any) {
	p := &s.plans
	switch e := ev.(type) {
	case mtrace.PlanStart:
		t := s.taskOf(l.ParentID)
		if t == nil {
			return
		}
		attrs := []attribute.KeyValue{attribute.String("task_id", e.TaskID), attribute.Int("turn", e.Turn),
			attribute.String("tool_call_id", e.ToolCallID), attribute.String("plan_id", e.PlanID), attribute.String("file", e.File),
			attribute.Int("input_bytes", e.InputBytes), attribute.Int("step_count", e.StepCount)}
		ctx, sp, ok := t.child(SpanPlan, trace.SpanKindInternal, l.At, attrs...)
		if !ok {
			return
		}
		s.note(l.EventID, t)
		p.mu.Lock()
		if p.open == nil {
			p.open, p.steps = map[string]*openSpan{}, map[string]string{}
		}
		p.open[l.EventID] = &openSpan{ctx: ctx, span: sp}
		p.mu.Unlock()
	case mtrace.PlanStepStart:
		plan := p.get(l.ParentID)
		if plan == nil {
			return
		}
		ctx, sp := s.tracer.Start(plan.ctx, SpanPlanStep, trace.WithTimestamp(l.At), trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attribute.String("plan_id", e.PlanID), attribute.String("step_id", e.StepID), attribute.String("kind", e.Kind)))
		s.note(l.EventID, s.taskOf(l.ParentID))
		p.mu.Lock()
		p.open[l.EventID] = &openSpan{ctx: ctx, span: sp}
		p.steps[l.ParentID+"/"+e.StepID] = l.EventID
		p.mu.Unlock()
	case mtrace.PlanStep:
		p.mu.Lock()
		id := p.steps[l.ParentID+"/"+e.StepID]
		step := p.open[id]
		delete(p.open, id)
		delete(p.steps, l.ParentID+"/"+e.StepID)
		p.mu.Unlock()
		if step == nil {
			return // never dispatched: no span
		}
		step.span.SetAttributes(attribute.String("status", e.Status), attribute.Int("attempts", e.Attempts),
			attribute.Int64("duration_ms", e.DurationMS))
		if e.OutputBytes != nil {
			step.span.SetAttributes(attribute.Int("output_bytes", *e.OutputBytes))
		}
		if e.Error != nil {
			step.span.SetAttributes(attribute.String("error", *e.Error))
		}
		if e.Status == "failed" {
			step.span.SetStatus(codes.Error, str(e.Error))
		}
		step.span.End(trace.WithTimestamp(l.At))
	case mtrace.PlanEnd:
		p.mu.Lock()
		plan := p.open[l.ParentID]
		delete(p.open, l.ParentID)
		p.mu.Unlock()
		var sp trace.Span
		if plan != nil {
			sp = plan.span
		} else if t := s.taskOf(l.ParentID); t != nil { // a refused plan: a span of its own
			var ok bool
			if _, sp, ok = t.child(SpanPlan, trace.SpanKindInternal, l.At.Add(-ms(e.DurationMS)), attribute.String("plan_id", e.PlanID)); !ok {
				return
			}
		} else {
			return
		}
		sp.SetAttributes(attribute.String("outcome", e.Outcome), attribute.Int("steps_total", e.StepsTotal),
			attribute.Int("steps_succeeded", e.StepsSucceeded), attribute.Int("steps_failed", e.StepsFailed),
			attribute.Int("steps_skipped", e.StepsSkipped), attribute.Int64("duration_ms", e.DurationMS))
		if e.FailedStep != nil {
			sp.SetAttributes(attribute.String("failed_step", *e.FailedStep))
		}
		if e.Reason != nil {
			sp.SetAttributes(attribute.String("reason", *e.Reason))
		}
		if e.Outcome != "completed" {
			sp.SetStatus(codes.Error, e.Outcome)
		}
		sp.End(trace.WithTimestamp(l.At))
	}
}
