package door

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
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

// TestFoldChangesNoSnapshot folds every kind of event onto a task and checks
// the result is what a2a-go's task update manager made of them, while the
// snapshot folded from (and everything reachable from it) is unchanged.
func TestFoldChangesNoSnapshot(t *testing.T) {
	info := a2a.TaskInfo{TaskID: "t", ContextID: "c"}
	text := func(s string) a2a.ContentParts { return a2a.ContentParts{a2a.NewTextPart(s)} }
	cur := fullTask()
	snaps := []*a2a.Task{cur}
	for _, ev := range []a2a.Event{
		&a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking},
			Metadata: map[string]any{"added": true}},
		&a2a.TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Artifact: &a2a.Artifact{ID: "new", Parts: text("1")}},
		&a2a.TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Append: true,
			Artifact: &a2a.Artifact{ID: "new", Parts: text("2"), Metadata: map[string]any{"m": 1.0}}},
		&a2a.TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Append: true, Artifact: &a2a.Artifact{ID: "new", Parts: text("3")}},
		&a2a.TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Artifact: &a2a.Artifact{ID: "a", Parts: text("replaced")}},
		a2a.NewStatusUpdateEvent(info, a2a.TaskStateInputRequired, a2a.NewMessageForTask(a2a.MessageRoleAgent, info, a2a.NewTextPart("q"))),
		a2a.NewStatusUpdateEvent(info, a2a.TaskStateCompleted, nil),
	} {
		cur = fold(cur, ev)
		snaps = append(snaps, cur)
	}
	if !reflect.DeepEqual(snaps[0], fullTask()) {
		t.Fatal("folding changed the first snapshot")
	}
	if got := snaps[3].Artifacts[1]; len(got.Parts) != 2 || got.Parts[1].Text() != "2" || got.Metadata["m"] != 1.0 {
		t.Fatalf("after one append the artifact is %+v", got)
	}
	if got := snaps[2].Artifacts[1]; len(got.Parts) != 1 || got.Metadata != nil {
		t.Fatalf("an append changed the artifact of the snapshot before it: %+v", got)
	}
	end := snaps[len(snaps)-1]
	if end.Status.State != a2a.TaskStateCompleted || end.Status.Message != nil {
		t.Fatalf("final status %+v", end.Status)
	}
	// Each status event moves the status message before it into the history
	// (fullTask's, then the question), as a2a-go does.
	if len(end.History) != 3 || end.History[1].ID != "m" || end.History[2].Parts[0].Text() != "q" {
		t.Fatalf("history %+v", end.History)
	}
	if end.Metadata["added"] != true || end.Metadata["top"] == nil || snaps[0].Metadata["added"] != nil {
		t.Fatalf("metadata %+v (first snapshot %+v)", end.Metadata, snaps[0].Metadata)
	}
	var parts []string
	for _, p := range end.Artifacts[1].Parts {
		parts = append(parts, p.Text())
	}
	if len(end.Artifacts) != 2 || end.Artifacts[0].Parts[0].Text() != "replaced" || fmt.Sprint(parts) != "[1 2 3]" {
		t.Fatalf("artifacts %+v, parts %v", end.Artifacts, parts)
	}
}

func TestMemStoreSnapshots(t *testing.T) {
	s := newMemStore()
	task := fullTask()
	s.put(task)
	if got := s.get("t"); got != task {
		t.Fatalf("get = %p, want the snapshot put (%p)", got, task)
	}
	if s.get("none") != nil {
		t.Fatal("get of an unknown task")
	}
	s.Delete("t")
	if s.get("t") != nil {
		t.Fatal("get after Delete")
	}
}
