package door

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

func fullMessage() *a2a.Message {
	return &a2a.Message{ID: "m", ContextID: "c", TaskID: "t", Role: a2a.MessageRoleUser,
		Extensions: []string{"x"}, ReferenceTasks: []a2a.TaskID{"r"},
		Metadata: map[string]any{"k": []any{1.0, map[string]any{"n": "v"}}},
		Parts: a2a.ContentParts{
			{Content: a2a.Text("hi"), Filename: "f", MediaType: "text/plain", Metadata: map[string]any{"p": true}},
			{Content: a2a.Raw([]byte("raw"))},
			{Content: a2a.URL("https://example.com")},
			{Content: a2a.Data{Value: map[string]any{"delegations": delegationList{"d1"}}}},
		}}
}

func fullTask() *a2a.Task {
	ts := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	return &a2a.Task{ID: "t", ContextID: "c",
		Status:    a2a.TaskStatus{State: a2a.TaskStateWorking, Message: fullMessage(), Timestamp: &ts},
		History:   []*a2a.Message{fullMessage()},
		Artifacts: []*a2a.Artifact{{ID: "a", Name: "n", Description: "d", Extensions: []string{"e"}, Metadata: map[string]any{"a": 1.0}, Parts: fullMessage().Parts}},
		Metadata:  map[string]any{"top": map[string]any{"deep": []any{"s"}}},
	}
}

// TestCopyTaskCoversEveryField fails when a2a-go adds a field copyTask does
// not know of, and checks the copy is equal and shares nothing mutable.
func TestCopyTaskCoversEveryField(t *testing.T) {
	for _, f := range []struct {
		typ reflect.Type
		n   int
	}{
		{reflect.TypeFor[a2a.Task](), 6}, {reflect.TypeFor[a2a.TaskStatus](), 3},
		{reflect.TypeFor[a2a.Message](), 8}, {reflect.TypeFor[a2a.Artifact](), 6},
		{reflect.TypeFor[a2a.Part](), 4},
	} {
		if got := f.typ.NumField(); got != f.n {
			t.Errorf("%v has %d fields, copyTask knows %d: teach it the new ones", f.typ, got, f.n)
		}
	}
	orig := fullTask()
	cp, err := copyTask(orig)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(orig, cp) {
		t.Fatalf("copy differs:\n%+v\n%+v", orig, cp)
	}
	// Mutate every mutable thing in the copy; the original must not change.
	*cp.Status.Timestamp = time.Time{}
	cp.Status.Message.Extensions[0] = "changed"
	cp.Status.Message.Parts[1].Content.(a2a.Raw)[0] = 'X'
	cp.History[0].ReferenceTasks[0] = "changed"
	cp.History[0].Metadata["k"].([]any)[1].(map[string]any)["n"] = "changed"
	cp.History[0].Parts[0].Metadata["p"] = false
	cp.History[0].Parts[3].Content.(a2a.Data).Value.(map[string]any)["delegations"].(delegationList)[0] = "changed"
	cp.Artifacts[0].Extensions[0] = "changed"
	cp.Artifacts[0].Metadata["a"] = 2.0
	cp.Metadata["top"].(map[string]any)["deep"].([]any)[0] = "changed"
	if !reflect.DeepEqual(orig, fullTask()) {
		t.Fatal("mutating the copy changed the original")
	}
}

func TestCopyTaskRejects(t *testing.T) {
	cyc := map[string]any{}
	cyc["self"] = cyc
	for name, task := range map[string]*a2a.Task{
		"cycle":      {ID: "t", Metadata: cyc},
		"foreign":    {ID: "t", Metadata: map[string]any{"ch": make(chan int)}},
		"data value": {ID: "t", History: []*a2a.Message{{Parts: a2a.ContentParts{a2a.NewDataPart(struct{ X int }{1})}}}},
	} {
		if _, err := copyTask(task); err == nil {
			t.Errorf("%s: copied, want an error", name)
		}
	}
}

func TestMemStoreVersions(t *testing.T) {
	ctx := context.Background()
	s := newMemStore()
	task := fullTask()
	v, err := s.Create(ctx, task)
	if err != nil || v != 1 {
		t.Fatalf("Create = %d, %v", v, err)
	}
	if _, err := s.Create(ctx, task); !errors.Is(err, taskstore.ErrTaskAlreadyExists) {
		t.Fatalf("second Create: %v", err)
	}
	task.Status.State = a2a.TaskStateCompleted // the store holds its own copy
	got, err := s.Get(ctx, "t")
	if err != nil || got.Task.Status.State != a2a.TaskStateWorking || got.Version != 1 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if v, err = s.Update(ctx, &taskstore.UpdateRequest{Task: task, PrevVersion: 1}); err != nil || v != 2 {
		t.Fatalf("Update = %d, %v", v, err)
	}
	if _, err = s.Update(ctx, &taskstore.UpdateRequest{Task: task, PrevVersion: 1}); !errors.Is(err, taskstore.ErrConcurrentModification) {
		t.Fatalf("stale Update: %v", err)
	}
	if _, err = s.Update(ctx, &taskstore.UpdateRequest{Task: &a2a.Task{ID: "none"}}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("Update of none: %v", err)
	}
	if _, err = s.Get(ctx, "none"); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("Get of none: %v", err)
	}
	got.Task.History[0].Metadata["k"] = "mutated" // a Get's result is the caller's
	again, _ := s.Get(ctx, "t")
	if again.Task.Status.State != a2a.TaskStateCompleted || !reflect.DeepEqual(again.Task.History, fullTask().History) {
		t.Fatalf("stored task changed: %+v", again.Task)
	}
}
