package door

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// handler is the door's a2asrv.RequestHandler: the A2A methods over the
// door's own tasks, under a2a-go's JSON-RPC handler (the wire stays
// a2a-go's). It replaces a2a-go's default request handler, whose task
// update path deep-copies the whole task (a gob round trip) several times
// for every event of every task; here an event makes the task's next
// snapshot from the last one without copying it (fold), and every request
// reads snapshots, which are never changed once made.
//
// It answers as a2a-go's handler did, word for word where a2a-go wrote the
// words (the "failed to …" and "no active execution" errors).
type handler struct{ s *Server }

var _ a2asrv.RequestHandler = (*handler)(nil)

// SendMessage admits the message and answers the task as it is when the
// message's events reach a final state (terminal or INPUT_REQUIRED), or at
// once with returnImmediately: a new task's first snapshot, a reply's task
// as it is WORKING again.
func (h *handler) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	adm, err := h.s.admit(ctx, req)
	if err != nil {
		return nil, err
	}
	immediate := req.Config != nil && req.Config.ReturnImmediately
	switch {
	case adm.first != nil && (immediate || isFinalEvent(adm.first)):
		return adm.first, nil
	case adm.working != nil && immediate:
		return adm.working, nil
	}
	var last *a2a.Task
	for e, err := range h.s.follow(ctx, adm.t, adm.cursor) {
		if err != nil {
			return nil, err
		}
		last = e.task // set on the final entry, where follow ends
	}
	return last, nil
}

// SendStreamingMessage admits the message and streams its events: a new
// task's first snapshot, then every event up to a final one.
func (h *handler) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		adm, err := h.s.admit(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		if adm.first != nil && (!yield(adm.first, nil) || isFinalEvent(adm.first)) {
			return
		}
		h.s.stream(ctx, adm.t, adm.cursor, yield)
	}
}

// SubscribeToTask streams a task that is under way: its snapshot, then its
// events up to a final one. A task in INPUT_REQUIRED or ended has no
// execution to follow (a2a-go's answer: -32001, "no active execution").
func (h *handler) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if req == nil {
			yield(nil, a2a.ErrInvalidParams)
			return
		}
		t := h.s.lookup(string(req.ID))
		if t == nil {
			yield(nil, a2a.NewError(a2a.ErrTaskNotFound, fmt.Sprintf("task %s is not known here", req.ID)))
			return
		}
		h.s.mu.Lock()
		cur, cursor := t.cur, len(t.log)
		var last a2a.Event = cur
		if cursor > 0 {
			last = t.log[cursor-1].ev
		}
		h.s.mu.Unlock()
		if isFinalEvent(last) {
			yield(nil, fmt.Errorf("%w: %w", a2a.ErrTaskNotFound, errNoExecution))
			return
		}
		if !yield(cur, nil) {
			return
		}
		h.s.stream(ctx, t, cursor, yield)
	}
}

var errNoExecution = errors.New("no active execution")

// GetTask answers the task's snapshot, its history cut to historyLength.
func (h *handler) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	if req.ID == "" {
		return nil, fmt.Errorf("missing TaskID: %w", a2a.ErrInvalidParams)
	}
	if h.s.visible(ctx, string(req.ID)) == nil {
		return nil, a2a.NewError(a2a.ErrTaskNotFound, fmt.Sprintf("task %s is not known here", req.ID))
	}
	cur := h.s.store.get(req.ID)
	if cur == nil {
		return nil, fmt.Errorf("failed to get task: %w", a2a.ErrTaskNotFound)
	}
	task := *cur // the snapshot is shared: cut a shallow copy
	if req.HistoryLength != nil {
		switch n := *req.HistoryLength; {
		case n == 0:
			task.History = []*a2a.Message{}
		case n > 0 && n < len(task.History):
			task.History = task.History[len(task.History)-n:]
		}
	}
	return &task, nil
}

// ListTasks lists the kept tasks (memStore.List), after forgetting those
// past the bounds.
func (h *handler) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	h.s.mu.Lock()
	h.s.evictLocked()
	h.s.mu.Unlock()
	res, err := h.s.store.List(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("failed to list tasks: %w", err)
	}
	return res, nil
}

// CancelTask cancels a task that has not ended and answers it CANCELED,
// with its residue.
func (h *handler) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	if req == nil || req.ID == "" {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "CancelTask needs params.id, the task id")
	}
	s := h.s
	t := s.visible(ctx, string(req.ID))
	if t == nil {
		return nil, a2a.NewError(a2a.ErrTaskNotFound, fmt.Sprintf("task %s is not known here", req.ID))
	}
	s.mu.Lock()
	phase, ok := s.cancelLocked(t)
	state, residue, cur := t.state, t.residue, t.cur
	s.mu.Unlock()
	if !ok {
		return nil, a2a.NewError(a2a.ErrTaskNotCancelable, fmt.Sprintf("task %s has already ended (%s)", req.ID, stateWord(state)))
	}
	if rec := s.cfg.Recorder; rec != nil {
		rec.TaskCanceled(t.pub.ID, phase, residue)
	}
	return cur, nil
}

// The door keeps no push configs and sends no push notifications (the card
// says so): a2a-go's answer, -32003.
func (h *handler) GetTaskPushConfig(context.Context, *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

func (h *handler) ListTaskPushConfigs(context.Context, *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

func (h *handler) CreateTaskPushConfig(context.Context, *a2a.PushConfig) (*a2a.PushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

func (h *handler) DeleteTaskPushConfig(context.Context, *a2a.DeleteTaskPushConfigRequest) error {
	return a2a.ErrPushNotificationNotSupported
}

// GetExtendedAgentCard is unsupported: the card declares no extended card.
func (h *handler) GetExtendedAgentCard(context.Context, *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "this door declares no extended agent card (capabilities.extendedAgentCard is false)")
}

// follow yields t's log entries from cursor on, waiting for new ones, up to
// and including the first final event; it ends with ctx's error if ctx
// ends first.
func (s *Server) follow(ctx context.Context, t *task, cursor int) iter.Seq2[logEntry, error] {
	return func(yield func(logEntry, error) bool) {
		for {
			s.mu.Lock()
			entries, wake := t.log[cursor:], t.wake
			cursor = len(t.log)
			s.mu.Unlock()
			for _, e := range entries {
				if !yield(e, nil) || isFinalEvent(e.ev) {
					return
				}
			}
			select {
			case <-wake:
			case <-ctx.Done():
				yield(logEntry{}, ctx.Err())
				return
			}
		}
	}
}

// stream yields the events of follow.
func (s *Server) stream(ctx context.Context, t *task, cursor int, yield func(a2a.Event, error) bool) {
	for e, err := range s.follow(ctx, t, cursor) {
		if err != nil {
			yield(nil, err)
			return
		}
		if !yield(e.ev, nil) {
			return
		}
	}
}

// fold makes the snapshot that follows cur after ev, as a2a-go's task
// update manager did, without copying the task: the new snapshot is a
// shallow copy of cur whose history and artifact list grow by append
// (readers of older snapshots see only their own length, and one writer,
// under Server.mu, appends), and an artifact that changes is replaced by a
// new one in a new list. Nothing reachable from cur is changed.
func fold(cur *a2a.Task, ev a2a.Event) *a2a.Task {
	next := *cur
	switch v := ev.(type) {
	case *a2a.TaskStatusUpdateEvent:
		if cur.Status.Message != nil {
			next.History = append(cur.History, cur.Status.Message)
		}
		next.Metadata = mergeMeta(cur.Metadata, v.Metadata)
		next.Status = v.Status
	case *a2a.TaskArtifactUpdateEvent:
		i := slices.IndexFunc(cur.Artifacts, func(a *a2a.Artifact) bool { return a.ID == v.Artifact.ID })
		switch {
		case i < 0:
			next.Artifacts = append(cur.Artifacts, v.Artifact)
		case !v.Append:
			next.Artifacts = slices.Clone(cur.Artifacts)
			next.Artifacts[i] = v.Artifact
		default:
			a := *cur.Artifacts[i]
			a.Parts = append(a.Parts, v.Artifact.Parts...)
			a.Metadata = mergeMeta(a.Metadata, v.Artifact.Metadata)
			next.Artifacts = slices.Clone(cur.Artifacts)
			next.Artifacts[i] = &a
		}
	case *a2a.Task:
		return v
	}
	return &next
}

// mergeMeta is m with add's keys set, as a new map when add has any.
func mergeMeta(m, add map[string]any) map[string]any {
	if add == nil {
		return m
	}
	out := make(map[string]any, len(m)+len(add))
	maps.Copy(out, m)
	maps.Copy(out, add)
	return out
}
