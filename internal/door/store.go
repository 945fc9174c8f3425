package door

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// memStore is where the door publishes its tasks' snapshots (task.cur) for
// GetTask and ListTasks. A snapshot is never changed once put, so the store
// keeps it as it is and hands it out as it is: readers that trim one (a
// history cut) cut a shallow copy.
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
	updated time.Time // when the store last took this task: ListTasks' order and cursor
}

func newMemStore() *memStore {
	return &memStore{tasks: make(map[a2a.TaskID]*storedTask), now: func() time.Time { return time.Now().Round(0) }}
}

// put publishes t as its task's snapshot; the caller never changes t after.
func (m *memStore) put(t *a2a.Task) {
	st := &storedTask{task: t, updated: m.now()}
	m.mu.Lock()
	m.tasks[t.ID] = st
	m.mu.Unlock()
}

// get is the task's snapshot (nil when there is none); not to be changed.
func (m *memStore) get(id a2a.TaskID) *a2a.Task {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if st := m.tasks[id]; st != nil {
		return st.task
	}
	return nil
}

// Delete forgets a task; the door calls it for ended tasks only.
func (m *memStore) Delete(id a2a.TaskID) {
	m.mu.Lock()
	delete(m.tasks, id)
	m.mu.Unlock()
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
		// Snapshots are never changed; trim a shallow copy.
		t := *st.task
		if !req.IncludeArtifacts {
			t.Artifacts = nil
		}
		if req.HistoryLength != nil {
			if n := *req.HistoryLength; n < len(t.History) {
				t.History = t.History[len(t.History)-n:]
			}
		}
		out.Tasks = append(out.Tasks, &t)
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
