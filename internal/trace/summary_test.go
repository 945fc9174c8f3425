package trace

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// jsonl builds a trace from event bodies: each gets the envelope, with
// timestamps 1000, 1010, ….
func jsonl(bodies ...string) string {
	var b strings.Builder
	for i, body := range bodies {
		fmt.Fprintf(&b, `{"event_id":"evt_%d","parent_id":null,"session_id":"ses_a","timestamp":%d,%s}`+"\n", i, 1000+10*i, body)
	}
	return b.String()
}

const agentStart = `"event_type":"session_start","kind":"agent","capsule_name":"local/g","capsule_version":"1.0.0"`

func TestSummarizeAgent(t *testing.T) {
	cases := []struct {
		name        string
		trace       string
		tasks       []TaskSummary
		turns       int64
		in, out     int64
		rejected    int
		shell       int
		delegations []DelegationSummary
	}{{
		name: "tasks ended, totals from session_end",
		trace: jsonl(agentStart,
			`"event_type":"task_start","task_id":"tsk_1","context_id":"ctx_1","source":"task_md","origin":"user"`,
			`"event_type":"inference","task_id":"tsk_1","turn":1,"input_tokens":10,"output_tokens":5`,
			`"event_type":"tool_call","task_id":"tsk_1","tool_name":"acme/echo","status":"ok"`,
			`"event_type":"inference","task_id":"tsk_1","turn":2,"input_tokens":20,"output_tokens":6`,
			`"event_type":"task_end","task_id":"tsk_1","exit_status":"ok","turns":2,"input_tokens":30,"output_tokens":11,"tool_calls":1,"tool_errors":0,"shell_calls":0,"duration_ms":40`,
			`"event_type":"task_rejected","task_id":"tsk_2","reason":"task rejected: capsule is busy"`,
			`"event_type":"task_start","task_id":"tsk_3","context_id":"ctx_1","source":"a2a","origin":"user"`,
			`"event_type":"inference","task_id":"tsk_3","turn":1,"input_tokens":7,"output_tokens":1`,
			`"event_type":"tool_call","task_id":"tsk_3","tool_name":"nope","status":"error"`,
			`"event_type":"shell","task_id":"tsk_3","binary":"/bin/sh","command":"ls","exit_code":0`,
			`"event_type":"delegation_start","delegation_id":"dlg_1","capsule":"worker","version":"0.1.0","child_session_id":"ses_c"`,
			`"event_type":"delegation","delegation_id":"dlg_1","capsule":"worker","version":"0.1.0","child_session_id":"ses_c","duration_ms":25,"outcome":"ok","reason":""`,
			`"event_type":"task_canceled","task_id":"tsk_3","phase":"inference","delegation_ids":[]`,
			`"event_type":"task_end","task_id":"tsk_3","exit_status":"canceled","turns":1,"input_tokens":7,"output_tokens":1,"tool_calls":0,"tool_errors":1,"shell_calls":1,"duration_ms":15`,
			// Hooks' run-inference tokens count in session_end only.
			`"event_type":"session_end","exit_status":"canceled","reason":"stopped","duration_ms":200,"tasks":2,"total_turns":3,"input_tokens":40,"output_tokens":12,"tool_calls":2,"tool_errors":1,"shell_calls":1`,
		),
		tasks: []TaskSummary{
			{TaskID: "tsk_1", ContextID: "ctx_1", Source: "task_md", Origin: "user", Status: "ok", Turns: 2, InputTokens: 30, OutputTokens: 11, ToolCalls: 1, Duration: 40 * time.Millisecond},
			{TaskID: "tsk_3", ContextID: "ctx_1", Source: "a2a", Origin: "user", Status: "canceled", Phase: "inference", Turns: 1, InputTokens: 7, OutputTokens: 1, ToolErrors: 1, ShellCalls: 1, Duration: 15 * time.Millisecond},
		},
		turns: 3, in: 40, out: 12, rejected: 1, shell: 1,
		delegations: []DelegationSummary{{DelegationID: "dlg_1", Capsule: "worker", Version: "0.1.0", ChildSession: "ses_c", Outcome: "ok", Duration: 25 * time.Millisecond}},
	}, {
		name: "killed mid-task: the task's lines add up, a delegation still out",
		trace: jsonl(agentStart,
			`"event_type":"task_start","task_id":"tsk_1","context_id":"ctx_1","source":"a2a","origin":"delegation"`,
			`"event_type":"inference","task_id":"tsk_1","turn":1,"input_tokens":3,"output_tokens":4`,
			`"event_type":"tool_call","task_id":"tsk_1","tool_name":"acme/echo","status":"ok"`,
			`"event_type":"tool_call","task_id":"tsk_1","tool_name":"acme/echo","status":"error"`,
			`"event_type":"inference","task_id":"tsk_1","turn":2,"input_tokens":5,"output_tokens":6`,
			`"event_type":"shell","task_id":"tsk_1","binary":"/usr/bin/git","command":"git status","exit_code":1`,
			`"event_type":"delegation_start","delegation_id":"dlg_2","capsule":"w","version":"2.0.0","child_session_id":"ses_d"`,
		),
		tasks: []TaskSummary{{TaskID: "tsk_1", ContextID: "ctx_1", Source: "a2a", Origin: "delegation", Turns: 2, InputTokens: 8, OutputTokens: 10, ToolCalls: 2, ToolErrors: 1, ShellCalls: 1}},
		turns: 2, in: 8, out: 10, shell: 1,
		delegations: []DelegationSummary{{DelegationID: "dlg_2", Capsule: "w", Version: "2.0.0", ChildSession: "ses_d"}},
	}, {
		name:  "a script trace has no tasks",
		trace: jsonl(`"event_type":"session_start","kind":"script"`, `"event_type":"tool_call","tool_name":"echo","status":"ok"`, `"event_type":"session_end","exit_status":"ok","duration_ms":5,"tool_calls":1,"tool_errors":0`),
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Read(strings.NewReader(tc.trace))
			if err != nil || len(f.Bad) > 0 {
				t.Fatalf("read: %v, bad lines %v", err, f.Bad)
			}
			s := Summarize(f)
			if !reflect.DeepEqual(s.Tasks, tc.tasks) {
				t.Errorf("tasks\n got %+v\nwant %+v", s.Tasks, tc.tasks)
			}
			if s.TotalTurns != tc.turns || s.InputTokens != tc.in || s.OutputTokens != tc.out {
				t.Errorf("totals: turns %d, tokens %d/%d; want %d, %d/%d", s.TotalTurns, s.InputTokens, s.OutputTokens, tc.turns, tc.in, tc.out)
			}
			if len(s.Rejected) != tc.rejected || len(s.ShellCalls) != tc.shell {
				t.Errorf("rejected %d, shell %d; want %d, %d", len(s.Rejected), len(s.ShellCalls), tc.rejected, tc.shell)
			}
			if !reflect.DeepEqual(s.Delegations, tc.delegations) {
				t.Errorf("delegations\n got %+v\nwant %+v", s.Delegations, tc.delegations)
			}
		})
	}
}
