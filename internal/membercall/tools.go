package membercall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/murmur-go/murmur/internal/agent"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/tools"
)

// The runtime tools' names.
const (
	CallToolName = "call-member"
	EndToolName  = "end-without-answer"
)

// MaxAnswerBytes is how much of a member's answer a block holds.
const MaxAnswerBytes = 64 << 10

// Tools are call-member and end-without-answer, in that order.
func (r *Runtime) Tools() []tools.Entry { return []tools.Entry{&CallTool{r}, &EndTool{r}} }

// CallTool is call-member (tools.KindRuntime).
type CallTool struct{ r *Runtime }

func (t *CallTool) Name() string { return CallToolName }
func (t *CallTool) Kind() string { return tools.KindRuntime }
func (t *CallTool) Description() string {
	return "Ask another member of this formation to do a task: it runs at that member's door. The call returns once the member has the task (or, when it is busy, while the runtime keeps offering it); once your turn ends, this task waits for the answer and continues with it. Members you may call: " +
		strings.Join(t.r.cfg.Callees.Names(), ", ") + "."
}

// Schema is §22.10's: member (the callees in roster order) and task.
func (t *CallTool) Schema() json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"member": map[string]any{"type": "string", "enum": t.r.cfg.Callees.Names()},
			"task":   map[string]any{"type": "string"},
		},
		"required":             []string{"member", "task"},
		"additionalProperties": false,
	})
	return b
}

// result is call-member's result object.
type result struct {
	CallID string `json:"call_id"`
	Member string `json:"member"`
	Status string `json:"status"`
	TaskID string `json:"task_id,omitempty"`
	Note   string `json:"note,omitempty"`
	Output string `json:"output,omitempty"`
}

func refuse(format string, args ...any) tools.Outcome {
	return tools.Outcome{Err: fmt.Errorf(format, args...), Verbatim: true}
}

func inputOf(c *tools.Call) []byte {
	if c.Input.Data == nil {
		return nil
	}
	return []byte(*c.Input.Data)
}

// Call makes one call: the refusals that send nothing, then the first offer.
func (t *CallTool) Call(ctx context.Context, c *tools.Call) tools.Outcome {
	r := t.r
	if c.Task == nil {
		return refuse("call-member is an agent loop tool; a script cannot invoke it")
	}
	var in struct {
		Member *string `json:"member"`
		Task   *string `json:"task"`
	}
	dec := json.NewDecoder(strings.NewReader(string(inputOf(c))))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return refuse("the input to call-member must be {\"member\": string, \"task\": string}: %v", err)
	}
	switch {
	case in.Member == nil || in.Task == nil:
		return refuse("call-member needs both member and task")
	case !r.cfg.Callees.Has(*in.Member):
		return refuse("'%s' is not a member this capsule may call; it may call: %s", *in.Member, strings.Join(r.cfg.Callees.Names(), ", "))
	case strings.TrimSpace(*in.Task) == "":
		return refuse("task is empty: it is the whole of what the member is told")
	}
	member := *in.Member
	cctx, cancel := context.WithCancel(r.base)
	cl := &call{id: ids.New(ids.MemberCall), taskID: c.Task.TaskID, member: member, text: *in.Task,
		parent: c.Task.ParentID, cancel: cancel, first: make(chan offer, 1), start: time.Now()}
	r.mu.Lock()
	refusal := ""
	switch ti := r.tasks[cl.taskID]; {
	case r.closed:
		refusal = "this session is ending and calls no member"
	case ti != nil && ti.noAnswer != nil:
		refusal = "end-without-answer was accepted in this task: it calls no member now"
	default:
		for _, o := range r.pendingLocked(cl.taskID) {
			if o.member == member {
				refusal = fmt.Sprintf("a call to '%s' from this task is still outstanding (call %s); its answer arrives after this turn ends", member, o.id)
			}
		}
	}
	if refusal == "" {
		r.calls[cl.id] = cl
		r.wg.Add(1)
	}
	r.mu.Unlock()
	if refusal != "" {
		cancel()
		return refuse("%s", refusal)
	}
	cl.traceparent = r.cfg.Recorder.OpenMemberCall(c.Task.ParentID, cl.id, member)
	go r.run(cctx, cl, r.cfg.Callees.Token(member))
	var o offer
	select {
	case o = <-cl.first:
	case <-ctx.Done():
		// The task was cancelled during the first offer: TaskEnded abandons it.
		return tools.Outcome{Err: errors.New("the task was cancelled before the member answered the call")}
	}
	res := result{CallID: cl.id, Member: member, Status: o.kind}
	note := fmt.Sprintf("The answer arrives after this turn ends; do not call %s again meanwhile.", member)
	switch o.kind {
	case "started":
		res.TaskID, res.Note = o.taskID, note
	case "busy":
		res.Note = fmt.Sprintf("%s is busy; the runtime keeps offering it the task. %s", member, note)
	default:
		if o.kind == StatusAbandoned {
			res.Status = StatusFailed
			o.msg = "the task was cancelled before the member answered the call"
		}
		res.Output = o.msg
		r.mu.Lock()
		cl.consumed = true // its result is this one; no continuation carries it
		r.mu.Unlock()
	}
	if c.Task.MemberCalls != nil {
		c.Task.MemberCalls(r.InFlight(cl.taskID))
	}
	b, _ := json.Marshal(res)
	if res.Output != "" {
		return tools.Outcome{Err: errors.New(string(b)), Verbatim: true}
	}
	return tools.Outcome{Text: string(b)}
}

// EndTool is end-without-answer (tools.KindRuntime).
type EndTool struct{ r *Runtime }

func (t *EndTool) Name() string { return EndToolName }
func (t *EndTool) Kind() string { return tools.KindRuntime }
func (t *EndTool) Description() string {
	return "End this task without an answer, when a formation member sent it and the members you called gave you nothing to answer with: the task ends failed with 'no answer: <reason>' once this turn's calls have run, and its caller is told so."
}
func (t *EndTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string","description":"Why there is no answer; the caller reads it."}},"required":["reason"],"additionalProperties":false}`)
}

// Call accepts or refuses the ending, in §22.11's order.
func (t *EndTool) Call(_ context.Context, c *tools.Call) tools.Outcome {
	r := t.r
	if c.Task == nil {
		return refuse("end-without-answer is an agent loop tool; a script cannot invoke it")
	}
	var in struct {
		Reason string `json:"reason"`
	}
	bad := json.Unmarshal(inputOf(c), &in)
	r.mu.Lock()
	defer r.mu.Unlock()
	ti := r.tasks[c.Task.TaskID]
	if ti == nil || ti.caller == "" {
		return refuse("this task was not sent by a formation member: answer it in text")
	}
	if ps := r.pendingLocked(c.Task.TaskID); len(ps) > 0 {
		return refuse("a call from this task is still outstanding or holds an answer not yet delivered (call %s); its answer arrives after this turn ends", ps[0].id)
	}
	if bad != nil || strings.TrimSpace(in.Reason) == "" {
		return refuse("reason is blank: say why this task ends without an answer")
	}
	if ti.noAnswer != nil {
		return refuse("end-without-answer was already accepted in this task")
	}
	reason := strings.TrimSpace(in.Reason)
	ti.noAnswer = &reason
	return tools.Outcome{Text: `{"status":"ending"}`}
}

// block is one member answer as the model reads it (§22.12).
func (r *Runtime) block(c *call) string {
	r.mu.Lock()
	status, answer, memberTask := c.status, c.answer, c.memberTask
	dur := time.Since(c.start).Milliseconds()
	r.mu.Unlock()
	if memberTask == "" {
		memberTask = "none"
	}
	if status == StatusCompleted {
		answer = r.cut(c.id, answer)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[call-member] call %s to %s ended %s:\n", c.id, c.member, status)
	fmt.Fprintf(&b, "<untrusted-content source=member:%s>\n", c.member)
	in := fmt.Sprintf("Formation member answered.\ncall_id: %s\nmember: %s\ntask_id: %s\nstatus: %s\nduration_ms: %d\nanswer:\n%s",
		c.id, c.member, memberTask, status, dur, answer)
	b.WriteString(agent.Unfence(in))
	b.WriteString("\n</untrusted-content>")
	return b.String()
}

// cut bounds an answer to MaxAnswerBytes (at a rune's start) and keeps
// the whole at member-calls/<id>.txt in the runtime dir.
func (r *Runtime) cut(id, answer string) string {
	if len(answer) <= MaxAnswerBytes {
		return answer
	}
	kept := MaxAnswerBytes
	for kept > 0 && !utf8.RuneStart(answer[kept]) {
		kept--
	}
	where := fmt.Sprintf("the whole answer is member-calls/%s.txt in the runtime directory", id)
	if err := r.keep(id, answer); err != nil {
		where = "the whole answer could not be kept in the runtime directory: " + err.Error()
	}
	return fmt.Sprintf("%s […]\n[cut at %d of %d bytes; %s]", answer[:kept], kept, len(answer), where)
}

func (r *Runtime) keep(id, answer string) error {
	dir := filepath.Join(r.cfg.RuntimeDir, "member-calls")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, id+".txt"), []byte(answer), 0o400)
}
