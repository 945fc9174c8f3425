// Package agent is the inference loop of an agent capsule (docs/agent-capsules.md):
// per task, task_start → turns → task_end, where a turn is one driver
// call and then every tool call it asked for, in order. It implements the
// door's Runner, so every task — the --task one and each accepted message —
// runs here; it knows tools only through the Tools interface, so a WASM tool,
// a skill, a shell tool and delegate-task are called alike.
//
// The loop owns the session's token ceiling (inference.max_session_tokens):
// before each call it checks that the tokens used so far, plus this
// request's input estimate, plus max_tokens, stay within it; once refused,
// the ceiling latches for the rest of the session.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/driver"
	"github.com/murmur-go/murmur/internal/hooks"
	"github.com/murmur-go/murmur/internal/store"
	"github.com/murmur-go/murmur/internal/trace"
	"github.com/murmur-go/murmur/internal/wit"
)

// Tools is the model's tool inventory; internal/tools implements it.
type Tools interface {
	// Specs lists the tools the model may call, in a stable order.
	Specs() []driver.Tool
	// Call runs one tool call and records its trace line (tool_call, or
	// shell for a shell tool) under c.ParentID. A tool that does not exist,
	// or input that is not an object it accepts, is an error Result the
	// model sees, never a Go error: the task goes on.
	Call(ctx context.Context, c Call) Result
}

// Call is one tool call the model asked for.
type Call struct {
	TaskID string
	Turn   int
	ID     string // the driver's tool_call id
	Name   string
	Input  json.RawMessage
	// ParentID is the event_id of the turn's inference line.
	ParentID string
	// Events lets a tool stream chunks and ask for input (INPUT_REQUIRED).
	Events door.Events
}

// Result is what a tool call gave.
type Result struct {
	// Text is what the model sees (already cut to the 64 KiB bound).
	Text string
	// IsError marks a call that failed; it counts in tool_errors.
	IsError bool
	// Shell marks a shell tool call: it counts in shell_calls, not tool_calls.
	Shell bool
	// Denied marks a call the policy gate stopped: it ran nothing and
	// counts in calls_denied only.
	Denied bool
	// NotRun marks a call whose wait for an operator the task's cancel
	// ended: it counts nowhere.
	NotRun bool
	// Source names the result in its untrusted-content fence
	// ("tool:acme/echo", "shell:bash").
	Source string
	// Nested counts the calls this call made for the task (a plan's tool
	// and shell steps): they count in the task's totals as direct calls do.
	Nested Counts
}

// Counts are calls as task_end counts them.
type Counts struct {
	ToolCalls, ToolErrors, ShellCalls, CallsDenied int
}

// Config is one agent session's loop.
type Config struct {
	Driver driver.Driver
	Model  string
	// MaxTurns, MaxTokens and MaxSessionTokens (0 is no ceiling) are the
	// inference block's values with defaults applied.
	MaxTurns, MaxTokens, MaxSessionTokens int
	// CallDeadline bounds each driver call (capabilities.limits'
	// deadline_seconds); 0 is none. A built-in driver that runs past it
	// leaves a call_deadline line (a stored one's adapter writes its own).
	CallDeadline time.Duration
	// Params are passed to the driver unchanged.
	Params map[string]any
	// System is the whole system prompt (the [Capsule] block and the
	// configured prompt).
	System string
	Tools  Tools
	// Recorder writes the task's lines (and, through its span sink, their
	// spans).
	Recorder *trace.Recorder
	// Hooks are the capsule's lifecycle hooks; nil runs none. The loop calls
	// on-task-start, on-inference and on-task-end (its reopen-task output
	// reruns the task, at most MaxTaskReopens times, within MaxTurns); the
	// tools call on-tool-call and on-shell.
	Hooks *hooks.Dispatcher
	// MaxTaskReopens bounds reopen-task per task [1].
	MaxTaskReopens int
	// ResultPath is <records dir>/out/result.txt: the latest task that
	// ended ok writes its answer there.
	ResultPath string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Waiter is the delegation runtime (nil: none): when the model ends
	// its turn, the task waits for what it handed off and continues once
	// with the outcomes (docs/delegation.md).
	Waiter Waiter
	// Endings tells the loop a task's model accepted end-without-answer
	// (nil: none can): the turn's calls run, then the task ends no_answer
	// with no further inference (docs/formations.md).
	Endings Endings
}

// Endings knows the tasks that chose to end without an answer.
type Endings interface {
	// NoAnswer is the reason the task gave, once it was accepted.
	NoAnswer(taskID string) (reason string, ok bool)
}

// Waiter holds a task's handed-off work.
type Waiter interface {
	// Await is called when the model ends a turn with turnsLeft turns of
	// the budget left; it blocks (spending no tokens) until every outcome
	// is in and returns them as the next user message, or false when the
	// task has nothing outstanding.
	Await(ctx context.Context, taskID string, turnsLeft int, ev door.Events) (string, bool)
	// TaskEnded is called once the task has ended with exit status status.
	TaskEnded(taskID, status string)
}

// NoAnswerPrefix begins the status message (and result.txt) of a task
// ended by end-without-answer; a caller reads the ending from it.
const NoAnswerPrefix = "no answer: "

// Session runs the tasks of one agent session. It is safe for concurrent
// tasks (a queue runs them one at a time, but nothing here relies on it).
type Session struct {
	cfg Config

	mu          sync.Mutex
	used        int    // tokens used by every call so far (input + output)
	latched     bool   // the ceiling refused a call: every later call is refused
	lastFailure string // the status message of the last task that failed
	// resultMu orders writers of result.txt.
	resultMu sync.Mutex
}

// LastFailure is the status message of the last task that did not end ok
// ("max_turns_reached", the driver's error, …), "" when none has.
func (s *Session) LastFailure() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastFailure
}

// New makes a session's loop.
func New(cfg Config) *Session {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = 1
	}
	if cfg.MaxTaskReopens == 0 {
		cfg.MaxTaskReopens = 1
	}
	return &Session{cfg: cfg}
}

// taskState is one task's counters, for its task_end line.
type taskState struct {
	turns, inTok, outTok, toolCalls, toolErrors, shellCalls, callsDenied int
}

// RunTask runs one task to its end (door.Runner).
func (s *Session) RunTask(ctx context.Context, t *door.Task, ev door.Events) door.Outcome {
	start := s.cfg.Now()
	rec := s.cfg.Recorder
	taskLine := rec.Emit(trace.TaskStart{TaskID: t.ID, ContextID: t.ContextID, Source: string(t.Source),
		Origin: string(t.Origin), MessageBytes: t.MessageBytes, TraceParent: t.TraceParent})
	s.hookOutputs(ev, s.cfg.Hooks.OnTaskStart(ctx, wit.TaskStartEvent{TaskID: t.ID, ContextID: t.ContextID,
		Source: string(t.Source), InputBytes: uint64(t.MessageBytes)}))
	var st taskState
	status, out := s.loop(ctx, t, ev, taskLine, &st)
	if s.cfg.Waiter != nil {
		s.cfg.Waiter.TaskEnded(t.ID, status)
	}
	if status != trace.EndOK && status != trace.EndCanceled && status != trace.EndNoAnswer {
		s.mu.Lock()
		s.lastFailure = out.Text()
		s.mu.Unlock()
	}
	rec.EmitUnder(taskLine, trace.TaskEnd{TaskID: t.ID, ExitStatus: status, Turns: st.turns,
		InputTokens: st.inTok, OutputTokens: st.outTok, ToolCalls: st.toolCalls, ToolErrors: st.toolErrors,
		ShellCalls: st.shellCalls, CallsDenied: st.callsDenied, DurationMS: s.cfg.Now().Sub(start).Milliseconds()})
	if status != trace.EndOK {
		// An ok task has had its on-task-end (which may have reopened it).
		s.hookOutputs(ev, s.cfg.Hooks.OnTaskEnd(ctx, wit.TaskEndEvent{TaskID: t.ID, ExitStatus: status}))
	}
	return out
}

// loop is the turns of one task; it returns task_end's exit_status and the
// task's outcome.
func (s *Session) loop(ctx context.Context, t *door.Task, ev door.Events, taskLine string, st *taskState) (string, door.Outcome) {
	rec := s.cfg.Recorder
	msgs := []driver.Message{{Role: driver.RoleUser, Content: []driver.Block{driver.TextBlock(taskText(t))}}}
	tools := s.cfg.Tools.Specs()
	// A stored driver may answer a continuation_id: the next turn then
	// sends only the messages added since (docs/drivers.md).
	var cont driver.Continuation
	reopens := 0
	for turn := 1; turn <= s.cfg.MaxTurns; turn++ {
		if ctx.Err() != nil {
			return trace.EndCanceled, door.Canceled()
		}
		req := &driver.Request{Model: s.cfg.Model, MaxTokens: int64(s.cfg.MaxTokens), System: s.cfg.System,
			Messages: msgs, Tools: tools, Params: s.cfg.Params}
		if refused, used, requested := s.admit(req); refused {
			rec.EmitUnder(taskLine, trace.SpendCeilingReached{TaskID: t.ID, Ceiling: s.cfg.MaxSessionTokens,
				Used: used, Requested: requested})
			return trace.EndSpendCeilingReached, door.Failed(trace.EndSpendCeilingReached)
		}
		ev.Phase(door.PhaseInference)
		callStart := s.cfg.Now()
		resp, err := s.callDriver(ctx, cont.Next(req), ev.AppendText)
		if err == nil {
			cont.Got(resp)
		}
		st.turns++
		inf := trace.Inference{TaskID: t.ID, Turn: turn, Model: s.cfg.Model, ToolCalls: []string{},
			DurationMS: s.cfg.Now().Sub(callStart).Milliseconds()}
		if err == nil {
			err = resp.Validate()
		}
		if err == nil && resp.StopReason == driver.StopError {
			err = fmt.Errorf("the driver reported an error: %s", resp.Text())
		}
		if resp != nil && resp.Usage != nil {
			inf.InputTokens, inf.OutputTokens = int(resp.Usage.InputTokens), int(resp.Usage.OutputTokens)
		}
		s.spend(inf.InputTokens + inf.OutputTokens)
		st.inTok += inf.InputTokens
		st.outTok += inf.OutputTokens
		if err != nil {
			inf.StopReason, inf.Err = driver.StopError, err.Error()
			rec.EmitUnder(taskLine, inf)
			if ctx.Err() != nil {
				return trace.EndCanceled, door.Canceled()
			}
			return trace.EndFailed, door.Failed(failureText(err))
		}
		calls := resp.ToolCalls()
		inf.StopReason = resp.StopReason
		for _, c := range calls {
			inf.ToolCalls = append(inf.ToolCalls, c.Name)
		}
		infLine := rec.EmitUnder(taskLine, inf)
		msgs = append(msgs, driver.Message{Role: driver.RoleAssistant, Content: resp.Content})
		s.hookOutputs(ev, s.cfg.Hooks.OnInference(ctx, inferenceEvent(turn, inf, resp)))
		if len(calls) == 0 {
			if s.cfg.Waiter != nil {
				if text, ok := s.cfg.Waiter.Await(ctx, t.ID, s.cfg.MaxTurns-turn, ev); ok {
					msgs = append(msgs, driver.Message{Role: driver.RoleUser, Content: []driver.Block{driver.TextBlock(text)}})
					continue
				}
				if ctx.Err() != nil {
					return trace.EndCanceled, door.Canceled()
				}
			}
			answer := resp.Text()
			// on-task-end may reopen the task: its reason becomes a user
			// message and the turns go on, within the budget.
			if reason, ok := s.reopen(ctx, t, ev, trace.EndOK, &reopens); ok && turn < s.cfg.MaxTurns {
				msgs = append(msgs, driver.Message{Role: driver.RoleUser, Content: []driver.Block{driver.TextBlock(reason)}})
				continue
			}
			s.writeResult(answer)
			return trace.EndOK, door.Answer(answer)
		}
		for _, c := range calls {
			if ctx.Err() != nil {
				return trace.EndCanceled, door.Canceled()
			}
			ev.Phase(door.PhaseTool)
			r := s.cfg.Tools.Call(ctx, Call{TaskID: t.ID, Turn: turn, ID: c.ID, Name: c.Name, Input: c.Input,
				ParentID: infLine, Events: ev})
			switch {
			case r.NotRun:
			case r.Denied:
				st.callsDenied++
			case r.Shell:
				st.shellCalls++
			default:
				st.toolCalls++
				if r.IsError {
					st.toolErrors++
				}
			}
			st.toolCalls += r.Nested.ToolCalls
			st.toolErrors += r.Nested.ToolErrors
			st.shellCalls += r.Nested.ShellCalls
			st.callsDenied += r.Nested.CallsDenied
			ev.ToolResult(c.ID, c.Name, r.Text, nil)
			msgs = append(msgs, driver.Message{Role: driver.RoleTool, ToolCallID: c.ID,
				Content: []driver.Block{driver.TextBlock(Fence(r.Source, r.Text))}})
		}
		if s.cfg.Endings != nil {
			if reason, ok := s.cfg.Endings.NoAnswer(t.ID); ok {
				text := NoAnswerPrefix + reason
				s.writeResult(text)
				return trace.EndNoAnswer, door.Failed(text)
			}
		}
	}
	return trace.EndMaxTurnsReached, door.Failed(trace.EndMaxTurnsReached)
}

// callDriver makes one driver call bounded by the call deadline.
func (s *Session) callDriver(ctx context.Context, req *driver.Request, chunk driver.ChunkFunc) (*driver.Response, error) {
	// A stored driver's call is bounded by its component's own limits: the
	// engine stops it at the deadline plus the grace and records the
	// call_deadline line itself; a context cut at the bare deadline would
	// read as a cancel and leave neither.
	if s.cfg.CallDeadline <= 0 || s.cfg.Driver.Info().Implementation == driver.ImplementationWASM {
		return s.cfg.Driver.Call(ctx, req, chunk)
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CallDeadline)
	defer cancel()
	resp, err := s.cfg.Driver.Call(cctx, req, chunk)
	info := s.cfg.Driver.Info()
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) && info.Implementation == driver.ImplementationBuiltin {
		s.cfg.Recorder.CallDeadline(info.Name, "inference", s.cfg.CallDeadline)
	}
	return resp, err
}

// reopen calls on-task-end and reports whether a hook reopened the task
// (and its reason); the reopen budget is MaxTaskReopens per task.
func (s *Session) reopen(ctx context.Context, t *door.Task, ev door.Events, status string, reopens *int) (string, bool) {
	outs := s.cfg.Hooks.OnTaskEnd(ctx, wit.TaskEndEvent{TaskID: t.ID, ExitStatus: status})
	s.hookOutputs(ev, outs)
	for _, o := range outs {
		if o.Case == wit.OutputReopenTask && *reopens < s.cfg.MaxTaskReopens {
			*reopens++
			return o.Text, true
		}
	}
	return "", false
}

// hookOutputs acts on what the hooks returned: an artifact output is a
// stream artifact update named after its hook.
func (s *Session) hookOutputs(ev door.Events, outs []hooks.Output) {
	for _, o := range outs {
		if o.Case == wit.OutputArtifact {
			ev.ToolResult("hook:"+o.Hook, o.Hook, o.Text, nil)
		}
	}
}

// inferenceEvent is on-inference's record of one turn.
func inferenceEvent(turn int, inf trace.Inference, resp *driver.Response) wit.InferenceEvent {
	e := wit.InferenceEvent{Turn: uint32(turn), InputTokens: uint64(inf.InputTokens), OutputTokens: uint64(inf.OutputTokens),
		Decision: inf.StopReason}
	if calls := resp.ToolCalls(); len(calls) > 0 {
		name := calls[0].Name
		e.ToolName = &name
	}
	if text := resp.Text(); text != "" {
		e.Output = &text
	}
	return e
}

// HookInference answers a hook's run-inference: one call through the
// capsule's driver with the hook's messages, its tokens counted in the
// session's (so the ceiling holds for hooks too).
func (s *Session) HookInference(ctx context.Context, hook string, req wit.InferenceRequest) (wit.InferenceResponse, error) {
	r := &driver.Request{Model: s.cfg.Model, MaxTokens: int64(s.cfg.MaxTokens), System: s.cfg.System}
	if req.Model != nil && *req.Model != "" {
		r.Model = *req.Model
	}
	if req.SystemPrompt != nil {
		r.System = *req.SystemPrompt
	}
	for _, m := range req.Messages {
		role := driver.RoleUser
		if m.Role == driver.RoleAssistant {
			role = driver.RoleAssistant
		}
		r.Messages = append(r.Messages, driver.Message{Role: role, Content: []driver.Block{driver.TextBlock(m.Content)}})
	}
	if refused, used, requested := s.admit(r); refused {
		return wit.InferenceResponse{}, fmt.Errorf("spend_ceiling_reached: %d used, %d requested, ceiling %d", used, requested, s.cfg.MaxSessionTokens)
	}
	resp, err := s.callDriver(ctx, r, nil)
	if err != nil {
		return wit.InferenceResponse{}, err
	}
	out := wit.InferenceResponse{Text: resp.Text(), ModelUsed: r.Model}
	if resp.Usage != nil {
		out.InputTokens, out.OutputTokens = uint64(resp.Usage.InputTokens), uint64(resp.Usage.OutputTokens)
		s.spend(int(resp.Usage.InputTokens + resp.Usage.OutputTokens))
	}
	return out, nil
}

// admit is the session ceiling's admission check: used + this request's
// input estimate + max_tokens must not pass the ceiling. A refusal latches.
func (s *Session) admit(req *driver.Request) (refused bool, used, requested int) {
	if s.cfg.MaxSessionTokens <= 0 {
		return false, 0, 0
	}
	requested = EstimateTokens(req) + s.cfg.MaxTokens
	s.mu.Lock()
	defer s.mu.Unlock()
	used = s.used
	if s.latched || used+requested > s.cfg.MaxSessionTokens {
		s.latched = true
		return true, used, requested
	}
	return false, used, requested
}

func (s *Session) spend(tokens int) {
	s.mu.Lock()
	s.used += tokens
	s.mu.Unlock()
}

// EstimateTokens is a request's input estimate for the admission check: a
// quarter of the bytes of its JSON, rounded up. It errs high for English,
// which keeps the ceiling a ceiling.
func EstimateTokens(req *driver.Request) int {
	b, err := json.Marshal(req)
	if err != nil {
		return 0
	}
	return (len(b) + 3) / 4
}

// writeResult writes the answer to result.txt atomically: a reader sees the
// previous answer or this one, never a part.
func (s *Session) writeResult(answer string) {
	if s.cfg.ResultPath == "" {
		return
	}
	s.resultMu.Lock()
	defer s.resultMu.Unlock()
	dir := filepath.Dir(s.cfg.ResultPath)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	store.WriteFileAtomic(s.cfg.ResultPath, []byte(answer), 0o600)
}

// failureText is a failed task's status message: the driver's error as a
// person reads it.
func failureText(err error) string {
	var de *driver.Error
	if errors.As(err, &de) {
		return de.Error()
	}
	return err.Error()
}

// taskText is the task's first user message: its text parts, and each data
// part as a fenced JSON block (docs/agent-capsules.md).
func taskText(t *door.Task) string {
	var parts []string
	for _, p := range t.Parts {
		if p.Data != nil {
			parts = append(parts, "```json\n"+string(p.Data)+"\n```")
		} else {
			parts = append(parts, p.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}
