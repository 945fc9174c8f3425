package membercall

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/murmur-go/murmur/internal/agent"
	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/tools"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// memberDoor is a door-like JSON-RPC server on loopback: SendMessage
// answers from a script of offers, GetTask reports the task's state as the
// test sets it, and every request's headers and CancelTask's ids are kept.
type memberDoor struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	offers   []string // "busy", "queue", "started", "rejected:<text>", "hang"
	state    a2a.TaskState
	message  string // the task's status message
	answer   string // its response artifact ("" for none)
	sends    int
	gets     int
	canceled []string
	headers  []http.Header
	bodies   []map[string]any
}

const memberTask = "tsk_0193aaaabbbbccccddddeeeeffff0009"

func newMemberDoor(t *testing.T, offers ...string) *memberDoor {
	d := &memberDoor{t: t, offers: offers, state: a2a.TaskStateWorking}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *memberDoor) set(state a2a.TaskState, message, answer string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.state, d.message, d.answer = state, message, answer
}

func (d *memberDoor) task(state a2a.TaskState, message string) *a2a.Task {
	info := a2a.TaskInfo{TaskID: memberTask, ContextID: "ctx_1"}
	t := &a2a.Task{ID: memberTask, ContextID: "ctx_1", Status: a2a.TaskStatus{State: state}}
	if message != "" {
		t.Status.Message = a2a.NewMessageForTask(a2a.MessageRoleAgent, info, a2a.NewTextPart(message))
	}
	return t
}

func (d *memberDoor) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     any             `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "bad json", 400)
		return
	}
	var params map[string]any
	_ = json.Unmarshal(req.Params, &params)
	d.mu.Lock()
	d.headers = append(d.headers, r.Header.Clone())
	var result any
	switch req.Method {
	case "SendMessage":
		d.bodies = append(d.bodies, params)
		d.sends++
		next := "started"
		if len(d.offers) > 0 {
			next, d.offers = d.offers[0], d.offers[1:]
		}
		switch {
		case next == "hang":
			d.mu.Unlock()
			<-r.Context().Done()
			return
		case next == "busy":
			result = a2a.StreamResponse{Event: d.task(a2a.TaskStateRejected, "task rejected: capsule is busy")}
		case next == "queue":
			result = a2a.StreamResponse{Event: d.task(a2a.TaskStateRejected, "task rejected: the queue is full (lifecycle.queue_depth 2)")}
		case strings.HasPrefix(next, "rejected:"):
			result = a2a.StreamResponse{Event: d.task(a2a.TaskStateRejected, strings.TrimPrefix(next, "rejected:"))}
		default:
			result = a2a.StreamResponse{Event: d.task(a2a.TaskStateSubmitted, "")}
		}
	case "GetTask":
		d.gets++
		t := d.task(d.state, d.message)
		if d.answer != "" {
			t.Artifacts = []*a2a.Artifact{{ID: "response", Name: "response", Parts: a2a.ContentParts{a2a.NewTextPart(d.answer)}}}
		}
		result = t
	case "CancelTask":
		d.canceled = append(d.canceled, fmt.Sprint(params["id"]))
		d.state = a2a.TaskStateCanceled
		result = d.task(a2a.TaskStateCanceled, "")
	default:
		result = nil
	}
	d.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
}

// fixture is a runtime calling one member, "worker", at door url.
type fixture struct {
	rt    *Runtime
	trace string
	rec   *trace.Recorder
	dir   string
}

func newFixture(t *testing.T, url string, deadline time.Duration) *fixture {
	t.Helper()
	dir := t.TempDir()
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	callees := formation.NewCallees(&formation.Line1{Calls: []formation.Call{{Name: "worker", Token: "mft1.edge"}}}, bufio.NewReader(pr), nil)
	go fmt.Fprintf(pw, `{"addresses":[{"name":"worker","url":%q}]}`+"\n", url)
	path := filepath.Join(dir, trace.FileName)
	tw, err := trace.Create(path, "ses_1", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tw.Close() })
	rec := trace.NewRecorder(tw, nil, time.Now(), nil)
	zero := time.Duration(0)
	rt := New(Config{Callees: callees, Deadline: deadline, RuntimeDir: dir, Recorder: rec,
		PollEvery: 20 * time.Millisecond, ReadBound: 300 * time.Millisecond, AddressWait: time.Second,
		Backoff: func(int) time.Duration { return 30 * time.Millisecond }, Jitter: &zero})
	t.Cleanup(rt.Close)
	return &fixture{rt: rt, trace: path, rec: rec, dir: dir}
}

// call makes one call-member call from task tsk_1.
func (f *fixture) call(t *testing.T, input string) tools.Outcome {
	t.Helper()
	return (&CallTool{f.rt}).Call(context.Background(), callFor("tsk_1", input, f.rec))
}

// callFor is a model's call from task with input.
func callFor(task, input string, rec *trace.Recorder) *tools.Call {
	return &tools.Call{Input: wit.ToolInput{Data: &input}, Task: &tools.TaskCall{TaskID: task, ID: "call_1", Lines: rec}}
}

// lines are the trace's lines of one type, as JSON objects.
func (f *fixture) lines(t *testing.T, typ string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(f.trace)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["event_type"] == typ {
			out = append(out, m)
		}
	}
	return out
}

// wait is the round's wait for tsk_1's calls, then its blocks.
func (f *fixture) wait(t *testing.T) ([]string, []string) {
	t.Helper()
	return waitTask(t, f, "tsk_1")
}

// waitTask is the round's wait for task's calls, then its blocks.
func waitTask(t *testing.T, f *fixture, task string) ([]string, []string) {
	t.Helper()
	c := f.rt.Claim(task)
	if c == nil {
		t.Fatal("nothing to claim")
	}
	deadline := time.After(20 * time.Second)
	for {
		n, ch := c.Outstanding()
		if n == 0 {
			return c.Deliver()
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatal("the call never ended")
		}
	}
}

func outcome(t *testing.T, o tools.Outcome) (map[string]string, bool) {
	t.Helper()
	text := o.Text
	if o.Err != nil {
		text = o.Err.Error()
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		t.Fatalf("result %q is no object: %v", text, err)
	}
	return m, o.Err != nil
}

func TestCallBusyThenStartedThenCompleted(t *testing.T) {
	d := newMemberDoor(t, "busy", "queue", "started")
	f := newFixture(t, d.srv.URL, time.Minute)
	res, isErr := outcome(t, f.call(t, `{"member":"worker","task":"count the words"}`))
	if isErr || res["status"] != "busy" || !strings.HasPrefix(res["call_id"], "mcl_") || len(res["call_id"]) != 36 ||
		res["member"] != "worker" || !strings.Contains(res["note"], "do not call worker again") {
		t.Fatalf("first offer: %v (error %v)", res, isErr)
	}
	// A second call to the same member is refused while this one is outstanding.
	again := f.call(t, `{"member":"worker","task":"again"}`)
	want := fmt.Sprintf("a call to 'worker' from this task is still outstanding (call %s); its answer arrives after this turn ends", res["call_id"])
	if again.Err == nil || again.Err.Error() != want {
		t.Fatalf("second call: %v", again.Err)
	}
	go func() {
		for {
			d.mu.Lock()
			started := d.sends >= 3
			d.mu.Unlock()
			if started {
				d.set(a2a.TaskStateCompleted, "done", "42 words")
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	ids, blocks := f.wait(t)
	if len(ids) != 1 || ids[0] != res["call_id"] {
		t.Fatalf("ids %v", ids)
	}
	b := blocks[0]
	for _, want := range []string{
		"[call-member] call " + res["call_id"] + " to worker ended completed:\n<untrusted-content source=member:worker>\nFormation member answered.\n",
		"call_id: " + res["call_id"] + "\nmember: worker\ntask_id: " + memberTask + "\nstatus: completed\nduration_ms: ",
		"\nanswer:\n42 words\n</untrusted-content>",
	} {
		if !strings.Contains(b, want) {
			t.Errorf("block lacks %q:\n%s", want, b)
		}
	}
	// The wire: three offers with the edge's token, origin peer, version
	// 1.0 and returnImmediately; one fresh messageId each.
	d.mu.Lock()
	seen := map[string]bool{}
	for i, h := range d.headers {
		if h.Get("Authorization") != "Bearer mft1.edge" || h.Get("A2A-Version") != "1.0" {
			t.Errorf("request %d headers %v", i, h)
		}
	}
	for i, body := range d.bodies {
		if d.headers[i].Get("x-murmur-task-origin") != "peer" {
			t.Errorf("offer %d origin %q", i, d.headers[i].Get("x-murmur-task-origin"))
		}
		cfg, _ := body["configuration"].(map[string]any)
		msg, _ := body["message"].(map[string]any)
		if cfg["returnImmediately"] != true || msg == nil {
			t.Errorf("offer %d body %v", i, body)
			continue
		}
		id := fmt.Sprint(msg["messageId"])
		if seen[id] {
			t.Errorf("messageId %s reused", id)
		}
		seen[id] = true
		if !strings.Contains(fmt.Sprint(msg["parts"]), "count the words") {
			t.Errorf("offer %d parts %v", i, msg["parts"])
		}
	}
	d.mu.Unlock()
	busy := f.lines(t, trace.TypeMemberCallBusy)
	if len(busy) != 2 || busy[0]["offer"] != 1.0 || busy[1]["offer"] != 2.0 {
		t.Errorf("member_call_busy %v", busy)
	}
	start := f.lines(t, trace.TypeMemberCallStart)
	if len(start) != 1 || start[0]["offers"] != 3.0 || start[0]["member_task_id"] != memberTask {
		t.Errorf("member_call_start %v", start)
	}
	end := f.lines(t, trace.TypeMemberCall)
	if len(end) != 1 || end[0]["status"] != "completed" || end[0]["answer_bytes"] != 8.0 || end[0]["reason"] != nil || end[0]["offers"] != 3.0 {
		t.Errorf("member_call %v", end)
	}
}

// TestCallEndings: each way an outstanding call ends, with its line and
// the answer its block gives.
func TestCallEndings(t *testing.T) {
	cases := []struct {
		name     string
		offers   []string
		deadline time.Duration
		then     func(d *memberDoor)
		status   string
		answer   string
		cancel   bool // the call ends with CancelTask to the member's task
	}{
		{name: "no answer", then: func(d *memberDoor) { d.set(a2a.TaskStateFailed, "no answer: the critic had nothing", "") },
			status: "no_answer", answer: "none (the member ended its task without an answer: the critic had nothing)"},
		{name: "failed", then: func(d *memberDoor) { d.set(a2a.TaskStateFailed, "max_turns_reached", "") },
			status: "failed", answer: "none (max_turns_reached)"},
		{name: "timed out", deadline: 300 * time.Millisecond, status: "timed_out",
			answer: "none (no answer within 0s; the member's task was cancelled)", cancel: true},
		{name: "unreachable", then: func(d *memberDoor) { d.srv.CloseClientConnections(); d.srv.Close() },
			status: "unreachable", answer: "none (the member's door stopped answering)"},
		{name: "re-offer rejected", offers: []string{"busy", "rejected:task rejected: the session is ending"},
			status: "rejected", answer: "none (the member did not take the task: task rejected: the session is ending)"},
		{name: "busy at the bound", offers: []string{"busy", "busy", "busy", "busy", "busy", "busy", "busy", "busy", "busy", "busy", "busy", "busy", "busy", "busy", "busy", "busy", "busy"},
			deadline: 200 * time.Millisecond, status: "rejected", answer: "none (the member stayed busy for 0s over"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newMemberDoor(t, tc.offers...)
			if tc.deadline == 0 {
				tc.deadline = time.Minute
			}
			f := newFixture(t, d.srv.URL, tc.deadline)
			res, isErr := outcome(t, f.call(t, `{"member":"worker","task":"t"}`))
			if isErr {
				t.Fatalf("first offer %v", res)
			}
			if tc.then != nil {
				tc.then(d)
			}
			_, blocks := f.wait(t)
			if !strings.Contains(blocks[0], "ended "+tc.status+":") || !strings.Contains(blocks[0], "\nanswer:\n"+tc.answer) {
				t.Fatalf("block:\n%s", blocks[0])
			}
			end := f.lines(t, trace.TypeMemberCall)
			if len(end) != 1 || end[0]["status"] != tc.status || end[0]["answer_bytes"] != 0.0 || end[0]["reason"] == nil {
				t.Fatalf("member_call %v", end)
			}
			d.mu.Lock()
			canceled := d.canceled
			d.mu.Unlock()
			if tc.cancel != (len(canceled) == 1 && canceled[0] == memberTask) {
				t.Fatalf("CancelTask %v, want one: %v", canceled, tc.cancel)
			}
		})
	}
}

// TestFirstOfferEndings: a first offer refused or unanswered ends the call
// at once, as the tool's error result, and no round carries it.
func TestFirstOfferEndings(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	cases := []struct {
		name, url string
		offers    []string
		status    string
		output    string
	}{
		{name: "rejected", offers: []string{"rejected:task rejected: this capsule accepts no more"}, status: "rejected", output: "task rejected: this capsule accepts no more"},
		{name: "connection refused", url: closed.URL, status: "failed", output: "the member's door did not answer"},
		{name: "no answer within the read bound", offers: []string{"hang"}, status: "failed", output: "the member's door did not answer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newMemberDoor(t, tc.offers...)
			url := d.srv.URL
			if tc.url != "" {
				url = tc.url
			}
			f := newFixture(t, url, time.Minute)
			res, isErr := outcome(t, f.call(t, `{"member":"worker","task":"t"}`))
			if !isErr || res["status"] != tc.status || !strings.Contains(res["output"], tc.output) {
				t.Fatalf("result %v (error %v)", res, isErr)
			}
			if c := f.rt.Claim("tsk_1"); c != nil {
				t.Fatal("a call that ended at its first offer is in the round")
			}
			if end := f.lines(t, trace.TypeMemberCall); len(end) != 1 || end[0]["status"] != tc.status {
				t.Fatalf("member_call %v", end)
			}
		})
	}
}

func TestRefusalsSendNothing(t *testing.T) {
	d := newMemberDoor(t)
	f := newFixture(t, d.srv.URL, time.Minute)
	cases := []struct{ input, want string }{
		{`{"member":"boss","task":"t"}`, "'boss' is not a member this capsule may call; it may call: worker"},
		{`{"member":"worker"}`, "call-member needs both member and task"},
		{`{"member":"worker","task":"t","x":1}`, "the input to call-member must be"},
		{`{"member":"worker","task":"  "}`, "task is empty"},
	}
	for _, tc := range cases {
		o := f.call(t, tc.input)
		if o.Err == nil || !strings.Contains(o.Err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.input, o.Err, tc.want)
		}
	}
	if d.sends != 0 || len(f.lines(t, trace.TypeMemberCall)) != 0 {
		t.Fatalf("a refusal sent %d offers", d.sends)
	}
}

// TestAbandon: a task that ends first abandons its outstanding call, whose
// member gets CancelTask, and nothing is delivered.
func TestAbandon(t *testing.T) {
	d := newMemberDoor(t)
	f := newFixture(t, d.srv.URL, time.Minute)
	if res, isErr := outcome(t, f.call(t, `{"member":"worker","task":"t"}`)); isErr || res["status"] != "started" || res["task_id"] != memberTask {
		t.Fatalf("result %v", res)
	}
	f.rt.TaskEnded("tsk_1", trace.EndCanceled)
	deadline := time.Now().Add(10 * time.Second)
	for len(f.lines(t, trace.TypeMemberCall)) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if end := f.lines(t, trace.TypeMemberCall); len(end) != 1 || end[0]["status"] != "abandoned" {
		t.Fatalf("member_call %v", end)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.canceled) != 1 || d.canceled[0] != memberTask {
		t.Fatalf("CancelTask %v", d.canceled)
	}
	if f.rt.Claim("tsk_1") != nil {
		t.Fatal("an abandoned call is delivered")
	}
}

// TestEndWithoutAnswer: the refusals in §22.11's order, then the ending.
func TestEndWithoutAnswer(t *testing.T) {
	d := newMemberDoor(t)
	f := newFixture(t, d.srv.URL, time.Minute)
	end := func(input string) tools.Outcome {
		return (&EndTool{f.rt}).Call(context.Background(), &tools.Call{Input: wit.ToolInput{Data: &input},
			Task: &tools.TaskCall{TaskID: "tsk_1", ID: "call_2", Lines: f.rec}})
	}
	f.rt.tasks["tsk_1"] = &taskInfo{} // a task no member sent
	if o := end(`{"reason":"x"}`); o.Err == nil || o.Err.Error() != "this task was not sent by a formation member: answer it in text" {
		t.Fatalf("not a member's task: %v", o.Err)
	}
	f.rt.tasks["tsk_1"] = &taskInfo{caller: "lead"}
	res, _ := outcome(t, f.call(t, `{"member":"worker","task":"t"}`))
	if o := end(`{"reason":"x"}`); o.Err == nil || !strings.Contains(o.Err.Error(), "still outstanding or holds an answer not yet delivered (call "+res["call_id"]+")") {
		t.Fatalf("outstanding: %v", o.Err)
	}
	d.set(a2a.TaskStateCompleted, "done", "nothing useful")
	f.wait(t)
	if o := end(`{"reason":"  "}`); o.Err == nil || !strings.Contains(o.Err.Error(), "reason is blank") {
		t.Fatalf("blank: %v", o.Err)
	}
	if _, ok := f.rt.NoAnswer("tsk_1"); ok {
		t.Fatal("ending before it was accepted")
	}
	if o := end(`{"reason":"the worker found nothing"}`); o.Err != nil || o.Text != `{"status":"ending"}` {
		t.Fatalf("accepted: %v %q", o.Err, o.Text)
	}
	if r, ok := f.rt.NoAnswer("tsk_1"); !ok || r != "the worker found nothing" {
		t.Fatalf("NoAnswer %q %v", r, ok)
	}
	if o := end(`{"reason":"again"}`); o.Err == nil || o.Err.Error() != "end-without-answer was already accepted in this task" {
		t.Fatalf("twice: %v", o.Err)
	}
	if o := f.call(t, `{"member":"worker","task":"t"}`); o.Err == nil || !strings.Contains(o.Err.Error(), "end-without-answer was accepted") {
		t.Fatalf("call after ending: %v", o.Err)
	}
}

// TestLongAnswerCut: an answer past 64 KiB is cut in its block and kept
// whole in the runtime dir.
func TestLongAnswerCut(t *testing.T) {
	d := newMemberDoor(t)
	f := newFixture(t, d.srv.URL, time.Minute)
	res, _ := outcome(t, f.call(t, `{"member":"worker","task":"t"}`))
	long := strings.Repeat("é", MaxAnswerBytes) // 2 bytes each
	d.set(a2a.TaskStateCompleted, "", long)
	_, blocks := f.wait(t)
	want := fmt.Sprintf("[cut at %d of %d bytes; the whole answer is member-calls/%s.txt in the runtime directory]", MaxAnswerBytes, 2*MaxAnswerBytes, res["call_id"])
	if !strings.Contains(blocks[0], want) {
		t.Fatalf("block tail %q", blocks[0][len(blocks[0])-300:])
	}
	kept, err := os.ReadFile(filepath.Join(f.dir, "member-calls", res["call_id"]+".txt"))
	if err != nil || string(kept) != long {
		t.Fatalf("kept: %d bytes, %v", len(kept), err)
	}
}

// TestRoundJoinsParts: a round with member calls waits and continues with
// the member-call words, through agent.Round.
func TestRoundJoinsParts(t *testing.T) {
	d := newMemberDoor(t)
	f := newFixture(t, d.srv.URL, time.Minute)
	f.call(t, `{"member":"worker","task":"t"}`)
	go func() {
		time.Sleep(100 * time.Millisecond)
		d.set(a2a.TaskStateCompleted, "", "the answer")
	}()
	ev := &statusEvents{}
	text, ok := agent.Round{MemberCalls: f.rt, Recorder: f.rec}.Await(context.Background(), "tsk_1", 1, ev)
	if !ok || !strings.Contains(text, "answer:\nthe answer\n") {
		t.Fatalf("continuation %v %q", ok, text)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if strings.Join(ev.status, "|") != "waiting on call-member: 1 call(s) outstanding|continuing with 1 member answer(s)" {
		t.Fatalf("status %q", ev.status)
	}
	w, c := f.lines(t, trace.TypeTaskWaiting), f.lines(t, trace.TypeTaskContinued)
	if len(w) != 1 || w[0]["outstanding"] != 0.0 || w[0]["member_calls"] != 1.0 {
		t.Fatalf("task_waiting %v", w)
	}
	if len(c) != 1 || fmt.Sprint(c[0]["delegations"]) != "[]" || len(c[0]["member_calls"].([]any)) != 1 {
		t.Fatalf("task_continued %v", c)
	}
}

type statusEvents struct {
	mu     sync.Mutex
	status []string
}

func (e *statusEvents) AppendText(string)                                  {}
func (e *statusEvents) ToolResult(string, string, string, json.RawMessage) {}
func (e *statusEvents) Status(text string) {
	e.mu.Lock()
	e.status = append(e.status, text)
	e.mu.Unlock()
}
func (e *statusEvents) RequestInput(context.Context, string) (door.Reply, error) {
	return door.Reply{}, fmt.Errorf("no")
}
func (e *statusEvents) Phase(door.Phase)     {}
func (e *statusEvents) Delegations([]string) {}
func (e *statusEvents) MemberCalls([]string) {}
