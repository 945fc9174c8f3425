package door

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
// The door has no authenticated users (every task is the anonymous user's)
// and serves no ListTasks, so List answers a2a.ErrUnauthenticated as
// InMemory does without an Authenticator.
type memStore struct {
	mu    sync.RWMutex
	tasks map[a2a.TaskID]*storedTask
}

type storedTask struct {
	task    *a2a.Task
	version taskstore.TaskVersion
}

var _ taskstore.Store = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{tasks: make(map[a2a.TaskID]*storedTask)}
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
	m.tasks[task.ID] = &storedTask{task: cp, version: 1}
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
	m.tasks[req.Task.ID] = &storedTask{task: cp, version: v}
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

// List answers a2a.ErrUnauthenticated: see memStore.
func (m *memStore) List(context.Context, *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	return nil, a2a.ErrUnauthenticated
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
