package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkPlanVsCalls runs 10 independent calls of the echo WASM tool
// through the real mur twice: as one plan of 10 tool steps, and as 10
// calls the model makes one after another in one turn. It reports each
// one's wall time from the trace (ms): the whole submit-plan call's
// (plan_end.duration_ms: validation and both writes of plans/plan-<n>.json
// included), its steps' (the first plan_step_start to the last plan_step),
// and the calls' (the first call's start to the last one's end).
func BenchmarkPlanVsCalls(b *testing.B) {
	homeDir, base := b.TempDir(), b.TempDir()
	var steps, calls []string
	for i := 0; i < 10; i++ {
		steps = append(steps, `{"id":"s`+itoa(i)+`","tool":"echo","input":{"message":"m`+itoa(i)+`"}}`)
		calls = append(calls, `{"type":"tool_call","id":"c`+itoa(i)+`","name":"echo","input":{"message":"m`+itoa(i)+`"}}`)
	}
	text := `{"content":[{"type":"text","text":"done"}]}`
	planT := `{"version":1,"responses":[{"content":[{"type":"tool_call","id":"p","name":"submit-plan","input":{"id":"ten","steps":[` + strings.Join(steps, ",") + `]}}]},` + text + `]}`
	callT := `{"version":1,"responses":[{"content":[` + strings.Join(calls, ",") + `]},` + text + `]}`
	projP := agentProject(b, homeDir, base+"/p", planGrant, planT)
	projC := agentProject(b, homeDir, base+"/c", planGrant, callT)
	var planMS, stepsMS, callMS float64
	for i := 0; i < b.N; i++ {
		for _, proj := range []string{projP, projC} {
			r := runMur(b, homeDir, proj, nil, "run", "--json", "--task", "ten")
			if r.Code != 0 {
				b.Fatalf("run: %+v", r)
			}
			var rd struct {
				RecordsDir string `json:"records_dir"`
			}
			json.Unmarshal([]byte(strings.SplitN(r.Stdout, "\n", 2)[0]), &rd)
			lines := traceLines(b, rd.RecordsDir)
			if proj == projP {
				planMS += float64(lastOf(lines, "plan_end").Int("duration_ms"))
				var first, last int64
				for _, l := range lines {
					switch l.EventType {
					case "plan_step_start":
						if first == 0 {
							first = l.Int("timestamp")
						}
					case "plan_step":
						last = l.Int("timestamp")
					}
				}
				stepsMS += float64(last - first)
				continue
			}
			var first, last int64
			for _, l := range byType(lines, "tool_call") {
				start := l.Int("timestamp") - l.Int("duration_ms")
				if first == 0 || start < first {
					first = start
				}
				last = max(last, l.Int("timestamp"))
			}
			callMS += float64(last - first)
		}
	}
	b.ReportMetric(planMS/float64(b.N), "plan-ms/op")
	b.ReportMetric(stepsMS/float64(b.N), "steps-ms/op")
	b.ReportMetric(callMS/float64(b.N), "calls-ms/op")
}
