package tools

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// countEntry is a tool of a kind the gate knows nothing about: it counts
// the calls that reached it.
type countEntry struct {
	stub
	ran *int
}

func (e countEntry) Call(context.Context, *Call) Outcome { *e.ran++; return Outcome{Text: "ran"} }

// denyAll is a policy whose answer is its field, recording what it was asked.
type denyAll struct {
	deny  bool
	asked []wit.CallRequest
}

func (p *denyAll) CheckCall(_ context.Context, r wit.CallRequest) (bool, string, string) {
	p.asked = append(p.asked, r)
	return p.deny, "local/p", "the policy hook local/p denied it: no"
}

// The gate stands in front of every entry, whatever its kind: a denied call
// never reaches the entry's Call, writes one call_denied line and no
// tool_call line, fires no hook, and gives the model E-RUN-092; an allowed
// one runs as before. A script's call is never gated (no hook runs in a
// script capsule).
func TestGateStopsEveryKind(t *testing.T) {
	for _, kind := range []string{KindWASM, KindSkill, KindRuntime, KindShell, "mcp"} {
		t.Run(kind, func(t *testing.T) {
			ran := 0
			inv := NewInventory("local/cap")
			inv.Add(countEntry{stub: stub{"acme/t", kind}, ran: &ran})
			p := &denyAll{deny: true}
			inv.SetGate(GateConfig{Policy: p})
			l, h := &lines{}, &hookCount{}
			in := `{ "a": 1 }`
			tc := &TaskCall{TaskID: "tsk_1", Turn: 2, ID: "call_1", ParentID: "evt_inf", Lines: l, Hooks: h}
			o := inv.Call(context.Background(), Call{Name: "t", Input: wit.ToolInput{Data: &in}, Task: tc})
			if ran != 0 || o.Denied != trace.DeniedByHook || h.tool != 0 || len(l.task) != 1 {
				t.Fatalf("ran %d, outcome %+v, hooks %d, lines %+v", ran, o, h.tool, l.task)
			}
			if o.Text != "error[E-RUN-092]: t was not run: the policy hook local/p denied it: no" {
				t.Errorf("the model sees %q", o.Text)
			}
			d, ok := l.task[0].(trace.CallDenied)
			if !ok || d.By != "hook" || *d.Hook != "local/p" || d.ToolName != "t" || d.Kind != kind || d.ToolCallID != "call_1" || d.Turn != 2 {
				t.Errorf("line %+v", l.task[0])
			}
			if r := p.asked[0]; r.Input != `{"a":1}` || r.Kind != kind || r.TaskID != "tsk_1" || r.ToolName != "t" {
				t.Errorf("asked %+v", r)
			}
			p.deny = false
			if o := inv.Call(context.Background(), Call{Name: "t", Input: wit.ToolInput{Data: &in}, Task: tc}); ran != 1 || o.Denied != "" || h.tool != 1 {
				t.Errorf("allowed: ran %d, %+v", ran, o)
			}
			inv.Call(context.Background(), Call{Name: "acme/t", Input: wit.ToolInput{Data: &in}, Recorder: l})
			if ran != 2 || len(p.asked) != 2 {
				t.Errorf("a script's call: ran %d, asked %d", ran, len(p.asked))
			}
		})
	}
}

// The operator's answers: approve runs the call after a call_approved line;
// a refusal, an answer other than approve and a timeout each write
// call_denied and give E-RUN-093; a cancelled wait writes nothing.
func TestGateApproval(t *testing.T) {
	tests := []struct {
		name   string
		answer Answer
		ran    int
		by     string
		text   string
	}{
		{"approved", Answer{Approved: true, MessageID: "op-1"}, 1, "", ""},
		{"denied", ParseApproval("DENY: too risky"), 0, "operator", "error[E-RUN-093]: acme/t was not run: the operator denied it: too risky"},
		{"denied, no reason", ParseApproval("deny"), 0, "operator", "error[E-RUN-093]: acme/t was not run: the operator denied it"},
		{"not approve", ParseApproval("yes please"), 0, "operator", `error[E-RUN-093]: acme/t was not run: the answer was not "approve": yes please`},
		{"timed out", Answer{TimedOut: true}, 0, "timeout", "error[E-RUN-093]: acme/t was not run: no operator answered within lifecycle.input_timeout_secs (2s)"},
		{"cancelled", Answer{Err: context.Canceled}, 0, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ran := 0
			inv := NewInventory("local/cap")
			inv.Add(countEntry{stub: stub{"acme/t", KindWASM}, ran: &ran})
			inv.SetGate(GateConfig{Approval: map[string]bool{"acme/t": true}, InputTimeout: 2 * time.Second})
			l := &lines{}
			var asked []Approval
			tcall := &TaskCall{TaskID: "tsk_1", ID: "call_1", Lines: l, Approve: func(_ context.Context, a Approval) Answer {
				asked = append(asked, a)
				return tc.answer
			}}
			in := `{}`
			o := inv.Call(context.Background(), Call{Name: "acme/t", Input: wit.ToolInput{Data: &in}, Task: tcall})
			if ran != tc.ran || o.Denied != tc.by || len(asked) != 1 || asked[0].Timeout != 2*time.Second {
				t.Fatalf("ran %d, outcome %+v, asked %+v", ran, o, asked)
			}
			if tc.by != "" && o.Text != tc.text {
				t.Errorf("the model sees %q, want %q", o.Text, tc.text)
			}
			if tc.name == "cancelled" && (!o.Canceled || len(l.task) != 1) {
				t.Errorf("a cancelled wait: %+v, lines %+v", o, l.task)
			}
			if _, ok := l.task[0].(trace.ApprovalRequested); !ok {
				t.Errorf("first line %+v", l.task[0])
			}
		})
	}
}

func TestParseApproval(t *testing.T) {
	tests := []struct {
		reply    string
		approved bool
		reason   string
	}{
		{"approve", true, ""}, {"  APPROVE\n", true, ""}, {"approved", false, `the answer was not "approve": approved`},
		{"deny", false, ""}, {"Deny because", false, "because"}, {"deny:  no\n", false, "no"}, {"denying", false, `the answer was not "approve": denying`},
		{"", false, `the answer was not "approve": `}, {"approve\n\n{\"x\":1}", false, "the answer was not \"approve\": approve\n\n{\"x\":1}"},
	}
	for _, tc := range tests {
		a := ParseApproval(tc.reply)
		if a.Approved != tc.approved || a.Reason != tc.reason {
			t.Errorf("%q: %+v", tc.reply, a)
		}
	}
	long := strings.Repeat("é", 300)
	if a := ParseApproval(long); len(a.Reason) > len(`the answer was not "approve": `)+200 {
		t.Errorf("not cut: %d bytes", len(a.Reason))
	}
}

// The text part of an approval request, a shell call's words quoted so the
// splitter reads them back.
func TestApprovalText(t *testing.T) {
	plan, step := "pln_1", "s2"
	got := ApprovalText(Approval{ToolName: "bash", ToolCallID: "call_9", PlanID: &plan, StepID: &step, Input: `{"command":"ls 'a b'"}`,
		Argv: []string{"/bin/bash", "-c", "ls 'a b'"}, Timeout: 30 * time.Second})
	want := "approval required: bash (call call_9)\nplan pln_1, step s2\ninput: {\"command\":\"ls 'a b'\"}\nruns: /bin/bash -c \"ls 'a b'\"\n" +
		`reply "approve" to run it, or "deny" and a reason to refuse it; no reply within 30s refuses it`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	big := ApprovalText(Approval{ToolName: "x", Input: strings.Repeat("a", 5000)})
	if !strings.Contains(big, strings.Repeat("a", 4096)+"[…]\n") || strings.Contains(big, strings.Repeat("a", 4097)) {
		t.Error("the input is not cut at 4 KiB")
	}
}

// FuzzQuoteWord: every word QuoteWord writes, SplitCommand reads back whole.
func FuzzQuoteWord(f *testing.F) {
	for _, s := range []string{"", "a", "a b", "it's", `"q"`, `\`, "$HOME", "`x`", "a'b\"c\\d$e`f", "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, w string) {
		if strings.IndexByte(w, 0) >= 0 {
			return
		}
		got, err := SplitCommand(QuoteWord(w))
		if err != nil || len(got) != 1 || got[0] != w {
			t.Fatalf("%q → %q → %q, %v", w, QuoteWord(w), got, err)
		}
	})
}

// A plan step's call: the hooks are asked with its plan and step ids and
// its call_denied line carries them; a later attempt of the same step (it
// follows only an attempt the gate let through) is not asked again.
func TestGatePlanStepAttempts(t *testing.T) {
	ran := 0
	inv := NewInventory("local/cap")
	inv.Add(countEntry{stub: stub{"acme/t", KindWASM}, ran: &ran})
	p := &denyAll{deny: true}
	inv.SetGate(GateConfig{Policy: p})
	l := &lines{}
	in := `{}`
	step := func(attempt int) Outcome {
		tc := &TaskCall{TaskID: "tsk_1", ID: "call_1.s." + string(rune('0'+attempt)), ParentID: "evt_step", Lines: l,
			Plan: &trace.PlanCall{PlanID: "p", StepID: "s", Attempt: attempt}}
		return inv.Call(context.Background(), Call{Name: "t", Input: wit.ToolInput{Data: &in}, Task: tc})
	}
	if o := step(1); o.Denied != trace.DeniedByHook || ran != 0 {
		t.Fatalf("attempt 1: %+v", o)
	}
	if r := p.asked[0]; r.PlanID == nil || *r.PlanID != "p" || r.StepID == nil || *r.StepID != "s" {
		t.Errorf("asked %+v", r)
	}
	if d, ok := l.task[0].(trace.CallDenied); !ok || d.PlanID == nil || *d.PlanID != "p" || *d.StepID != "s" || d.ToolCallID != "call_1.s.1" {
		t.Errorf("line %+v", l.task[0])
	}
	if o := step(2); o.Denied != "" || ran != 1 || len(p.asked) != 1 {
		t.Errorf("attempt 2: %+v, ran %d, asked %d", o, ran, len(p.asked))
	}
}
