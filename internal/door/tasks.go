package door

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/murmur-go/murmur/internal/ids"
)

// Artifact ids (and names) the door writes.
const (
	ArtifactResponse = "response"
	ArtifactResidue  = "residue"
)

// The rejection status messages lifecycle.task_acceptance gives (the
// words docs/door.md quotes), and the door's own for a
// session that is already winding down.
const (
	rejectBusy      = "task rejected: capsule is busy"
	rejectQueueFull = "task rejected: the queue is full (lifecycle.queue_depth %d)"
	rejectEnding    = "task rejected: the session is ending"
)

// task is the door's side of one task. Every field is guarded by Server.mu.
type task struct {
	pub  *Task
	info a2a.TaskInfo

	state    a2a.TaskState
	rejected string // the status message of a rejected task
	phase    Phase
	dels     []string // delegations in flight, as the runner last reported
	calls    []string // member calls outstanding, as the runner last reported
	residue  Residue  // what the cancel's residue names
	// caller is the formation member whose token submitted the task ("" for
	// none): such a member reaches only its own tasks.
	caller string

	// cur is the task as A2A shows it (GetTask, ListTasks, a blocking
	// SendMessage's answer): a snapshot that is never changed once made;
	// each event makes the next one from it without copying the task
	// (fold). store is where each snapshot is published.
	cur   *a2a.Task
	store *memStore
	// log holds every event after the first snapshot, in order, a final one
	// with the snapshot it made (a blocking SendMessage's answer); a request
	// follows it from a cursor. wake is closed (and replaced) on each append
	// so a waiting request looks again.
	log  []logEntry
	wake chan struct{}

	final   bool // terminal: no more events are taken
	started bool
	cancel  context.CancelFunc

	inputCh   chan Reply    // non-nil while INPUT_REQUIRED
	ask       chan struct{} // held by the one question asked at a time
	prevPhase Phase

	streamed bool // the response artifact exists (a chunk was sent)

	bytes   int64     // message, reply and answer bytes, for Config.MaxKeptBytes
	endedAt time.Time // when it became final
}

// logEntry is one event of a task and, when the event is final
// (isFinalEvent), the snapshot it made; nil otherwise, so a long stream
// keeps no snapshot per chunk.
type logEntry struct {
	ev   a2a.Event
	task *a2a.Task
}

// appendLocked folds ev into the task's snapshot, publishes the result and
// logs the event.
func (t *task) appendLocked(ev a2a.Event) {
	t.setLocked(fold(t.cur, ev))
	e := logEntry{ev: ev}
	if isFinalEvent(ev) {
		e.task = t.cur
	}
	t.log = append(t.log, e)
	close(t.wake)
	t.wake = make(chan struct{})
}

// setLocked makes cur the task's snapshot and publishes it.
func (t *task) setLocked(cur *a2a.Task) {
	t.cur = cur
	t.store.put(cur)
}

func (t *task) statusLocked(state a2a.TaskState, text string) {
	t.statusPartsLocked(state, text, nil)
}

// statusPartsLocked is statusLocked with a data part after the text (nil:
// none).
func (t *task) statusPartsLocked(state a2a.TaskState, text string, data any) {
	t.state = state
	var msg *a2a.Message
	switch {
	case data != nil:
		msg = a2a.NewMessageForTask(a2a.MessageRoleAgent, t.info, a2a.NewTextPart(text), a2a.NewDataPart(data))
	case text != "":
		msg = a2a.NewMessageForTask(a2a.MessageRoleAgent, t.info, a2a.NewTextPart(text))
	}
	t.appendLocked(a2a.NewStatusUpdateEvent(t.info, state, msg))
}

// delegationList is the residue's list of delegation ids; an empty (or
// nil) list is "[]" on the wire, never null.
type delegationList []string

func (d delegationList) MarshalJSON() ([]byte, error) {
	if d == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]string(d))
}

func (t *task) residueEvent() *a2a.TaskArtifactUpdateEvent {
	data := map[string]any{"delegations": delegationList(t.residue.Delegations),
		"member_calls": delegationList(t.residue.MemberCalls)}
	return &a2a.TaskArtifactUpdateEvent{
		TaskID: t.info.TaskID, ContextID: t.info.ContextID, LastChunk: true,
		Artifact: &a2a.Artifact{ID: ArtifactResidue, Name: ArtifactResidue,
			Parts: a2a.ContentParts{a2a.NewDataPart(data)}},
	}
}

// residueLocked snapshots what the task has in flight for its cancel.
func (t *task) residueLocked() Residue {
	return Residue{Delegations: slices.Clone(t.dels), MemberCalls: slices.Clone(t.calls)}
}

func isFinalEvent(ev a2a.Event) bool {
	var st a2a.TaskState
	switch v := ev.(type) {
	case *a2a.TaskStatusUpdateEvent:
		st = v.Status.State
	case *a2a.Task:
		st = v.Status.State
	default:
		return false
	}
	return st.Terminal() || st == a2a.TaskStateInputRequired
}

func (s *Server) lookup(id string) *task {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tasks[id]
}

// visible is lookup for the request's caller: a formation member reaches
// only the tasks submitted under a token with its own name (nil otherwise).
func (s *Server) visible(ctx context.Context, id string) *task {
	t := s.lookup(id)
	if c := callerFrom(ctx); c != "" && (t == nil || t.caller != c) {
		return nil
	}
	return t
}

// stateWord is the lower-case word of a state (completed, …).
func stateWord(st a2a.TaskState) string {
	return strings.ToLower(strings.TrimPrefix(string(st), "TASK_STATE_"))
}

func convertParts(in a2a.ContentParts) ([]Part, int, error) {
	if len(in) == 0 {
		return nil, 0, a2a.NewError(a2a.ErrInvalidParams, "message.parts is empty")
	}
	out := make([]Part, 0, len(in))
	n := 0
	for i, p := range in {
		if p == nil {
			return nil, 0, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("message.parts[%d] is null", i))
		}
		switch c := p.Content.(type) {
		case a2a.Text:
			out = append(out, Part{Text: string(c)})
			n += len(c)
		case a2a.Data:
			b, err := json.Marshal(c.Value)
			if err != nil {
				return nil, 0, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("message.parts[%d].data: %v", i, err))
			}
			out = append(out, Part{Data: b})
			n += len(b)
		default:
			return nil, 0, a2a.NewError(a2a.ErrUnsupportedContentType,
				fmt.Sprintf("message.parts[%d] is a file part; this door takes text and data parts only", i))
		}
	}
	return out, n, nil
}

func originFrom(ctx context.Context) Origin {
	if o, ok := ctx.Value(keyOrigin).(Origin); ok {
		return o
	}
	return OriginUser
}

// callerFrom is the formation member whose token admitted the request ("" for none).
func callerFrom(ctx context.Context) string {
	c, _ := ctx.Value(keyCaller).(string)
	return c
}

func sourceFrom(ctx context.Context) Source {
	if s, ok := ctx.Value(keySource).(Source); ok {
		return s
	}
	return SourceA2A
}

// admission is what admit made of a message: the task it touched, the
// task's first snapshot when the message made a new task (nil for a
// reply), a reply's snapshot once it made the task WORKING again (nil for a
// new task), and the cursor in the task's log from which the message's
// events follow.
type admission struct {
	t       *task
	first   *a2a.Task
	working *a2a.Task
	cursor  int
}

// admit decides what a message is: a new task (admitted, queued or
// rejected), or the reply to an INPUT_REQUIRED task, which it delivers.
func (s *Server) admit(ctx context.Context, req *a2a.SendMessageRequest) (admission, error) {
	if req == nil || req.Message == nil {
		return admission{}, a2a.NewError(a2a.ErrInvalidParams, "params.message is required")
	}
	msg := req.Message
	if msg.ID == "" {
		return admission{}, a2a.NewError(a2a.ErrInvalidParams, "message.messageId is required")
	}
	if msg.Role == "" {
		return admission{}, a2a.NewError(a2a.ErrInvalidParams, "message.role is required")
	}
	parts, nbytes, err := convertParts(msg.Parts)
	if err != nil {
		return admission{}, err
	}
	origin := originFrom(ctx)
	if msg.TaskID != "" {
		if s.visible(ctx, string(msg.TaskID)) == nil {
			return admission{}, a2a.NewError(a2a.ErrTaskNotFound, fmt.Sprintf("task %s is not known here", msg.TaskID))
		}
		return s.admitReply(msg, parts, origin)
	}
	source := sourceFrom(ctx)
	if s.cfg.TaskAcceptance == AcceptNone && source != SourceTaskMD {
		return admission{}, a2a.NewError(a2a.ErrUnsupportedOperation, "this capsule accepts no tasks at its door (lifecycle.task_acceptance: none)")
	}
	tid := ids.New(ids.Task)
	cid := msg.ContextID
	if cid == "" {
		cid = ids.New(ids.Context)
	}
	tp, _ := ctx.Value(keyTraceParent).(string)
	t := &task{
		pub: &Task{ID: tid, ContextID: cid, MessageID: msg.ID, Origin: origin, Source: source,
			Parts: parts, TraceParent: tp, MessageBytes: nbytes, Caller: callerFrom(ctx)},
		info:   a2a.TaskInfo{TaskID: a2a.TaskID(tid), ContextID: cid},
		state:  a2a.TaskStateSubmitted,
		phase:  PhaseQueued,
		store:  s.store,
		wake:   make(chan struct{}),
		ask:    make(chan struct{}, 1),
		caller: callerFrom(ctx),
	}
	msg.TaskID, msg.ContextID = t.info.TaskID, cid
	// The first snapshot: SUBMITTED (or REJECTED with its reason), the
	// message its history.
	now := time.Now()
	first := &a2a.Task{ID: t.info.TaskID, ContextID: cid, History: []*a2a.Message{msg},
		Status: a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: &now}}

	s.mu.Lock()
	switch {
	case s.closing || s.reason != "":
		t.rejected = rejectEnding
	case s.running == nil:
		s.running = t
	case s.cfg.TaskAcceptance == AcceptQueue && len(s.queue) < s.cfg.QueueDepth:
		s.queue = append(s.queue, t)
	case s.cfg.TaskAcceptance == AcceptQueue:
		t.rejected = fmt.Sprintf(rejectQueueFull, s.cfg.QueueDepth)
	default:
		t.rejected = rejectBusy
	}
	t.bytes = int64(nbytes)
	s.tasks[tid] = t
	if t.rejected != "" {
		first.Status.State = a2a.TaskStateRejected
		first.Status.Message = a2a.NewMessageForTask(a2a.MessageRoleAgent, t.info, a2a.NewTextPart(t.rejected))
		t.state, t.final = a2a.TaskStateRejected, true
		s.endedLocked(t)
	} else {
		s.accepted++
	}
	t.setLocked(first)
	s.evictLocked()
	if s.running == t {
		s.startLocked(t)
	}
	s.mu.Unlock()

	if rec := s.cfg.Recorder; rec != nil {
		if t.rejected != "" {
			rec.TaskRejected(tid, t.rejected)
		} else if source == SourceA2A {
			if cr, ok := rec.(CallerRecorder); ok && callerFrom(ctx) != "" {
				cr.TaskReceivedFrom(tid, cid, msg.ID, origin, callerFrom(ctx))
			} else {
				rec.TaskReceived(tid, cid, msg.ID, origin)
			}
		}
	}
	return admission{t: t, first: first}, nil
}

// errContextMismatch is the answer (as a2a-go's handler worded it) to a
// reply whose contextId is not its task's.
var errContextMismatch = fmt.Errorf("executor setup failed: failed to load exec ctx: message contextID different from task contextID: %w", a2a.ErrInvalidParams)

func (s *Server) admitReply(msg *a2a.Message, parts []Part, origin Origin) (admission, error) {
	t := s.lookup(string(msg.TaskID))
	if t == nil {
		return admission{}, a2a.NewError(a2a.ErrTaskNotFound, fmt.Sprintf("task %s is not known here", msg.TaskID))
	}
	s.mu.Lock()
	switch {
	case t.final:
		s.mu.Unlock()
		return admission{}, a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf("task %s has ended (%s); it takes no more messages", msg.TaskID, stateWord(t.state)))
	case t.inputCh == nil:
		s.mu.Unlock()
		return admission{}, a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf("task %s is not waiting for input", msg.TaskID))
	case msg.ContextID != "" && msg.ContextID != t.info.ContextID:
		s.mu.Unlock()
		return admission{}, errContextMismatch
	}
	msg.ContextID = t.info.ContextID
	for _, p := range parts {
		t.bytes += int64(len(p.Text) + len(p.Data))
	}
	cursor := len(t.log)
	s.deliverLocked(t, Reply{MessageID: msg.ID, Parts: parts}, msg)
	working := t.cur
	s.mu.Unlock()
	if rec := s.cfg.Recorder; rec != nil {
		rec.TaskReceived(string(msg.TaskID), t.info.ContextID, msg.ID, origin)
	}
	return admission{t: t, working: working, cursor: cursor}, nil
}

// deliverLocked hands r to t's runner, which waits in INPUT_REQUIRED: msg
// joins the history (unless a message of its id is there already) and the
// task is WORKING again.
func (s *Server) deliverLocked(t *task, r Reply, msg *a2a.Message) {
	t.inputCh <- r
	t.inputCh, t.phase = nil, t.prevPhase
	if !slices.ContainsFunc(t.cur.History, func(m *a2a.Message) bool { return m.ID == msg.ID }) {
		next := *t.cur
		next.History = append(t.cur.History, msg)
		t.setLocked(&next)
	}
	t.statusLocked(a2a.TaskStateWorking, "")
}

// startLocked starts t's runner.
func (s *Server) startLocked(t *task) {
	ctx, cancel := context.WithCancel(s.baseCtx)
	t.cancel, t.started, t.phase = cancel, true, PhaseInference
	t.statusLocked(a2a.TaskStateWorking, "")
	s.runners.Add(1)
	go s.run(ctx, t)
}

func (s *Server) run(ctx context.Context, t *task) {
	defer s.runners.Done()
	defer t.cancel()
	out := s.runSafely(ctx, t)
	s.finish(t, out)
}

func (s *Server) runSafely(ctx context.Context, t *task) (out Outcome) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("door: runner panicked", "task_id", t.pub.ID, "panic", r)
			out = Failed(fmt.Sprintf("the runner panicked: %v", r))
		}
	}()
	return s.cfg.Runner.RunTask(ctx, t.pub, &events{s: s, t: t})
}

// finish records a runner's outcome (unless a cancel already ended the
// task), starts the next queued task and checks whether the session ends.
func (s *Server) finish(t *task, out Outcome) {
	var canceledPhase Phase
	s.mu.Lock()
	if !t.final {
		t.final = true
		t.bytes += int64(len(out.text))
		s.endedLocked(t)
		switch out.kind {
		case outcomeAnswer:
			t.appendLocked(&a2a.TaskArtifactUpdateEvent{
				TaskID: t.info.TaskID, ContextID: t.info.ContextID, LastChunk: true,
				Artifact: &a2a.Artifact{ID: ArtifactResponse, Name: ArtifactResponse,
					Parts: a2a.ContentParts{a2a.NewTextPart(out.text)}},
			})
			t.statusLocked(a2a.TaskStateCompleted, out.text)
		case outcomeFailed:
			t.statusLocked(a2a.TaskStateFailed, out.text)
		default:
			canceledPhase = t.phase
			t.residue = t.residueLocked()
			t.appendLocked(t.residueEvent())
			t.statusLocked(a2a.TaskStateCanceled, "")
		}
	}
	if s.running == t {
		s.running = nil
		if len(s.queue) > 0 && !s.closing {
			next := s.queue[0]
			s.queue = s.queue[1:]
			s.running = next
			s.startLocked(next)
		}
	}
	s.checkEndLocked()
	s.evictLocked()
	residue := t.residue
	s.mu.Unlock()
	if canceledPhase != "" && s.cfg.Recorder != nil {
		s.cfg.Recorder.TaskCanceled(t.pub.ID, canceledPhase, residue)
	}
}

func (s *Server) checkEndLocked() {
	if s.cfg.AfterTask == AfterExit && s.accepted > 0 && s.running == nil && len(s.queue) == 0 {
		s.endLocked(EndAfterTask)
	}
}

func (s *Server) end(r EndReason) {
	s.mu.Lock()
	s.endLocked(r)
	s.mu.Unlock()
}

func (s *Server) endLocked(r EndReason) {
	if s.reason == "" {
		s.reason = r
		close(s.done)
	}
}

// endedLocked notes that t has just become final.
func (s *Server) endedLocked(t *task) {
	t.endedAt = s.now()
	s.ended = append(s.ended, t)
	s.endBytes += t.bytes
}

// evictLocked forgets the oldest ended tasks while more than MaxEndedTasks
// are kept, their bytes are over MaxKeptBytes, or they ended EndedTaskTTL
// ago. It runs when a task is admitted or ends and on ListTasks, so an idle
// door's last tasks age out when it is next asked. A task's terminal
// snapshot is made under the same lock as it becomes final, so no request
// finds an ended task half written.
func (s *Server) evictLocked() {
	now := s.now()
	for len(s.ended) > 0 {
		t := s.ended[0]
		over := len(s.ended) > s.cfg.MaxEndedTasks || s.endBytes > s.cfg.MaxKeptBytes ||
			now.Sub(t.endedAt) >= s.cfg.EndedTaskTTL
		if !over {
			return
		}
		s.ended = s.ended[1:]
		s.endBytes -= t.bytes
		delete(s.tasks, t.pub.ID)
		s.store.Delete(t.info.TaskID)
	}
}

// cancelLocked ends t as cancelled, if it has not ended: it takes the phase
// and the delegations in flight first, stops the runner, and logs the
// residue and the CANCELED status.
func (s *Server) cancelLocked(t *task) (Phase, bool) {
	if t.final {
		return "", false
	}
	phase := t.phase
	if !t.started {
		phase = PhaseQueued
		if i := slices.Index(s.queue, t); i >= 0 {
			s.queue = slices.Delete(s.queue, i, i+1)
		}
	}
	t.final, t.state = true, a2a.TaskStateCanceled
	s.endedLocked(t)
	t.residue = t.residueLocked()
	if t.cancel != nil {
		t.cancel()
	}
	t.appendLocked(t.residueEvent())
	t.statusLocked(a2a.TaskStateCanceled, "")
	return phase, true
}

// events is the Events a runner gets.
type events struct {
	s *Server
	t *task
}

func (e *events) AppendText(chunk string) {
	if chunk == "" {
		return
	}
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	t := e.t
	if t.final {
		return
	}
	t.bytes += int64(len(chunk))
	t.appendLocked(&a2a.TaskArtifactUpdateEvent{
		TaskID: t.info.TaskID, ContextID: t.info.ContextID, Append: t.streamed,
		Artifact: &a2a.Artifact{ID: ArtifactResponse, Name: ArtifactResponse,
			Parts: a2a.ContentParts{a2a.NewTextPart(chunk)}},
	})
	t.streamed = true
}

func (e *events) ToolResult(toolCallID, tool, text string, data json.RawMessage) {
	part := a2a.NewTextPart(text)
	if data != nil {
		var v any
		if err := json.Unmarshal(data, &v); err == nil {
			part = a2a.NewDataPart(v)
		}
	}
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	t := e.t
	if t.final {
		return
	}
	t.bytes += int64(len(text) + len(data))
	t.appendLocked(&a2a.TaskArtifactUpdateEvent{
		TaskID: t.info.TaskID, ContextID: t.info.ContextID, LastChunk: true,
		Artifact: &a2a.Artifact{ID: a2a.ArtifactID("tool-" + toolCallID), Name: tool,
			Parts: a2a.ContentParts{part}},
	})
}

func (e *events) Status(text string) {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	if !e.t.final {
		e.t.statusLocked(a2a.TaskStateWorking, text)
	}
}

func (e *events) Phase(p Phase) {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	e.t.phase = p
}

func (e *events) Delegations(ids []string) {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	e.t.dels = slices.Clone(ids)
}

func (e *events) MemberCalls(ids []string) {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	e.t.calls = slices.Clone(ids)
}

func (e *events) RequestInput(ctx context.Context, prompt string) (Reply, error) {
	return e.RequestInputData(ctx, prompt, nil)
}

// RequestInputData is RequestInput whose status message carries data as a
// data part after the prompt (an operator's approval request). A task asks
// one question at a time: a second waits for the first to be answered, in
// the order asked; the wait is ended by ctx like the question's.
func (e *events) RequestInputData(ctx context.Context, prompt string, data any) (Reply, error) {
	select {
	case e.t.ask <- struct{}{}:
	case <-ctx.Done():
		return Reply{}, ctx.Err()
	}
	defer func() { <-e.t.ask }()
	e.s.mu.Lock()
	t := e.t
	if t.final {
		e.s.mu.Unlock()
		return Reply{}, fmt.Errorf("task %s has ended", t.pub.ID)
	}
	ch := make(chan Reply, 1)
	t.inputCh, t.prevPhase, t.phase = ch, t.phase, PhaseInput
	t.statusPartsLocked(a2a.TaskStateInputRequired, prompt, data)
	e.s.mu.Unlock()
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
	}
	// A wait that ran out (lifecycle.input_timeout_secs) leaves a task that
	// goes on: it takes no reply any more and is WORKING again. The door
	// answers the task itself, as a reply would (its message joins the
	// history), while still holding t.ask, so no other question can take
	// the answer meant for this one. The message is the door's, not an
	// operator's: no a2a_task_received.
	e.s.mu.Lock()
	if t.inputCh == ch && !t.final {
		msg := a2a.NewMessageForTask(a2a.MessageRoleUser, t.info, a2a.NewTextPart("(no reply in time: the wait ran out)"))
		e.s.deliverLocked(t, Reply{}, msg)
	}
	e.s.mu.Unlock()
	return Reply{}, ctx.Err()
}

// SubmitTask starts the session's first task from --task (source task_md,
// origin user) without HTTP, as a SendMessage with returnImmediately, and
// returns its id. Under task_acceptance none it is the only way in.
func (s *Server) SubmitTask(ctx context.Context, text string) (string, error) {
	ctx = context.WithValue(ctx, keySource, SourceTaskMD)
	ctx = context.WithValue(ctx, keyOrigin, OriginUser)
	req := &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)),
		Config:  &a2a.SendMessageConfig{ReturnImmediately: true},
	}
	res, err := s.h.SendMessage(ctx, req)
	if err != nil {
		return "", fmt.Errorf("door: submitting the --task task: %w", err)
	}
	t, ok := res.(*a2a.Task)
	if !ok {
		return "", fmt.Errorf("door: submitting the --task task: the door answered %T, not a task", res)
	}
	if t.Status.State == a2a.TaskStateRejected {
		return string(t.ID), fmt.Errorf("door: the --task task was rejected")
	}
	return string(t.ID), nil
}

// Wait waits for every runner to return (after WindDown has cancelled them,
// that is promptly), or for ctx to end. The session writes session_end only
// after it, so every task_end line comes first.
func (s *Server) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.runners.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WindDown cancels every queued and live task (queued ones first, so none
// starts in between), refuses new ones, and returns the cancelled task ids
// and the delegations their residues name. It does not close Done.
func (s *Server) WindDown(ctx context.Context) StopResult {
	s.mu.Lock()
	s.closing = true
	var live []*task
	live = append(live, s.queue...)
	if s.running != nil && !s.running.final {
		live = append(live, s.running)
	}
	s.mu.Unlock()
	res := StopResult{SessionID: s.cfg.SessionID, Canceled: []string{}, Terminated: []string{}}
	for _, t := range live {
		if _, err := s.h.CancelTask(context.WithoutCancel(ctx), &a2a.CancelTaskRequest{ID: t.info.TaskID}); err != nil {
			s.log.Warn("door: wind-down cancel", "task_id", t.pub.ID, "error", err)
			continue
		}
		res.Canceled = append(res.Canceled, t.pub.ID)
		s.mu.Lock()
		res.Terminated = append(res.Terminated, t.residue.Delegations...)
		s.mu.Unlock()
	}
	return res
}
