package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/murmur-go/murmur/internal/trace"
)

// tracePlan is one plan as its lines tell it.
type tracePlan struct {
	id, task, outcome, failed, reason string
	ok, bad, skipped                  int64
	steps                             []*tracePlanStep
	byID                              map[string]*tracePlanStep
}

type tracePlanStep struct {
	id, kind, status, err string
	deps                  []string
	attempts              int64
}

// renderPlans prints each plan of an agent session under its task: its
// outcome and counts, and its steps as a graph (each with what it depended
// on and its status) (docs/plans.md).
func renderPlans(w io.Writer, each func(func(trace.Line)) error) error {
	var plans []*tracePlan
	byLine := map[string]*tracePlan{}
	err := each(func(l trace.Line) {
		switch l.EventType {
		case trace.TypePlanStart:
			p := &tracePlan{id: l.Str("plan_id"), task: l.Str("task_id"), byID: map[string]*tracePlanStep{}}
			var steps []struct {
				StepID    string   `json:"step_id"`
				Kind      string   `json:"kind"`
				DependsOn []string `json:"depends_on"`
			}
			json.Unmarshal(l.Fields["steps"], &steps)
			for _, s := range steps {
				st := &tracePlanStep{id: s.StepID, kind: s.Kind, deps: s.DependsOn}
				p.steps = append(p.steps, st)
				p.byID[s.StepID] = st
			}
			plans = append(plans, p)
			byLine[l.EventID] = p
		case trace.TypePlanStep:
			if p := byLine[l.ParentID]; p != nil {
				if st := p.byID[l.Str("step_id")]; st != nil {
					st.status, st.err, st.attempts = l.Str("status"), l.Str("error"), l.Int("attempts")
				}
			}
		case trace.TypePlanEnd:
			p := byLine[l.ParentID]
			if p == nil { // a refused plan: its lone plan_end
				p = &tracePlan{id: l.Str("plan_id")}
				plans = append(plans, p)
			}
			p.outcome, p.failed, p.reason = l.Str("outcome"), l.Str("failed_step"), l.Str("reason")
			p.ok, p.bad, p.skipped = l.Int("steps_succeeded"), l.Int("steps_failed"), l.Int("steps_skipped")
		}
	})
	if err != nil || len(plans) == 0 {
		return err
	}
	fmt.Fprintf(w, "%-10s %d\n", "plans:", len(plans))
	for _, p := range plans {
		outcome := p.outcome
		if outcome == "" {
			outcome = "unfinished"
		}
		line := fmt.Sprintf("  plan %s: %s", safe(p.id), safe(outcome))
		if p.task != "" {
			line += " (task " + safe(p.task) + ")"
		}
		if outcome == "refused" {
			line += ", " + safe(p.reason)
		} else {
			line += fmt.Sprintf(", %d succeeded, %d failed, %d skipped", p.ok, p.bad, p.skipped)
		}
		if p.failed != "" {
			line += ", failed step " + safe(p.failed)
		}
		fmt.Fprintln(w, line)
		for _, s := range p.steps {
			status := s.status
			if status == "" {
				status = "unsettled"
			}
			row := fmt.Sprintf("    %-16s %-7s %-9s", safe(s.id), safe(s.kind), safe(status))
			if s.attempts > 1 {
				row += fmt.Sprintf(" %d attempts", s.attempts)
			}
			if len(s.deps) > 0 {
				row += " ← " + safe(strings.Join(s.deps, ", "))
			}
			if s.err != "" {
				row += "  " + safe(clip(s.err, 80))
			}
			fmt.Fprintln(w, strings.TrimRight(row, " "))
		}
	}
	return nil
}
