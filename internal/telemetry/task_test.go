package telemetry

import (
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// allAttrs is attrs with booleans and string arrays too.
func allAttrs(s *tracepb.Span) map[string]any {
	m := attrs(s)
	for _, a := range s.Attributes {
		switch v := a.Value.Value.(type) {
		case *commonpb.AnyValue_ArrayValue:
			var xs []string
			for _, x := range v.ArrayValue.Values {
				xs = append(xs, x.GetStringValue())
			}
			m[a.Key] = xs
		case *commonpb.AnyValue_BoolValue:
			m[a.Key] = v.BoolValue
		}
	}
	return m
}

func (c *collector) byName(name string) []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*tracepb.Span
	for _, sp := range c.spans {
		if sp.Name == name {
			out = append(out, sp)
		}
	}
	return out
}

func (c *collector) one(t *testing.T, name string) *tracepb.Span {
	t.Helper()
	got := c.byName(name)
	if len(got) != 1 {
		t.Fatalf("collector has %d %s spans, want 1", len(got), name)
	}
	return got[0]
}

func under(child, parent *tracepb.Span) bool {
	return string(child.TraceId) == string(parent.TraceId) && string(child.ParentSpanId) == string(parent.SpanId)
}

func startSession(t *testing.T, url, id string, opts Options) (*Session, string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "otel.log")
	s, err := Start(url, Identity{SessionID: id, CapsuleName: "local/agent", CapsuleVersion: "0.2.0", Kind: "agent"}, logPath, opts, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return s, logPath
}

func TestAgentSpans(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	s, _ := startSession(t, srv.URL, "ses_a", Options{})
	t0 := time.Now()
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

	task := s.StartTask(TaskStartLine{TaskID: "tsk_1", ContextID: "ctx_1", Source: "a2a", Origin: "user", MessageBytes: 12}, "", ms(0))
	task.Inference(InferenceLine{Turn: 1, Model: "replay", InputTokens: 30, OutputTokens: 4, StopReason: "tool_call", ToolCalls: []string{"echo", "ls"}}, ms(1), ms(6))
	task.ToolCall(ToolCallLine{ToolName: "echo", Turn: 1, ToolCallID: "call_1", Kind: "wasm", InputBytes: 9, OutputBytes: 11, Status: "ok", Ending: "ok"}, ms(6), ms(8))
	task.ToolCall(ToolCallLine{ToolName: "nope", Turn: 1, ToolCallID: "call_2", Kind: "runtime", Status: "error", Error: "no such tool"}, ms(8), ms(8))
	task.Shell(ShellLine{Turn: 1, ToolCallID: "call_3", Binary: "/usr/bin/ls", Command: "ls -l", ExitCode: 2, StdoutBytes: 0, StderrBytes: 40, Truncated: true, LogPath: "logs/shell/1.log"}, ms(8), ms(10))
	d := task.StartDelegation(DelegationStartLine{DelegationID: "dlg_1", Capsule: "local/child", Version: "1.0.0"}, ms(10))
	tp := d.Traceparent()
	d.End(DelegationLine{ChildSessionID: "ses_child", Outcome: "ok"}, ms(30))
	d.End(DelegationLine{Outcome: "error"}, ms(40)) // only the first counts
	task.Inference(InferenceLine{Turn: 2, Model: "replay", StopReason: "end_turn"}, ms(30), ms(31))
	task.End(TaskEndLine{ExitStatus: "ok", Turns: 2, InputTokens: 30, OutputTokens: 4, ToolCalls: 2, ToolErrors: 1, ShellCalls: 1}, ms(32))
	task.End(TaskEndLine{ExitStatus: "failed"}, ms(50))    // ignored
	task.Inference(InferenceLine{Turn: 3}, ms(50), ms(51)) // after End: nothing
	failed := s.StartTask(TaskStartLine{TaskID: "tsk_2", Source: "task_md"}, "", ms(40))
	failed.Inference(InferenceLine{Turn: 1, Model: "replay", Err: "transcript exhausted"}, ms(40), ms(41))
	failed.End(TaskEndLine{ExitStatus: "failed", Turns: 1}, ms(42))
	s.End("failed", "", ms(60))

	root := c.one(t, SpanSession)
	tasks := c.byName(SpanTask)
	if len(tasks) != 2 {
		t.Fatalf("%d task spans", len(tasks))
	}
	slices.SortFunc(tasks, func(a, b *tracepb.Span) int {
		return strings.Compare(attrs(a)["task_id"].(string), attrs(b)["task_id"].(string))
	})
	for _, ts := range tasks {
		if !under(ts, root) {
			t.Errorf("task %v is not under the session span", attrs(ts)["task_id"])
		}
		if ts.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
			t.Errorf("task kind %v", ts.Kind)
		}
	}
	if len(root.Links) != 0 {
		t.Errorf("session span has links %v with no traceparent", root.Links)
	}
	want := map[string]any{"task_id": "tsk_1", "context_id": "ctx_1", "source": "a2a", "origin": "user", "message_bytes": int64(12),
		"exit_status": "ok", "turns": int64(2), "input_tokens": int64(30), "output_tokens": int64(4), "tool_calls": int64(2),
		"tool_errors": int64(1), "shell_calls": int64(1), "duration_ms": int64(32)}
	checkAttrs(t, tasks[0], want)
	if tasks[0].Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR || tasks[1].Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("task statuses %v, %v", tasks[0].Status, tasks[1].Status)
	}

	infs := c.byName(SpanInference)
	if len(infs) != 3 {
		t.Fatalf("%d inference spans, want 3 (none after End)", len(infs))
	}
	for _, sp := range infs {
		owner := tasks[0]
		if attrs(sp)["task_id"] == "tsk_2" {
			owner = tasks[1]
		}
		if !under(sp, owner) {
			t.Errorf("inference %v is not under its task", attrs(sp))
		}
		if sp.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("inference kind %v", sp.Kind)
		}
	}
	for _, sp := range infs {
		a := allAttrs(sp)
		switch {
		case a["task_id"] == "tsk_1" && a["turn"] == int64(1):
			checkAttrs(t, sp, map[string]any{"model": "replay", "input_tokens": int64(30), "output_tokens": int64(4),
				"stop_reason": "tool_call", "tool_calls": []string{"echo", "ls"}, "duration_ms": int64(5)})
		case a["task_id"] == "tsk_2":
			if sp.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || sp.Status.Message != "transcript exhausted" {
				t.Errorf("failed inference status %v", sp.Status)
			}
		}
	}

	calls := c.byName(SpanToolCall)
	if len(calls) != 2 {
		t.Fatalf("%d tool_call spans", len(calls))
	}
	for _, sp := range calls {
		if !under(sp, tasks[0]) {
			t.Errorf("tool call %v is not under its task", attrs(sp))
		}
		switch attrs(sp)["tool_name"] {
		case "echo":
			checkAttrs(t, sp, map[string]any{"task_id": "tsk_1", "turn": int64(1), "tool_call_id": "call_1", "kind": "wasm",
				"input_bytes": int64(9), "output_bytes": int64(11), "status": "ok", "ending": "ok", "duration_ms": int64(2)})
		case "nope":
			checkAttrs(t, sp, map[string]any{"status": "error", "error": "no such tool", "kind": "runtime"})
			if sp.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
				t.Errorf("failed tool call status %v", sp.Status)
			}
		}
	}

	sh := c.one(t, SpanShell)
	if !under(sh, tasks[0]) {
		t.Error("shell span is not under its task")
	}
	checkAttrs(t, sh, map[string]any{"task_id": "tsk_1", "turn": int64(1), "tool_call_id": "call_3", "binary": "/usr/bin/ls",
		"command": "ls -l", "exit_code": int64(2), "stdout_bytes": int64(0), "stderr_bytes": int64(40), "truncated": true,
		"log_path": "logs/shell/1.log", "duration_ms": int64(2)})
	if sh.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("shell exit 2 status %v", sh.Status)
	}

	dl := c.one(t, SpanDelegation)
	if !under(dl, tasks[0]) {
		t.Error("delegation span is not under its task")
	}
	checkAttrs(t, dl, map[string]any{"task_id": "tsk_1", "delegation_id": "dlg_1", "capsule": "local/child", "version": "1.0.0",
		"child_session_id": "ses_child", "outcome": "ok", "duration_ms": int64(20)})
	if dl.Kind != tracepb.Span_SPAN_KIND_PRODUCER {
		t.Errorf("delegation kind %v", dl.Kind)
	}
	if wantTP := "00-" + hex.EncodeToString(dl.TraceId) + "-" + hex.EncodeToString(dl.SpanId) + "-01"; tp != wantTP {
		t.Errorf("Traceparent() = %q, want %q", tp, wantTP)
	}
}

func checkAttrs(t *testing.T, sp *tracepb.Span, want map[string]any) {
	t.Helper()
	got := allAttrs(sp)
	for k, v := range want {
		if fmt.Sprint(got[k]) != fmt.Sprint(v) || fmt.Sprintf("%T", got[k]) != fmt.Sprintf("%T", v) {
			t.Errorf("%s %s = %#v, want %#v", sp.Name, k, got[k], v)
		}
	}
}

// A parent session delegates; the child session's task arrives with the
// delegation span's traceparent: the child's task and everything under it
// are in the parent's trace, under the delegation span, and the child's
// session span links there.
func TestRemoteParentAndLink(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	parent, _ := startSession(t, srv.URL, "ses_parent", Options{})
	child, _ := startSession(t, srv.URL, "ses_child", Options{})
	now := time.Now()

	pt := parent.StartTask(TaskStartLine{TaskID: "tsk_p", Source: "task_md", Origin: "user"}, "", now)
	d := pt.StartDelegation(DelegationStartLine{DelegationID: "dlg_1", Capsule: "local/child", Version: "1"}, now)
	ct := child.StartTask(TaskStartLine{TaskID: "tsk_c", Source: "a2a", Origin: "delegation"}, d.Traceparent(), now)
	ct.Inference(InferenceLine{Turn: 1, Model: "replay", StopReason: "end_turn"}, now, now)
	ct.End(TaskEndLine{ExitStatus: "ok", Turns: 1}, now)
	child.End("ok", "", now)
	d.End(DelegationLine{Outcome: "ok", ChildSessionID: "ses_child"}, now)
	pt.End(TaskEndLine{ExitStatus: "ok"}, now)
	parent.End("ok", "", now)

	var proot, croot, ptask, ctask *tracepb.Span
	for _, sp := range c.byName(SpanSession) {
		if attrs(sp)["session_id"] == "ses_parent" {
			proot = sp
		} else {
			croot = sp
		}
	}
	for _, sp := range c.byName(SpanTask) {
		if attrs(sp)["task_id"] == "tsk_p" {
			ptask = sp
		} else {
			ctask = sp
		}
	}
	dl := c.one(t, SpanDelegation)
	inf := c.one(t, SpanInference)
	if proot == nil || croot == nil || ptask == nil || ctask == nil {
		t.Fatalf("spans missing: %v", c.spans)
	}
	if !under(ptask, proot) || !under(dl, ptask) {
		t.Error("parent's task or delegation span out of place")
	}
	if !under(ctask, dl) {
		t.Errorf("child task (trace %x parent %x) is not under the delegation span (trace %x span %x)",
			ctask.TraceId, ctask.ParentSpanId, dl.TraceId, dl.SpanId)
	}
	if ctask.Kind != tracepb.Span_SPAN_KIND_CONSUMER {
		t.Errorf("remote-parented task kind %v", ctask.Kind)
	}
	if !under(inf, ctask) {
		t.Error("child's inference span is not under the child's task")
	}
	if string(croot.TraceId) == string(proot.TraceId) {
		t.Error("the child's session span joined the parent's trace; only its tasks should")
	}
	if len(croot.Links) != 1 {
		t.Fatalf("child session span has %d links, want 1", len(croot.Links))
	}
	l := croot.Links[0]
	if string(l.TraceId) != string(dl.TraceId) || string(l.SpanId) != string(dl.SpanId) {
		t.Errorf("link points at %x/%x, want the delegation span %x/%x", l.TraceId, l.SpanId, dl.TraceId, dl.SpanId)
	}
	if len(l.Attributes) != 1 || l.Attributes[0].Key != "task_id" || l.Attributes[0].Value.GetStringValue() != "tsk_c" {
		t.Errorf("link attributes %v", l.Attributes)
	}
}

// A traceparent that does not parse leaves the task under the session span,
// with no link, and one debug line in otel.log.
func TestMalformedTraceparent(t *testing.T) {
	for _, tp := range []string{
		"garbage",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero span id
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // version ff
		"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",  // short trace id
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", // upper case
	} {
		t.Run(tp, func(t *testing.T) {
			c := &collector{}
			srv := httptest.NewServer(c)
			defer srv.Close()
			s, logPath := startSession(t, srv.URL, "ses_m", Options{})
			task := s.StartTask(TaskStartLine{TaskID: "tsk_m"}, tp, time.Now())
			task.End(TaskEndLine{ExitStatus: "ok"}, time.Now())
			s.End("ok", "", time.Now())
			root, ts := c.one(t, SpanSession), c.one(t, SpanTask)
			if !under(ts, root) {
				t.Error("task is not under the session span")
			}
			if len(root.Links) != 0 {
				t.Errorf("links %v", root.Links)
			}
			data, _ := os.ReadFile(logPath)
			if n := strings.Count(string(data), "level=DEBUG msg=\"traceparent is malformed"); n != 1 {
				t.Errorf("otel.log has %d malformed-traceparent lines:\n%s", n, data)
			}
		})
	}
}

// A remote parent that says "not sampled" is honoured: the task's spans are
// not exported, the session's are.
func TestUnsampledRemoteParent(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	s, _ := startSession(t, srv.URL, "ses_u", Options{})
	task := s.StartTask(TaskStartLine{TaskID: "tsk_u"}, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", time.Now())
	task.Inference(InferenceLine{Turn: 1}, time.Now(), time.Now())
	task.End(TaskEndLine{ExitStatus: "ok"}, time.Now())
	s.End("ok", "", time.Now())
	if n := len(c.byName(SpanTask)) + len(c.byName(SpanInference)); n != 0 {
		t.Errorf("%d spans of an unsampled task exported", n)
	}
	if root := c.one(t, SpanSession); len(root.Links) != 1 {
		t.Errorf("session span links %v", root.Links)
	}
}

// A task (and its delegation) still open when the session ends is exported,
// marked as cut short; later calls are no-ops and a new task is refused.
func TestSessionEndClosesOpenSpans(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	s, _ := startSession(t, srv.URL, "ses_o", Options{})
	task := s.StartTask(TaskStartLine{TaskID: "tsk_o"}, "", time.Now())
	d := task.StartDelegation(DelegationStartLine{DelegationID: "dlg_o"}, time.Now())
	sd := s.StartDelegation(DelegationStartLine{DelegationID: "dlg_s"}, time.Now())
	s.End("canceled", "terminated", time.Now())
	task.Inference(InferenceLine{Turn: 1}, time.Now(), time.Now())
	task.End(TaskEndLine{ExitStatus: "ok"}, time.Now())
	d.End(DelegationLine{Outcome: "ok"}, time.Now())
	if late := s.StartTask(TaskStartLine{TaskID: "late"}, "", time.Now()); late != nil {
		t.Error("StartTask after End returned a task")
	}

	ts := c.one(t, SpanTask)
	checkAttrs(t, ts, map[string]any{"cut_short": true})
	if ts.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("cut-short task status %v", ts.Status)
	}
	if _, ok := attrs(ts)["exit_status"]; ok {
		t.Error("a task End after the session's End still counted")
	}
	dls := c.byName(SpanDelegation)
	if len(dls) != 2 {
		t.Fatalf("%d delegation spans, want 2", len(dls))
	}
	root := c.one(t, SpanSession)
	for _, dl := range dls {
		checkAttrs(t, dl, map[string]any{"outcome": "terminated"})
		if attrs(dl)["delegation_id"] == "dlg_s" && !under(dl, root) {
			t.Error("a script's delegation is not under the session span")
		}
		if attrs(dl)["delegation_id"] == "dlg_o" && !under(dl, ts) {
			t.Error("the task's delegation is not under the task")
		}
	}
	if len(c.byName(SpanInference)) != 0 {
		t.Error("an inference after the session's End was exported")
	}
	if sd.Traceparent() == "" {
		t.Error("script delegation has no traceparent")
	}
}

func TestNilIsSafe(t *testing.T) {
	var s *Session
	now := time.Now()
	task := s.StartTask(TaskStartLine{TaskID: "x"}, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", now)
	if task != nil {
		t.Fatal("nil session made a task")
	}
	task.Inference(InferenceLine{}, now, now)
	task.ToolCall(ToolCallLine{}, now, now)
	task.Shell(ShellLine{}, now, now)
	d := task.StartDelegation(DelegationStartLine{}, now)
	if d.Traceparent() != "" {
		t.Error("nil delegation has a traceparent")
	}
	d.End(DelegationLine{}, now)
	task.End(TaskEndLine{}, now)
	if s.StartDelegation(DelegationStartLine{}, now) != nil {
		t.Error("nil session made a delegation")
	}
}

// A collector that stays down for many exports costs one otel.log line.
func TestCollectorDownOneLine(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s, logPath := startSession(t, "http://"+addr, "ses_d", Options{ShutdownTimeout: 5 * time.Second})
	task := s.StartTask(TaskStartLine{TaskID: "tsk_d"}, "", time.Now())
	// Over four full batches (512 each), so at least four exports fail.
	for i := 0; i < 2100; i++ {
		task.ToolCall(ToolCallLine{ToolName: "echo", Status: "ok"}, time.Now(), time.Now())
	}
	task.End(TaskEndLine{ExitStatus: "ok"}, time.Now())
	s.End("ok", "", time.Now())
	data, _ := os.ReadFile(logPath)
	if n := strings.Count(string(data), "level=ERROR"); n != 1 {
		t.Errorf("otel.log has %d error lines, want 1:\n%s", n, data)
	}
	if !strings.Contains(string(data), "connection refused") {
		t.Errorf("otel.log does not say why:\n%s", data)
	}
}

// A collector that never answers: far more spans than the queue holds are
// recorded without any call waiting on it (they are dropped instead), and End
// stays bounded. Completing at all is the assertion; BenchmarkTaskCalls
// measures the cost.
func TestCollectorHangsCallsDoNotWait(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	s, logPath := startSession(t, srv.URL, "ses_h", Options{QueueSize: 16, ExportTimeout: time.Minute, ShutdownTimeout: 300 * time.Millisecond})
	task := s.StartTask(TaskStartLine{TaskID: "tsk_h"}, "", time.Now())
	for i := 0; i < 5000; i++ {
		task.Inference(InferenceLine{Turn: i}, time.Now(), time.Now())
	}
	task.End(TaskEndLine{ExitStatus: "ok"}, time.Now())
	s.End("ok", "", time.Now())
	if data, _ := os.ReadFile(logPath); !strings.Contains(string(data), "level=ERROR") {
		t.Errorf("otel.log has no error:\n%s", data)
	}
}

// BenchmarkTaskCalls measures the loop-side cost of one turn's spans (an
// inference and a tool call) against a collector that answers, one that
// never answers and one that is down.
func BenchmarkTaskCalls(b *testing.B) {
	// The answering collector reads and discards: keeping every span
	// would measure the test's memory, not the session's calls.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer up.Close()
	hang := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer hanging.Close()
	defer close(hang) // before Close, which waits for the handlers
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()

	// "off" is the nil *Session a session without otel_endpoint has: the
	// floor the other figures compare with.
	b.Run("off", func(b *testing.B) {
		var s *Session
		task := s.StartTask(TaskStartLine{TaskID: "tsk_b"}, "", time.Now())
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			now := time.Now()
			task.Inference(InferenceLine{Turn: i, Model: "replay", StopReason: "tool_call"}, now, now)
			task.ToolCall(ToolCallLine{ToolName: "echo", Turn: i, Status: "ok"}, now, now)
		}
	})
	for _, bc := range []struct{ name, url string }{{"up", up.URL}, {"hanging", hanging.URL}, {"down", down}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := Start(bc.url, Identity{SessionID: "ses_b", CapsuleName: "a/b", CapsuleVersion: "1", Kind: "agent"},
				filepath.Join(b.TempDir(), "otel.log"), Options{ExportTimeout: 10 * time.Second, ShutdownTimeout: 100 * time.Millisecond}, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			task := s.StartTask(TaskStartLine{TaskID: "tsk_b", ContextID: "ctx_b", Source: "a2a", Origin: "user"}, "", time.Now())
			tools := []string{"echo"}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				now := time.Now()
				task.Inference(InferenceLine{Turn: i, Model: "replay", StopReason: "tool_call", ToolCalls: tools}, now, now)
				task.ToolCall(ToolCallLine{ToolName: "echo", Turn: i, ToolCallID: "call_1", Kind: "wasm", Status: "ok", Ending: "ok"}, now, now)
			}
			b.StopTimer()
			task.End(TaskEndLine{ExitStatus: "ok"}, time.Now())
			s.End("ok", "", time.Now())
		})
	}
}

// Tasks recorded from many goroutines while the session ends: under -race
// this is the check that Session and Task are safe for concurrent use, and
// every span that was recorded before the end is well formed.
func TestConcurrentTasksAndEnd(t *testing.T) {
	c := &collector{}
	srv := httptest.NewServer(c)
	defer srv.Close()
	s, _ := startSession(t, srv.URL, "ses_c", Options{})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				task := s.StartTask(TaskStartLine{TaskID: fmt.Sprintf("tsk_%d_%d", g, i)}, "", time.Now())
				task.Inference(InferenceLine{Turn: 1}, time.Now(), time.Now())
				d := task.StartDelegation(DelegationStartLine{DelegationID: "dlg"}, time.Now())
				task.ToolCall(ToolCallLine{ToolName: "echo", Status: "ok"}, time.Now(), time.Now())
				if i%2 == 0 {
					d.End(DelegationLine{Outcome: "ok"}, time.Now())
				}
				task.End(TaskEndLine{ExitStatus: "ok"}, time.Now())
			}
		}()
	}
	time.Sleep(time.Millisecond) // let some tasks start before the end; either order is correct
	s.End("ok", "", time.Now())
	wg.Wait()
	root := c.one(t, SpanSession)
	byID := map[string]*tracepb.Span{}
	for _, ts := range c.byName(SpanTask) {
		if !under(ts, root) {
			t.Fatal("a task span is not under the session span")
		}
		byID[string(ts.SpanId)] = ts
	}
	for _, name := range []string{SpanInference, SpanToolCall, SpanDelegation} {
		for _, sp := range c.byName(name) {
			if byID[string(sp.ParentSpanId)] == nil {
				t.Fatalf("a %s span has no exported task as its parent", name)
			}
		}
	}
}
