package e2e_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/e2e"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/trace"
)

// memberCallReply is a model reply calling call-member once per member.
func memberCallReply(task string, members ...string) fakeprovider.Reply {
	var r fakeprovider.Reply
	for i, m := range members {
		in, _ := json.Marshal(map[string]string{"member": m, "task": task})
		r.ToolCalls = append(r.ToolCalls, fakeprovider.ToolCall{ID: "call_" + string(rune('1'+i)), Name: "call-member", Pieces: []string{string(in)}})
	}
	return r
}

// fakeFormation publishes one fake-model agent capsule per member (the
// first the entry, the others peers that sleep after a task; every door
// authenticated) and writes their roster with reachability (its YAML
// list), returning each member's fake provider and the roster's folder.
func fakeFormation(t *testing.T, homeDir, base string, members []string, reachability string) ([]*fakeprovider.Server, string) {
	t.Helper()
	e2e.ShareCompileCache(t, homeDir)
	var fps []*fakeprovider.Server
	roster := "roster_version: 1\nmembers:\n"
	for i, m := range members {
		fp := fakeProvider(t, fakeprovider.Anthropic)
		extra, entry := doorAuth+peerSleep, ""
		if i == 0 {
			extra, entry = doorAuth, ", entry: true"
		}
		fakeModelCapsule(t, homeDir, filepath.Join(base, m), m, "0.1.0", extra, fp)
		roster += "  - {name: " + m + ", capsule: " + m + `, version: "0.1.0"` + entry + "}\n"
		fps = append(fps, fp)
	}
	proj := filepath.Join(base, "team")
	os.MkdirAll(proj, 0o755)
	writeRoster(t, proj, roster+"reachability:"+reachability)
	return fps, proj
}

// TestFormationMemberCalls runs a formation through the real binaries: the
// lead's model calls two members in one turn; worker answers, critic (a
// middle member: it may call worker, so it has end-without-answer) ends
// its task with end-without-answer without calling anyone. The lead's task waits, then continues
// once with both answer blocks in call-id order, and the trace lines of
// each side say so.
func TestFormationMemberCalls(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	fps, proj := fakeFormation(t, homeDir, base, []string{"lead", "worker", "critic"}, `
  - from: lead
    to: [worker, critic]
  - from: critic
    to: [worker]
`)
	fpLead, fpWorker, fpCritic := fps[0], fps[1], fps[2]
	fpLead.Push(memberCallReply("count the words", "worker", "critic"), fakeprovider.Reply{Text: []string{"Waiting for both."}},
		fakeprovider.Reply{Text: []string{"Worker counted 42 words; critic had nothing."}})
	fpWorker.Push(fakeprovider.Reply{Text: []string{"42 words"}})
	end, _ := json.Marshal(map[string]string{"reason": "nothing to criticise"})
	fpCritic.Push(fakeprovider.Reply{ToolCalls: []fakeprovider.ToolCall{{ID: "call_e", Name: "end-without-answer", Pieces: []string{string(end)}}}})

	r := runMur(t, homeDir, base, []string{fakeKey}, "run", "--roster", proj, "--json", "--task", "report")
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if r.Code != 0 {
		if len(lines) == 2 {
			rd := parseReady(t, lines[1]+"\n").RecordsDir
			b, _ := os.ReadFile(filepath.Join(rd, trace.FileName))
			t.Logf("the lead's trace:\n%s", b)
		}
		t.Fatalf("%+v", r)
	}
	var fl formationLine
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &fl) != nil || len(fl.Peers) != 2 {
		t.Fatalf("stdout %q", r.Stdout)
	}
	entry := parseReady(t, lines[1]+"\n")
	if got, _ := os.ReadFile(filepath.Join(entry.RecordsDir, "out", "result.txt")); string(got) != "Worker counted 42 words; critic had nothing." {
		t.Errorf("entry answer %q", got)
	}

	// The lead: both tools declared; two calls started, one round, one
	// continuation holding both blocks.
	tl := traceLines(t, entry.RecordsDir)
	var declared []string
	json.Unmarshal(tl[0].Fields["tools_declared"], &declared)
	if strings.Join(declared, ",") != "call-member,end-without-answer" {
		t.Errorf("tools_declared %v", declared)
	}
	starts, calls := byType(tl, trace.TypeMemberCallStart), byType(tl, trace.TypeMemberCall)
	if len(starts) != 2 || len(calls) != 2 {
		t.Fatalf("lead trace: %s", types(tl))
	}
	byMember := map[string]trace.Line{}
	for _, c := range calls {
		byMember[c.Str("member")] = c
		if c.Str("member_task_id") == "" || c.Int("offers") != 1 {
			t.Errorf("member_call %v", c.Fields)
		}
	}
	if w := byMember["worker"]; w.Str("status") != "completed" || w.Int("answer_bytes") != 8 || string(w.Fields["reason"]) != "null" {
		t.Errorf("worker's member_call %v", w.Fields)
	}
	if c := byMember["critic"]; c.Str("status") != "no_answer" || c.Str("reason") != "the member ended its task without an answer: nothing to criticise" {
		t.Errorf("critic's member_call %v", c.Fields)
	}
	wait, cont := byType(tl, trace.TypeTaskWaiting), byType(tl, trace.TypeTaskContinued)
	if len(cont) != 1 || string(cont[0].Fields["delegations"]) != "[]" {
		t.Fatalf("task_continued %v", cont)
	}
	var delivered []string
	json.Unmarshal(cont[0].Fields["member_calls"], &delivered)
	wid, cid := byMember["worker"].Str("call_id"), byMember["critic"].Str("call_id")
	if len(delivered) != 2 || delivered[0] != wid || delivered[1] != cid {
		t.Errorf("task_continued.member_calls %v, want [%s %s]", delivered, wid, cid)
	}
	if len(wait) > 1 || (len(wait) == 1 && (wait[0].Int("outstanding") != 0 || wait[0].Int("member_calls") < 1)) {
		t.Errorf("task_waiting %v", wait)
	}
	for _, tc := range byType(tl, trace.TypeToolCall) {
		if tc.Str("tool_name") == "call-member" && tc.Str("kind") != "runtime" {
			t.Errorf("tool_call %v", tc.Fields)
		}
	}
	reqs := fpLead.Requests()
	if len(reqs) != 3 {
		t.Fatalf("lead model calls %d", len(reqs))
	}
	text := lastMessageText(t, reqs[2])
	wb := "[call-member] call " + wid + " to worker ended completed:\n<untrusted-content source=member:worker>\nFormation member answered.\ncall_id: " + wid +
		"\nmember: worker\ntask_id: " + byMember["worker"].Str("member_task_id") + "\nstatus: completed\nduration_ms: "
	cb := "[call-member] call " + cid + " to critic ended no_answer:\n<untrusted-content source=member:critic>\n"
	wi, ci := strings.Index(text, wb), strings.Index(text, cb)
	if wi < 0 || ci < wi || !strings.Contains(text, "\nanswer:\n42 words\n</untrusted-content>\n\n[call-member]") ||
		!strings.Contains(text, "\nstatus: no_answer\n") ||
		!strings.HasSuffix(text, "\nanswer:\nnone (the member ended its task without an answer: nothing to criticise)\n</untrusted-content>") {
		t.Errorf("continuation:\n%s", text)
	}

	// mur trace show frm_…: one row per call, in call-id order.
	ts := runMur(t, homeDir, base, nil, "trace", "show", fl.FormationID)
	if ts.Code != 0 || !strings.Contains(ts.Stdout, "\ncalls: 2\n  "+wid+"  lead → worker  completed  ") ||
		!strings.Contains(ts.Stdout, "\n  "+cid+"  lead → critic  no_answer  ") {
		t.Errorf("mur trace show:\n%+v", ts)
	}
	var tj struct {
		Calls []struct {
			CallID           string `json:"call_id"`
			From, To, Status string
			Offers           int
			MemberTaskID     *string `json:"member_task_id"`
			DurationMS       *int64  `json:"duration_ms"`
		} `json:"calls"`
	}
	if tr := runMur(t, homeDir, base, nil, "trace", "show", fl.FormationID, "--json"); tr.Code != 0 || json.Unmarshal([]byte(tr.Stdout), &tj) != nil ||
		len(tj.Calls) != 2 || tj.Calls[0].CallID != wid || tj.Calls[0].From != "lead" || tj.Calls[0].To != "worker" || tj.Calls[0].Status != "completed" ||
		tj.Calls[0].Offers != 1 || tj.Calls[0].MemberTaskID == nil || *tj.Calls[0].MemberTaskID != byMember["worker"].Str("member_task_id") ||
		tj.Calls[0].DurationMS == nil || tj.Calls[1].Status != "no_answer" {
		t.Errorf("mur trace show --json: %+v", tr)
	}

	// The callees: each task came on the lead's token; the critic's ended
	// no_answer with its result file saying so, and its session still ends ok.
	for _, p := range fl.Peers {
		pl := traceLines(t, p.RecordsDir)
		recv := lastOf(pl, "a2a_task_received")
		if recv == nil || recv.Str("caller_member") != "lead" {
			t.Errorf("%s a2a_task_received %v", p.Name, recv)
		}
		te := lastOf(pl, "task_end")
		want := map[string]string{"worker": "ok", "critic": "no_answer"}[p.Name]
		if te == nil || te.Str("exit_status") != want {
			t.Errorf("%s task_end %v", p.Name, te)
		}
		if se := lastEnd(t, pl); se.Str("exit_status") != "ok" {
			t.Errorf("%s session_end %v", p.Name, se.Fields)
		}
		if p.Name == "critic" {
			if got, _ := os.ReadFile(filepath.Join(p.RecordsDir, "out", "result.txt")); string(got) != "no answer: nothing to criticise" {
				t.Errorf("critic result.txt %q", got)
			}
			if n := len(fpCritic.Requests()); n != 1 {
				t.Errorf("the critic's model was called %d times after end-without-answer", n)
			}
		}
	}
}

// TestFormationMemberCallCanceled: cancelling a task that waits on a member
// call abandons the call — the member's task gets CancelTask — and the
// cancel's residue and task_canceled name the call.
func TestFormationMemberCallCanceled(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	fps, proj := fakeFormation(t, homeDir, base, []string{"lead", "worker"}, `
  - from: lead
    to: [worker]
`)
	fpLead, fpWorker := fps[0], fps[1]
	fpLead.Push(memberCallReply("think for a long time", "worker"), fakeprovider.Reply{Text: []string{"Waiting for the worker."}})
	fpWorker.Push(fakeprovider.Reply{Hang: true}) // the member's model never answers

	// The entry has no --task: it serves its door, and the test sends it one.
	cmd := e2e.MurCmdEnv(t, homeDir, base, []string{fakeKey}, "run", "--roster", proj, "--json")
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	br := bufio.NewReader(out)
	line, _ := br.ReadString('\n')
	var fl formationLine
	if err := json.Unmarshal([]byte(line), &fl); err != nil || len(fl.Peers) != 1 {
		t.Fatalf("formation line %q", line)
	}
	entry := readReady(t, br)
	var rec running.Record
	rb, _ := os.ReadFile(filepath.Join(home.Running(homeDir), entry.SessionID+".json"))
	if json.Unmarshal(rb, &rec) != nil || rec.DoorToken == "" {
		t.Fatalf("running record %s", rb)
	}
	url, op := "http://"+*entry.URL+"/", map[string][]string{"Authorization": {"Bearer " + rec.DoorToken}}
	a := call(t, url, op, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"report"}]},"configuration":{"returnImmediately":true}}}`)
	taskID := regexp.MustCompile(`tsk_[0-9a-f]{32}`).FindString(a.body)
	if a.status != 200 || taskID == "" {
		t.Fatalf("SendMessage: %d %s", a.status, a.body)
	}
	waitFor(t, "the lead to wait on its call", func() bool {
		return lastOf(traceLines(t, entry.RecordsDir), trace.TypeTaskWaiting) != nil
	})
	waitFor(t, "the worker's model to be called", func() bool { return len(fpWorker.Requests()) == 1 })
	start := lastOf(traceLines(t, entry.RecordsDir), trace.TypeMemberCallStart)
	callID, memberTask := start.Str("call_id"), start.Str("member_task_id")

	a = call(t, url, op, `{"jsonrpc":"2.0","id":2,"method":"CancelTask","params":{"id":"`+taskID+`"}}`)
	if a.status != 200 || !strings.Contains(a.body, `"delegations":[]`) || !strings.Contains(a.body, `"member_calls":["`+callID+`"]`) {
		t.Fatalf("CancelTask: %d %s", a.status, a.body)
	}
	waitFor(t, "the call to end abandoned", func() bool {
		return lastOf(traceLines(t, entry.RecordsDir), trace.TypeMemberCall) != nil
	})
	tl := traceLines(t, entry.RecordsDir)
	if mc := lastOf(tl, trace.TypeMemberCall); mc.Str("status") != "abandoned" || mc.Str("member_task_id") != memberTask {
		t.Errorf("member_call %v", mc.Fields)
	}
	if tc := lastOf(tl, trace.TypeTaskCanceled); tc == nil || tc.Str("phase") != "waiting" || string(tc.Fields["member_call_ids"]) != `["`+callID+`"]` {
		t.Errorf("task_canceled %v", tc)
	}
	if len(byType(tl, trace.TypeTaskContinued)) != 0 {
		t.Error("an abandoned call was delivered")
	}
	waitFor(t, "the member's task to be cancelled", func() bool {
		tc := lastOf(traceLines(t, fl.Peers[0].RecordsDir), trace.TypeTaskCanceled)
		return tc != nil && tc.Str("task_id") == memberTask
	})
}
