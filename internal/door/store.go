package door

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// memStore is the door's task store: taskstore.InMemory's contract (a copy
// in on Create/Update, a copy out on Get, versions checked on Update) with a
// typed deep copy of a2a.Task. a2a-go's store copies by a gob round trip
// that recompiles its type descriptors on every call; that was the larger
// part of a SendMessage's CPU.
//
// The door has no authenticated users: every task is the anonymous user's,
// so List (ListTasks) lists every task the door keeps. Delete is the door's
// eviction of ended tasks (Server.evictLocked).
type memStore struct {
	mu    sync.RWMutex
	tasks map[a2a.TaskID]*storedTask
	now   func() time.Time
}

type storedTask struct {
	task    *a2a.Task
	version taskstore.TaskVersion
	updated time.Time // when the store last took this task: ListTasks' order and cursor
}

var _ taskstore.Store = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{tasks: make(map[a2a.TaskID]*storedTask), now: func() time.Time { return time.Now().Round(0) }}
}

// Create stores a copy of task at version 1; taskstore.ErrTaskAlreadyExists
// when its ID is taken.
func (m *memStore) Create(_ context.Context, task *a2a.Task) (taskstore.TaskVersion, error) {
	cp, err := copyTask(task)
	if err != nil {
		return taskstore.TaskVersionMissing, fmt.Errorf("task store: create %s: %w", task.ID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tasks[task.ID] != nil {
		return taskstore.TaskVersionMissing, taskstore.ErrTaskAlreadyExists
	}
	m.tasks[task.ID] = &storedTask{task: cp, version: 1, updated: m.now()}
	return 1, nil
}

// Update replaces the stored task with a copy of req.Task: a2a.ErrTaskNotFound
// when there is none, taskstore.ErrConcurrentModification when
// req.PrevVersion is set and is not the stored version.
func (m *memStore) Update(_ context.Context, req *taskstore.UpdateRequest) (taskstore.TaskVersion, error) {
	cp, err := copyTask(req.Task)
	if err != nil {
		return taskstore.TaskVersionMissing, fmt.Errorf("task store: update %s: %w", req.Task.ID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.tasks[req.Task.ID]
	if st == nil {
		return taskstore.TaskVersionMissing, a2a.ErrTaskNotFound
	}
	if req.PrevVersion != taskstore.TaskVersionMissing && st.version != req.PrevVersion {
		return taskstore.TaskVersionMissing, taskstore.ErrConcurrentModification
	}
	v := st.version + 1
	m.tasks[req.Task.ID] = &storedTask{task: cp, version: v, updated: m.now()}
	return v, nil
}

// Get returns a copy of the stored task and its version, or a2a.ErrTaskNotFound.
func (m *memStore) Get(_ context.Context, id a2a.TaskID) (*taskstore.StoredTask, error) {
	m.mu.RLock()
	st := m.tasks[id]
	m.mu.RUnlock()
	if st == nil {
		return nil, a2a.ErrTaskNotFound
	}
	// Stored tasks are never mutated in place (Update swaps the record), so
	// copying outside the lock is safe.
	cp, err := copyTask(st.task)
	if err != nil {
		return nil, fmt.Errorf("task store: get %s: %w", id, err)
	}
	return &taskstore.StoredTask{Task: cp, Version: st.version}, nil
}

// Delete forgets a task; the door calls it for ended tasks only.
func (m *memStore) Delete(id a2a.TaskID) {
	m.mu.Lock()
	delete(m.tasks, id)
	m.mu.Unlock()
}

// terminal says whether the stored task is in a terminal state, that is
// a2a-go has written its last update.
func (m *memStore) terminal(id a2a.TaskID) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	st := m.tasks[id]
	return st != nil && st.task.Status.State.Terminal()
}

// ListTasks' page sizes (A2A 1.0): 1 to 100, 50 when unset.
const (
	defaultPageSize = 50
	maxPageSize     = 100
)

// List is ListTasks over the kept tasks: filtered by contextId, status and
// statusTimestampAfter (a task whose status timestamp is at or after it),
// newest update first (ties by id, descending), paged by an opaque cursor
// that names the last task of the page. historyLength keeps that many of
// the newest messages (none when 0); artifacts only with includeArtifacts.
// Bad arguments are a2a.ErrInvalidParams (-32602).
func (m *memStore) List(_ context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	if err := checkListRequest(req); err != nil {
		return nil, err
	}
	size := req.PageSize
	if size == 0 {
		size = defaultPageSize
	}
	var after *pageCursor
	if req.PageToken != "" {
		c, err := decodeCursor(req.PageToken)
		if err != nil {
			return nil, err
		}
		after = &c
	}
	m.mu.RLock()
	matched := make([]*storedTask, 0, len(m.tasks))
	for _, st := range m.tasks {
		if listMatches(st, req) {
			matched = append(matched, st)
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(matched, func(a, b *storedTask) int { return cursorOf(b).compare(cursorOf(a)) })
	total := len(matched)
	page := matched
	if after != nil {
		// The first task strictly older than the cursor, in the order above.
		i, _ := slices.BinarySearchFunc(matched, *after, func(st *storedTask, c pageCursor) int {
			return c.compare(cursorOf(st))
		})
		for i < len(matched) && cursorOf(matched[i]).compare(*after) >= 0 {
			i++
		}
		page = matched[i:]
	}
	next := ""
	if len(page) > size {
		page = page[:size]
		next = cursorOf(page[size-1]).encode()
	}
	out := &a2a.ListTasksResponse{Tasks: make([]*a2a.Task, 0, len(page)), TotalSize: total, PageSize: size, NextPageToken: next}
	for _, st := range page {
		// Stored tasks are never mutated in place; trim a shallow copy.
		t := *st.task
		if !req.IncludeArtifacts {
			t.Artifacts = nil
		}
		if req.HistoryLength != nil {
			if n := *req.HistoryLength; n < len(t.History) {
				t.History = t.History[len(t.History)-n:]
			}
		}
		cp, err := copyTask(&t)
		if err != nil {
			return nil, fmt.Errorf("task store: list %s: %w", t.ID, err)
		}
		out.Tasks = append(out.Tasks, cp)
	}
	return out, nil
}

// checkListRequest refuses what ListTasks cannot mean.
func checkListRequest(req *a2a.ListTasksRequest) error {
	switch {
	case req.PageSize < 0 || req.PageSize > maxPageSize:
		return a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("pageSize %d is not between 1 and %d", req.PageSize, maxPageSize))
	case req.HistoryLength != nil && *req.HistoryLength < 0:
		return a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("historyLength %d is negative", *req.HistoryLength))
	case req.Status != a2a.TaskStateUnspecified && !knownState(req.Status):
		return a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("status %q is not a task state", req.Status))
	}
	return nil
}

func knownState(s a2a.TaskState) bool {
	switch s {
	case a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired,
		a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected:
		return true
	}
	return false
}

func listMatches(st *storedTask, req *a2a.ListTasksRequest) bool {
	t := st.task
	if req.ContextID != "" && t.ContextID != req.ContextID {
		return false
	}
	if req.Status != a2a.TaskStateUnspecified && t.Status.State != req.Status {
		return false
	}
	if req.StatusTimestampAfter != nil {
		ts := st.updated
		if t.Status.Timestamp != nil {
			ts = *t.Status.Timestamp
		}
		if ts.Before(*req.StatusTimestampAfter) {
			return false
		}
	}
	return true
}

// pageCursor is a position in ListTasks' order: the last task of a page.
type pageCursor struct {
	updated time.Time
	id      a2a.TaskID
}

func cursorOf(st *storedTask) pageCursor { return pageCursor{st.updated, st.task.ID} }

// compare orders cursors oldest first (by update time, then id).
func (c pageCursor) compare(o pageCursor) int {
	if n := c.updated.Compare(o.updated); n != 0 {
		return n
	}
	return strings.Compare(string(c.id), string(o.id))
}

func (c pageCursor) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.updated.UnixNano(), 10) + "/" + string(c.id)))
}

func decodeCursor(tok string) (pageCursor, error) {
	bad := a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("pageToken %q is not a token this door gave", tok))
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return pageCursor{}, bad
	}
	ns, id, ok := strings.Cut(string(b), "/")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return pageCursor{}, bad
	}
	return pageCursor{time.Unix(0, n), a2a.TaskID(id)}, nil
}

// maxMetaDepth bounds metadata nesting, so a cycle (which a2a-go's store
// rejects too) is an error rather than an endless copy.
const maxMetaDepth = 64

var errMetaDepth = errors.New("metadata nested deeper than 64 levels (a circular reference?)")

// copyTask deeply copies t: nothing reachable from the result is shared with
// t. Metadata and Data parts may hold JSON's values (nil, bool, numbers,
// string, []any, map[string]any) or the door's own delegationList; anything else is an error, as it would be
// on the wire. TestCopyTaskCoversEveryField fails when a2a-go adds a field.
func copyTask(t *a2a.Task) (*a2a.Task, error) {
	if t == nil {
		return nil, nil
	}
	c := *t
	var err error
	if c.Artifacts != nil {
		c.Artifacts = make([]*a2a.Artifact, len(t.Artifacts))
		for i, a := range t.Artifacts {
			if c.Artifacts[i], err = copyArtifact(a); err != nil {
				return nil, err
			}
		}
	}
	if c.History != nil {
		c.History = make([]*a2a.Message, len(t.History))
		for i, msg := range t.History {
			if c.History[i], err = copyMessage(msg); err != nil {
				return nil, err
			}
		}
	}
	if c.Metadata, err = copyMeta(t.Metadata); err != nil {
		return nil, err
	}
	if c.Status.Message, err = copyMessage(t.Status.Message); err != nil {
		return nil, err
	}
	if t.Status.Timestamp != nil {
		ts := *t.Status.Timestamp
		c.Status.Timestamp = &ts
	}
	return &c, nil
}

func copyMessage(m *a2a.Message) (*a2a.Message, error) {
	if m == nil {
		return nil, nil
	}
	c := *m
	c.Extensions = slices.Clone(m.Extensions)
	c.ReferenceTasks = slices.Clone(m.ReferenceTasks)
	var err error
	if c.Metadata, err = copyMeta(m.Metadata); err != nil {
		return nil, err
	}
	if c.Parts, err = copyParts(m.Parts); err != nil {
		return nil, err
	}
	return &c, nil
}

func copyArtifact(a *a2a.Artifact) (*a2a.Artifact, error) {
	if a == nil {
		return nil, nil
	}
	c := *a
	c.Extensions = slices.Clone(a.Extensions)
	var err error
	if c.Metadata, err = copyMeta(a.Metadata); err != nil {
		return nil, err
	}
	if c.Parts, err = copyParts(a.Parts); err != nil {
		return nil, err
	}
	return &c, nil
}

func copyParts(ps a2a.ContentParts) (a2a.ContentParts, error) {
	if ps == nil {
		return nil, nil
	}
	out := make(a2a.ContentParts, len(ps))
	for i, p := range ps {
		if p == nil {
			continue
		}
		c := *p
		var err error
		if c.Metadata, err = copyMeta(p.Metadata); err != nil {
			return nil, err
		}
		switch v := p.Content.(type) {
		case a2a.Raw:
			c.Content = a2a.Raw(slices.Clone([]byte(v)))
		case a2a.Data:
			val, err := copyValue(v.Value, 0)
			if err != nil {
				return nil, err
			}
			c.Content = a2a.Data{Value: val}
		case nil, a2a.Text, a2a.URL:
		default:
			return nil, fmt.Errorf("part content of type %T cannot be copied", v)
		}
		out[i] = &c
	}
	return out, nil
}

func copyMeta(m map[string]any) (map[string]any, error) {
	if m == nil {
		return nil, nil
	}
	v, err := copyValue(m, 0)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

func copyValue(v any, depth int) (any, error) {
	if depth > maxMetaDepth {
		return nil, errMetaDepth
	}
	switch x := v.(type) {
	case nil, bool, string, float64, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64:
		return x, nil
	case time.Time:
		return x, nil
	case map[string]any:
		if x == nil {
			return x, nil
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := copyValue(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		if x == nil {
			return x, nil
		}
		out := make([]any, len(x))
		for i, e := range x {
			c, err := copyValue(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case []string:
		return slices.Clone(x), nil
	case delegationList: // the residue artifact's list
		return slices.Clone(x), nil
	case json.Number:
		return x, nil
	default:
		return nil, fmt.Errorf("value of type %T cannot be copied", v)
	}
}
