package door_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/ids"
)

// recorder keeps the door's trace calls.
type recorder struct {
	mu       sync.Mutex
	received []string // task ids
	origins  []door.Origin
	rejected map[string]string
	canceled map[string]door.Phase
	residue  map[string][]string
}

func newRecorder() *recorder {
	return &recorder{rejected: map[string]string{}, canceled: map[string]door.Phase{}, residue: map[string][]string{}}
}

func (r *recorder) TaskReceived(taskID, contextID, messageID string, origin door.Origin) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.received = append(r.received, taskID)
	r.origins = append(r.origins, origin)
}

// count is how many door messages were received.
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.received)
}

func (r *recorder) TaskRejected(taskID, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejected[taskID] = reason
}

func (r *recorder) TaskCanceled(taskID string, phase door.Phase, res door.Residue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.canceled[taskID] = phase
	r.residue[taskID] = append(res.Delegations, res.MemberCalls...)
}

// testRunner acts on the task's text: "echo X" streams X in two chunks and
// answers it; "hold" waits for release; "block" reports phase tool and a
// delegation, then waits to be cancelled; "ask" asks for input and answers
// "got <reply>"; "fail" fails with max_turns_reached; "panic" panics.
type testRunner struct {
	release chan struct{}
	started chan string // task ids, as each starts (buffered)
}

func newRunner() *testRunner {
	return &testRunner{release: make(chan struct{}), started: make(chan string, 100)}
}

func (r *testRunner) RunTask(ctx context.Context, t *door.Task, ev door.Events) door.Outcome {
	select {
	case r.started <- t.ID:
	default: // a benchmark runs more tasks than anyone reads
	}
	text := t.Text()
	switch {
	case strings.HasPrefix(text, "echo "):
		s := strings.TrimPrefix(text, "echo ")
		ev.AppendText(s[:len(s)/2])
		ev.AppendText(s[len(s)/2:])
		ev.ToolResult("call1", "echo", s, nil)
		return door.Answer(s)
	case text == "hold":
		select {
		case <-r.release:
			return door.Answer("released")
		case <-ctx.Done():
			return door.Canceled()
		}
	case text == "block":
		ev.Phase(door.PhaseTool)
		ev.Delegations([]string{"dlg_0193aaaabbbbccccddddeeeeffff0000"})
		ev.MemberCalls([]string{"mcl_0193aaaabbbbccccddddeeeeffff0001"})
		<-ctx.Done()
		return door.Canceled()
	case text == "ask":
		rep, err := ev.RequestInput(ctx, "which colour?")
		if err != nil {
			return door.Canceled()
		}
		return door.Answer("got " + rep.Parts[0].Text)
	case text == "ask two":
		// Two questions at once (a plan's concurrent steps): the door asks
		// them one at a time, in the order asked.
		asker := ev.(interface {
			RequestInputData(ctx context.Context, prompt string, data any) (door.Reply, error)
		})
		first := make(chan door.Reply, 1)
		go func() {
			rep, _ := asker.RequestInputData(ctx, "first", map[string]any{"n": 1})
			first <- rep
		}()
		second, err := asker.RequestInputData(ctx, "second", nil)
		if err != nil {
			return door.Canceled()
		}
		return door.Answer("got " + (<-first).Parts[0].Text + "," + second.Parts[0].Text)
	case text == "ask brief":
		asker := ev.(interface {
			RequestInputData(ctx context.Context, prompt string, data any) (door.Reply, error)
		})
		wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if _, err := asker.RequestInputData(wctx, "quick?", nil); err == nil {
			return door.Answer("answered")
		}
		return door.Answer("timed out")
	case text == "fail":
		return door.Failed("max_turns_reached")
	case text == "panic":
		panic("boom")
	}
	return door.Answer("ok")
}

type fixture struct {
	srv    *door.Server
	url    string
	runner *testRunner
	rec    *recorder
	client *a2aclient.Client
	sid    string // the session running at the door
}

func startB(b *testing.B) *fixture { return start(b, "single", "sleep", 0) }

func start(t testing.TB, acceptance, after string, depth int) *fixture {
	t.Helper()
	f := &fixture{runner: newRunner(), rec: newRecorder(), sid: ids.New(ids.Session)}
	ts := httptest.NewUnstartedServer(nil)
	t.Cleanup(ts.Close)
	url := "http://" + ts.Listener.Addr().String()
	srv, err := door.New(door.Config{
		Name: "local/hello-agent", Version: "0.1.0", SessionID: f.sid, URL: url,
		TaskAcceptance: acceptance, QueueDepth: depth, AfterTask: after,
		Runner: f.runner, Recorder: f.rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ts.Config.Handler = srv
	ts.Start()
	f.srv, f.url = srv, ts.URL
	c, err := a2aclient.NewFromEndpoints(context.Background(),
		[]*a2a.AgentInterface{a2a.NewAgentInterface(ts.URL, a2a.TransportProtocolJSONRPC)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	f.client = c
	return f
}

func userMsg(text string) *a2a.Message {
	return a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
}

func (f *fixture) send(t *testing.T, text string, immediate bool) *a2a.Task {
	t.Helper()
	req := &a2a.SendMessageRequest{Message: userMsg(text)}
	if immediate {
		req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	}
	res, err := f.client.SendMessage(context.Background(), req)
	if err != nil {
		t.Fatalf("SendMessage %q: %v", text, err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage %q answered %T", text, res)
	}
	return task
}

// waitState polls GetTask until the task is in state.
func (f *fixture) waitState(t *testing.T, id a2a.TaskID, state a2a.TaskState) *a2a.Task {
	t.Helper()
	for i := 0; ; i++ {
		task, err := f.client.GetTask(context.Background(), &a2a.GetTaskRequest{ID: id})
		if err != nil {
			t.Fatalf("GetTask %s: %v", id, err)
		}
		if task.Status.State == state {
			return task
		}
		if task.Status.State.Terminal() || i > 2000 {
			t.Fatalf("task %s is %s, want %s", id, task.Status.State, state)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func statusText(task *a2a.Task) string {
	if task.Status.Message == nil || len(task.Status.Message.Parts) == 0 {
		return ""
	}
	return task.Status.Message.Parts[0].Text()
}

func artifact(task *a2a.Task, id string) *a2a.Artifact {
	for _, a := range task.Artifacts {
		if string(a.ID) == id {
			return a
		}
	}
	return nil
}

// rpcReply is a JSON-RPC answer read raw.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func post(t *testing.T, url string, hdr map[string]string, body string) rpcReply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r rpcReply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("answer is not JSON-RPC: %v: %s", err, b)
	}
	return r
}

var v10 = map[string]string{"A2A-Version": "1.0"}

func sendBody(parts string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[` + parts + `]}}}`
}

func TestFrontHandlerErrors(t *testing.T) {
	f := start(t, "single", "sleep", 0)
	big := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"x":"` + strings.Repeat("a", door.MaxBodyBytes) + `"}}`
	cases := []struct {
		name string
		hdr  map[string]string
		body string
		code int
	}{
		{"no A2A-Version", map[string]string{}, sendBody(`{"text":"hi"}`), -32009},
		{"A2A-Version 0.3", map[string]string{"A2A-Version": "0.3"}, sendBody(`{"text":"hi"}`), -32009},
		{"A2A-Version 1.1", map[string]string{"A2A-Version": "1.1"}, sendBody(`{"text":"hi"}`), -32009},
		{"A2A-Version 1.0.x", map[string]string{"A2A-Version": "1.0.x"}, sendBody(`{"text":"hi"}`), -32009},
		{"malformed JSON", v10, `{"jsonrpc":"2.0","id":1,"method":`, -32700},
		{"not JSON-RPC 2.0", v10, `{"jsonrpc":"1.0","id":1,"method":"GetTask","params":{"id":"x"}}`, -32600},
		{"object id", v10, `{"jsonrpc":"2.0","id":{},"method":"GetTask","params":{"id":"x"}}`, -32600},
		{"body over 4 MiB", v10, big, -32600},
		{"unknown method", v10, `{"jsonrpc":"2.0","id":1,"method":"Frobnicate"}`, -32601},
		{"GetTaskPushNotificationConfig", v10, `{"jsonrpc":"2.0","id":1,"method":"GetTaskPushNotificationConfig","params":{"taskId":"tsk_0000","id":"c1"}}`, -32003},
		{"CreateTaskPushNotificationConfig", v10, `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"tsk_0000","url":"http://127.0.0.1:9/hook"}}`, -32003},
		{"ListTaskPushNotificationConfigs", v10, `{"jsonrpc":"2.0","id":1,"method":"ListTaskPushNotificationConfigs","params":{"taskId":"tsk_0000"}}`, -32003},
		{"DeleteTaskPushNotificationConfig", v10, `{"jsonrpc":"2.0","id":1,"method":"DeleteTaskPushNotificationConfig","params":{"taskId":"tsk_0000","id":"c1"}}`, -32003},
		{"GetExtendedAgentCard", v10, `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard","params":{}}`, -32004},
		{"GetTask negative historyLength", v10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"tsk_0000","historyLength":-1}}`, -32602},
		{"SendMessage negative historyLength", v10, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"historyLength":-2}}}`, -32602},
		{"ListTasks negative historyLength", v10, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"historyLength":-1}}`, -32602},
		{"ListTasks pageSize 0 is default but 101 is not", v10, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":101}}`, -32602},
		{"ListTasks negative pageSize", v10, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":-1}}`, -32602},
		{"ListTasks unknown status", v10, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"status":"TASK_STATE_SLEEPING"}}`, -32602},
		{"ListTasks bad pageToken", v10, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageToken":"not-a-token"}}`, -32602},
		{"ListTasks params not an object", v10, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":[1]}`, -32602},
		{"params not an object", v10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":"tsk_1"}`, -32602},
		{"GetTask without id", v10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}`, -32602},
		{"SendMessage without message", v10, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`, -32602},
		{"SendMessage with empty parts", v10, sendBody(``), -32602},
		{"part of no known kind", v10, sendBody(`{"file":{"uri":"x"}}`), -32602},
		{"StopSession with params", v10, `{"jsonrpc":"2.0","id":1,"method":"murmur.StopSession","params":{"now":true}}`, -32602},
		{"unknown task", v10, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"tsk_0000"}}`, -32001},
		{"cancel unknown task", v10, `{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"tsk_0000"}}`, -32001},
		{"url file part", v10, sendBody(`{"url":"https://example.com/a.pdf","mediaType":"application/pdf"}`), -32005},
		{"raw file part", v10, sendBody(`{"text":"see"},{"raw":"aGVsbG8=","filename":"a.txt"}`), -32005},
		{"bad origin", map[string]string{"A2A-Version": "1.0", "x-murmur-task-origin": "robot"}, sendBody(`{"text":"hi"}`), -32600},
		{"completion with nothing awaited", map[string]string{"A2A-Version": "1.0", "x-murmur-task-origin": "completion", "x-murmur-delegation-id": "dlg_1", "x-murmur-completion-session": f.sid}, sendBody(`{"text":"done"}`), -31002},
		{"completion for another session", map[string]string{"A2A-Version": "1.0", "x-murmur-task-origin": "completion", "x-murmur-delegation-id": "dlg_1", "x-murmur-completion-session": "ses_other"}, sendBody(`{"text":"done"}`), -31001},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := post(t, f.url, c.hdr, c.body)
			if r.Error == nil {
				t.Fatalf("answered a result %s, want error %d", r.Result, c.code)
			}
			if r.Error.Code != c.code {
				t.Fatalf("code %d (%s), want %d", r.Error.Code, r.Error.Message, c.code)
			}
		})
	}
	// None of these made a task, and the door still serves.
	if n := len(f.rec.received); n != 0 {
		t.Fatalf("%d tasks received from bad requests", n)
	}
	task := f.send(t, "echo fine", false)
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("after bad requests: %s", task.Status.State)
	}
}

func TestVersionPatchAccepted(t *testing.T) {
	f := start(t, "single", "sleep", 0)
	r := post(t, f.url, map[string]string{"A2A-Version": "1.0.3"}, sendBody(`{"text":"echo v"}`))
	if r.Error != nil {
		t.Fatalf("1.0.3 refused: %d %s", r.Error.Code, r.Error.Message)
	}
	if !strings.Contains(string(r.Result), "TASK_STATE_COMPLETED") {
		t.Fatalf("result %s", r.Result)
	}
}

func TestCompletionErrorCarriesErrorInfo(t *testing.T) {
	f := start(t, "none", "sleep", 0)
	r := post(t, f.url, map[string]string{"A2A-Version": "1.0", "x-murmur-task-origin": "completion", "x-murmur-completion-session": f.sid}, sendBody(`{"text":"done"}`))
	if r.Error == nil || r.Error.Code != -31002 {
		t.Fatalf("answer %+v", r)
	}
	want := "completion names no delegation in x-murmur-delegation-id, so no task in this session is waiting for it"
	if r.Error.Message != want {
		t.Fatalf("message %q", r.Error.Message)
	}
	if !strings.Contains(string(r.Error.Data), `"COMPLETION_NOT_AWAITED"`) || !strings.Contains(string(r.Error.Data), `"murmur.nexus"`) {
		t.Fatalf("data %s", r.Error.Data)
	}
}

func TestNotFoundPaths(t *testing.T) {
	f := start(t, "single", "sleep", 0)
	for _, c := range []struct{ method, path string }{{"GET", "/"}, {"GET", "/tasks"}, {"POST", "/x"}, {"PUT", "/"}, {"POST", "/.well-known/agent-card.json"}} {
		req, _ := http.NewRequest(c.method, f.url+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s: %d, want 404", c.method, c.path, resp.StatusCode)
		}
	}
}

func TestAgentCard(t *testing.T) {
	for _, acc := range []string{"single", "none"} {
		t.Run(acc, func(t *testing.T) {
			f := start(t, acc, "sleep", 0)
			resp, err := http.Get(f.url + "/.well-known/agent-card.json")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var card map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
				t.Fatal(err)
			}
			if card["name"] != "local/hello-agent" || card["version"] != "0.1.0" ||
				card["description"] != "Murmur capsule local/hello-agent 0.1.0" {
				t.Fatalf("identity %v %v %v", card["name"], card["version"], card["description"])
			}
			si := card["supportedInterfaces"].([]any)[0].(map[string]any)
			if si["url"] != f.url || si["protocolBinding"] != "JSONRPC" || si["protocolVersion"] != "1.0" {
				t.Fatalf("interface %v", si)
			}
			caps := card["capabilities"].(map[string]any)
			if caps["streaming"] != true || caps["pushNotifications"] != false {
				t.Fatalf("capabilities %v", caps)
			}
			ext := caps["extensions"].([]any)[0].(map[string]any)
			if ext["uri"] != "https://murmur.nexus/a2a/capsule/v1" || ext["required"] != false {
				t.Fatalf("extension %v", ext)
			}
			params := ext["params"].(map[string]any)
			ce, _ := json.Marshal(params["completionErrors"])
			wantCE := `[{"code":-31001,"reason":"COMPLETION_MISADDRESSED","metadata":["addressed_session","running_session"]},{"code":-31002,"reason":"COMPLETION_NOT_AWAITED","metadata":["delegation_id"]}]`
			var gotCE, wantCEv any
			_ = json.Unmarshal(ce, &gotCE)
			_ = json.Unmarshal([]byte(wantCE), &wantCEv)
			if !reflect.DeepEqual(gotCE, wantCEv) {
				t.Fatalf("completionErrors %s", ce)
			}
			if !ids.Valid(ids.Session, params["sessionId"].(string)) {
				t.Fatalf("sessionId %v", params["sessionId"])
			}
			for _, k := range []string{"defaultInputModes", "defaultOutputModes"} {
				m, _ := json.Marshal(card[k])
				if string(m) != `["text/plain","application/json"]` {
					t.Fatalf("%s %s", k, m)
				}
			}
			skills := card["skills"].([]any)
			if acc == "none" && len(skills) != 0 {
				t.Fatalf("skills under none: %v", skills)
			}
			if acc == "single" && (len(skills) != 1 || skills[0].(map[string]any)["id"] != "task") {
				t.Fatalf("skills %v", skills)
			}
			// a2a-go's own card resolver reads it.
			if _, err := a2aclient.NewFromEndpoints(context.Background(), nil); err == nil {
				t.Fatal("no endpoints should fail")
			}
		})
	}
}

func TestSendMessageOutcomes(t *testing.T) {
	f := start(t, "single", "sleep", 0)
	cases := []struct {
		text, state, status string
	}{
		{"echo hello world", "TASK_STATE_COMPLETED", "hello world"},
		{"fail", "TASK_STATE_FAILED", "max_turns_reached"},
		{"panic", "TASK_STATE_FAILED", "the runner panicked: boom"},
	}
	for _, c := range cases {
		task := f.send(t, c.text, false)
		if string(task.Status.State) != c.state || statusText(task) != c.status {
			t.Fatalf("%q: %s %q, want %s %q", c.text, task.Status.State, statusText(task), c.state, c.status)
		}
		if !ids.Valid(ids.Task, string(task.ID)) || !ids.Valid(ids.Context, task.ContextID) {
			t.Fatalf("ids %s %s", task.ID, task.ContextID)
		}
		if c.state == "TASK_STATE_COMPLETED" {
			a := artifact(task, "response")
			if a == nil || a.Name != "response" || len(a.Parts) != 1 || a.Parts[0].Text() != c.status {
				t.Fatalf("response artifact %+v", a)
			}
			if tool := artifact(task, "tool-call1"); tool == nil || tool.Name != "echo" {
				t.Fatalf("tool artifact %+v", tool)
			}
		}
	}
	// A context the client names is kept.
	m := userMsg("echo ctx")
	m.ContextID = "my-context"
	res, err := f.client.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	if res.(*a2a.Task).ContextID != "my-context" {
		t.Fatalf("context %s", res.(*a2a.Task).ContextID)
	}
}

func TestReturnImmediatelyAndGetTask(t *testing.T) {
	f := start(t, "single", "sleep", 0)
	task := f.send(t, "hold", true)
	if task.Status.State.Terminal() {
		t.Fatalf("returnImmediately answered %s", task.Status.State)
	}
	<-f.runner.started
	close(f.runner.release)
	done := f.waitState(t, task.ID, a2a.TaskStateCompleted)
	if statusText(done) != "released" || len(done.History) == 0 || done.History[0].Parts[0].Text() != "hold" {
		t.Fatalf("task %+v", done)
	}
}

func TestSingleRejectsWhileBusy(t *testing.T) {
	f := start(t, "single", "sleep", 0)
	first := f.send(t, "hold", true)
	<-f.runner.started
	second := f.send(t, "echo x", false)
	if second.Status.State != a2a.TaskStateRejected || statusText(second) != "task rejected: capsule is busy" {
		t.Fatalf("second: %s %q", second.Status.State, statusText(second))
	}
	if f.rec.rejected[string(second.ID)] != "task rejected: capsule is busy" {
		t.Fatalf("task_rejected %v", f.rec.rejected)
	}
	got, err := f.client.GetTask(context.Background(), &a2a.GetTaskRequest{ID: second.ID})
	if err != nil || got.Status.State != a2a.TaskStateRejected {
		t.Fatalf("GetTask rejected: %v %v", got, err)
	}
	close(f.runner.release)
	f.waitState(t, first.ID, a2a.TaskStateCompleted)
	// Free again: a new task is accepted.
	if third := f.send(t, "echo y", false); third.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("third %s", third.Status.State)
	}
}

func TestQueue(t *testing.T) {
	f := start(t, "queue", "sleep", 2)
	first := f.send(t, "hold", true)
	<-f.runner.started
	q1 := f.send(t, "echo one", true)
	q2 := f.send(t, "echo two", true)
	if q1.Status.State != a2a.TaskStateSubmitted || q2.Status.State != a2a.TaskStateSubmitted {
		t.Fatalf("queued: %s %s", q1.Status.State, q2.Status.State)
	}
	full := f.send(t, "echo three", false)
	if full.Status.State != a2a.TaskStateRejected || statusText(full) != "task rejected: the queue is full (lifecycle.queue_depth 2)" {
		t.Fatalf("full: %s %q", full.Status.State, statusText(full))
	}
	close(f.runner.release)
	f.waitState(t, q2.ID, a2a.TaskStateCompleted)
	f.waitState(t, q1.ID, a2a.TaskStateCompleted)
	order := []string{<-f.runner.started, <-f.runner.started}
	if order[0] != string(q1.ID) || order[1] != string(q2.ID) {
		t.Fatalf("run order %v, want %s %s", order, q1.ID, q2.ID)
	}
	_ = first
}

func TestCancelEachPhase(t *testing.T) {
	f := start(t, "queue", "sleep", 1)
	running := f.send(t, "block", true)
	<-f.runner.started
	queued := f.send(t, "echo later", true)

	// queued
	ct, err := f.client.CancelTask(context.Background(), &a2a.CancelTaskRequest{ID: queued.ID})
	if err != nil || ct.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel queued: %v %v", ct, err)
	}
	// running, mid-tool, with a delegation in flight
	ct, err = f.client.CancelTask(context.Background(), &a2a.CancelTaskRequest{ID: running.ID})
	if err != nil || ct.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel running: %v %v", ct, err)
	}
	res := artifact(ct, "residue")
	if res == nil || len(res.Parts) != 1 {
		t.Fatalf("residue %+v", res)
	}
	rb, _ := json.Marshal(res.Parts[0].Data())
	if string(rb) != `{"delegations":["dlg_0193aaaabbbbccccddddeeeeffff0000"],"member_calls":["mcl_0193aaaabbbbccccddddeeeeffff0001"]}` {
		t.Fatalf("residue data %s", rb)
	}
	// input
	ask := f.send(t, "ask", false)
	if ask.Status.State != a2a.TaskStateInputRequired || statusText(ask) != "which colour?" {
		t.Fatalf("ask: %s %q", ask.Status.State, statusText(ask))
	}
	ct, err = f.client.CancelTask(context.Background(), &a2a.CancelTaskRequest{ID: ask.ID})
	if err != nil || ct.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel input: %v %v", ct, err)
	}
	if r := artifact(ct, "residue"); r == nil {
		t.Fatal("input cancel has no residue")
	} else if b, _ := json.Marshal(r.Parts[0].Data()); string(b) != `{"delegations":[],"member_calls":[]}` {
		t.Fatalf("input residue %s", b)
	}
	f.rec.mu.Lock()
	phases := map[string]door.Phase{string(queued.ID): door.PhaseQueued, string(running.ID): door.PhaseTool, string(ask.ID): door.PhaseInput}
	for id, want := range phases {
		if f.rec.canceled[id] != want {
			t.Errorf("task_canceled phase of %s: %q, want %q", id, f.rec.canceled[id], want)
		}
	}
	f.rec.mu.Unlock()
	// Cancelling an ended task, cancelled or completed, is -32002.
	done := f.send(t, "echo z", false)
	for _, id := range []a2a.TaskID{ask.ID, done.ID} {
		r := post(t, f.url, v10, fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"CancelTask","params":{"id":%q}}`, id))
		if r.Error == nil || r.Error.Code != -32002 {
			t.Fatalf("cancel ended %s: %+v", id, r)
		}
	}
}

func TestInputRequired(t *testing.T) {
	f := start(t, "single", "sleep", 0)
	ask := f.send(t, "ask", false)
	if ask.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("ask: %s", ask.Status.State)
	}
	// A second message while input is required is busy, not an answer.
	if busy := f.send(t, "echo x", false); busy.Status.State != a2a.TaskStateRejected {
		t.Fatalf("busy: %s", busy.Status.State)
	}
	reply := userMsg("teal")
	reply.TaskID = ask.ID
	res, err := f.client.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: reply})
	if err != nil {
		t.Fatal(err)
	}
	done := res.(*a2a.Task)
	if done.Status.State != a2a.TaskStateCompleted || statusText(done) != "got teal" {
		t.Fatalf("after reply: %s %q", done.Status.State, statusText(done))
	}
	// A message naming a completed task is refused.
	again := userMsg("more")
	again.TaskID = ask.ID
	if _, err := f.client.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: again}); err == nil {
		t.Fatal("message to a completed task accepted")
	}
	unknown := userMsg("x")
	unknown.TaskID = "tsk_ffffffffffffffffffffffffffffffff"
	r := post(t, f.url, v10, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m9","role":"ROLE_USER","taskId":"tsk_ffffffffffffffffffffffffffffffff","parts":[{"text":"x"}]}}}`)
	if r.Error == nil || r.Error.Code != -32001 {
		t.Fatalf("unknown task message: %+v", r)
	}
}

// TestReplyHistory: a reply with returnImmediately answers the task WORKING
// again; the finished task's history is what a2a-go's handler made of it:
// the message, the reply, then the question (moved there by the WORKING
// status that followed the reply); a reply in another context is refused.
func TestReplyHistory(t *testing.T) {
	f := start(t, "single", "sleep", 0)
	ask := f.send(t, "ask", false)
	wrong := userMsg("red")
	wrong.TaskID, wrong.ContextID = ask.ID, "ctx_other"
	if _, err := f.client.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: wrong}); err == nil ||
		!strings.Contains(err.Error(), "message contextID different from task contextID") {
		t.Fatalf("reply in another context: %v", err)
	}
	reply := userMsg("teal")
	reply.TaskID = ask.ID
	res, err := f.client.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: reply,
		Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.(*a2a.Task); got.Status.State != a2a.TaskStateWorking {
		t.Fatalf("immediate reply answered %s", got.Status.State)
	}
	done := f.waitState(t, ask.ID, a2a.TaskStateCompleted)
	var hist []string
	for _, m := range done.History {
		hist = append(hist, string(m.Role)+":"+m.Parts[0].Text())
	}
	if want := "[ROLE_USER:ask ROLE_USER:teal ROLE_AGENT:which colour?]"; fmt.Sprint(hist) != want {
		t.Fatalf("history %v, want %s", hist, want)
	}
}

func TestNoneAcceptance(t *testing.T) {
	f := start(t, "none", "exit", 0)
	if r := post(t, f.url, v10, sendBody(`{"text":"echo a"}`)); r.Error == nil || r.Error.Code != -32004 {
		t.Fatalf("SendMessage under none: %+v", r)
	}
	// The streaming answer is SSE: read its one error event.
	req, _ := http.NewRequest(http.MethodPost, f.url+"/", strings.NewReader(strings.Replace(sendBody(`{"text":"echo a"}`), `"SendMessage"`, `"SendStreamingMessage"`, 1)))
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sse, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(sse), `"code":-32004`) {
		t.Fatalf("SendStreamingMessage under none: %s", sse)
	}
	id, err := f.srv.SubmitTask(context.Background(), "echo from task.md")
	if err != nil {
		t.Fatal(err)
	}
	<-f.srv.Done()
	if f.srv.EndReason() != door.EndAfterTask {
		t.Fatalf("end reason %q", f.srv.EndReason())
	}
	got := f.waitState(t, a2a.TaskID(id), a2a.TaskStateCompleted)
	if statusText(got) != "from task.md" {
		t.Fatalf("task_md task %q", statusText(got))
	}
	if len(f.rec.received) != 0 {
		t.Fatalf("a2a_task_received for a task_md task: %v", f.rec.received)
	}
}

func TestAfterTask(t *testing.T) {
	t.Run("single exit", func(t *testing.T) {
		f := start(t, "single", "exit", 0)
		f.send(t, "echo a", false)
		<-f.srv.Done()
	})
	t.Run("queue exit waits for the queue", func(t *testing.T) {
		f := start(t, "queue", "exit", 1)
		f.send(t, "hold", true)
		<-f.runner.started
		q := f.send(t, "echo b", true)
		select {
		case <-f.srv.Done():
			t.Fatal("done with a task live")
		default:
		}
		close(f.runner.release)
		<-f.srv.Done()
		f.waitState(t, q.ID, a2a.TaskStateCompleted)
	})
	t.Run("sleep", func(t *testing.T) {
		f := start(t, "single", "sleep", 0)
		f.send(t, "echo a", false)
		f.send(t, "fail", false)
		select {
		case <-f.srv.Done():
			t.Fatal("sleep session ended")
		default:
		}
		if f.srv.EndReason() != "" {
			t.Fatal(f.srv.EndReason())
		}
	})
}

func TestStopSession(t *testing.T) {
	f := start(t, "queue", "sleep", 1)
	running := f.send(t, "block", true)
	<-f.runner.started
	queued := f.send(t, "echo q", true)
	r := post(t, f.url, v10, `{"jsonrpc":"2.0","id":"s","method":"murmur.StopSession"}`)
	if r.Error != nil {
		t.Fatalf("StopSession: %+v", r.Error)
	}
	var res door.StopResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Canceled) != 2 || res.Canceled[0] != string(queued.ID) || res.Canceled[1] != string(running.ID) {
		t.Fatalf("canceled %v", res.Canceled)
	}
	if len(res.Terminated) != 1 || res.Terminated[0] != "dlg_0193aaaabbbbccccddddeeeeffff0000" || !ids.Valid(ids.Session, res.SessionID) {
		t.Fatalf("result %+v", res)
	}
	<-f.srv.Done()
	if f.srv.EndReason() != door.EndStopSession {
		t.Fatal(f.srv.EndReason())
	}
	if late := f.send(t, "echo late", false); late.Status.State != a2a.TaskStateRejected || statusText(late) != "task rejected: the session is ending" {
		t.Fatalf("late: %s %q", late.Status.State, statusText(late))
	}
}

func TestStreaming(t *testing.T) {
	f := start(t, "single", "sleep", 0)
	var states []a2a.TaskState
	var chunks []string
	var final *a2a.TaskStatusUpdateEvent
	for ev, err := range f.client.SendStreamingMessage(context.Background(), &a2a.SendMessageRequest{Message: userMsg("echo abcdef")}) {
		if err != nil {
			t.Fatal(err)
		}
		switch v := ev.(type) {
		case *a2a.Task:
			states = append(states, v.Status.State)
		case *a2a.TaskStatusUpdateEvent:
			states = append(states, v.Status.State)
			final = v
		case *a2a.TaskArtifactUpdateEvent:
			if v.Artifact.ID == "response" {
				chunks = append(chunks, fmt.Sprintf("%v:%s", v.Append, v.Artifact.Parts[0].Text()))
			}
		}
	}
	want := []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateCompleted}
	if fmt.Sprint(states) != fmt.Sprint(want) {
		t.Fatalf("states %v, want %v", states, want)
	}
	if fmt.Sprint(chunks) != "[false:abc true:def false:abcdef]" {
		t.Fatalf("response chunks %v", chunks)
	}
	if final == nil || final.Status.Message.Parts[0].Text() != "abcdef" {
		t.Fatalf("final %+v", final)
	}
}

func TestSubscribeToTask(t *testing.T) {
	f := start(t, "single", "sleep", 0)
	task := f.send(t, "hold", true)
	<-f.runner.started
	var last a2a.TaskState
	first := true
	for ev, err := range f.client.SubscribeToTask(context.Background(), &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if err != nil {
			t.Fatal(err)
		}
		if first {
			first = false
			close(f.runner.release)
		}
		if s, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
			last = s.Status.State
		}
	}
	if last != a2a.TaskStateCompleted {
		t.Fatalf("last streamed state %s", last)
	}
}

func TestOriginPassedToTask(t *testing.T) {
	f := start(t, "single", "sleep", 0)
	got := make(chan door.Task, 1)
	f.runner = nil
	srv, err := door.New(door.Config{Name: "local/a", Version: "1", SessionID: "ses_x", URL: f.url,
		Runner: door.RunnerFunc(func(ctx context.Context, t *door.Task, ev door.Events) door.Outcome {
			got <- *t
			return door.Answer("ok")
		})})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	r := post(t, ts.URL, map[string]string{"A2A-Version": "1.0", "x-murmur-task-origin": "delegation", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		sendBody(`{"text":"hi"},{"data":{"k":1}}`))
	if r.Error != nil {
		t.Fatal(r.Error.Message)
	}
	task := <-got
	if task.Origin != door.OriginDelegation || task.Source != door.SourceA2A || task.TraceParent == "" ||
		len(task.Parts) != 2 || string(task.Parts[1].Data) != `{"k":1}` || task.Text() != "hi" || task.MessageBytes != 2+7 {
		t.Fatalf("task %+v", task)
	}
}

func TestConcurrentClients(t *testing.T) {
	f := start(t, "queue", "sleep", 64)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			text := fmt.Sprintf("echo n%d", i)
			res, err := f.client.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: userMsg(text)})
			if err != nil {
				errs <- err
				return
			}
			if tk := res.(*a2a.Task); tk.Status.State != a2a.TaskStateCompleted || statusText(tk) != fmt.Sprintf("n%d", i) {
				errs <- fmt.Errorf("%s: %s %q", text, tk.Status.State, statusText(tk))
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
