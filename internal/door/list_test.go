package door_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// ListTasks (A2A 1.0) over the door's task store, through a2a-go's client:
// every kept task, newest first; the contextId and status filters,
// statusTimestampAfter, historyLength, includeArtifacts; and paging that
// visits each task once.
func TestListTasks(t *testing.T) {
	f := start(t, "queue", "sleep", 4)
	ctx := context.Background()
	var ids []a2a.TaskID // oldest first
	for _, text := range []string{"echo one", "echo two", "fail", "echo four", "echo five"} {
		ids = append(ids, f.send(t, text, false).ID)
	}
	// One more in another context, still running.
	other := userMsg("hold")
	other.ContextID = "ctx_other"
	res, err := f.client.SendMessage(ctx, &a2a.SendMessageRequest{Message: other, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	held := res.(*a2a.Task).ID
	f.waitState(t, held, a2a.TaskStateWorking)
	ids = append(ids, held)

	all, err := f.client.ListTasks(ctx, &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(ids)
	slices.Reverse(want)
	if got := taskIDs(all.Tasks); !slices.Equal(got, want) || all.TotalSize != 6 || all.PageSize != 50 || all.NextPageToken != "" {
		t.Fatalf("ListTasks {}: %v total %d size %d next %q; want %v", got, all.TotalSize, all.PageSize, all.NextPageToken, want)
	}
	for _, task := range all.Tasks {
		if task.Artifacts != nil {
			t.Errorf("%s: artifacts without includeArtifacts", task.ID)
		}
	}

	cases := []struct {
		name string
		req  a2a.ListTasksRequest
		want []a2a.TaskID
	}{
		{"contextId", a2a.ListTasksRequest{ContextID: "ctx_other"}, []a2a.TaskID{held}},
		{"status failed", a2a.ListTasksRequest{Status: a2a.TaskStateFailed}, []a2a.TaskID{ids[2]}},
		{"status working", a2a.ListTasksRequest{Status: a2a.TaskStateWorking}, []a2a.TaskID{held}},
		{"status completed", a2a.ListTasksRequest{Status: a2a.TaskStateCompleted}, []a2a.TaskID{ids[4], ids[3], ids[1], ids[0]}},
		{"statusTimestampAfter in the future", a2a.ListTasksRequest{StatusTimestampAfter: ptr(time.Now().Add(time.Hour))}, []a2a.TaskID{}},
		{"statusTimestampAfter in the past", a2a.ListTasksRequest{StatusTimestampAfter: ptr(time.Now().Add(-time.Hour)), PageSize: 2}, []a2a.TaskID{ids[5], ids[4]}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := f.client.ListTasks(ctx, &c.req)
			if err != nil {
				t.Fatal(err)
			}
			if ids := taskIDs(got.Tasks); !slices.Equal(ids, c.want) {
				t.Errorf("got %v, want %v", ids, c.want)
			}
		})
	}

	// includeArtifacts and historyLength.
	withArt, err := f.client.ListTasks(ctx, &a2a.ListTasksRequest{Status: a2a.TaskStateCompleted, IncludeArtifacts: true, HistoryLength: ptr(0)})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range withArt.Tasks {
		if artifact(task, "response") == nil || len(task.History) != 0 {
			t.Errorf("%s: artifacts %d, history %d; want the response artifact and no history", task.ID, len(task.Artifacts), len(task.History))
		}
	}
	full, err := f.client.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: all.Tasks[1].ContextID})
	if err != nil || len(full.Tasks) != 1 || len(full.Tasks[0].History) == 0 {
		t.Fatalf("history kept by default: %+v %v", full, err)
	}

	// Paging by 4 visits every task once, in order, and ends with no token.
	var paged []a2a.TaskID
	token := ""
	for range 5 {
		page, err := f.client.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 4, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if page.TotalSize != 6 || page.PageSize != 4 {
			t.Errorf("page total %d size %d", page.TotalSize, page.PageSize)
		}
		paged = append(paged, taskIDs(page.Tasks)...)
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if !slices.Equal(paged, want) {
		t.Errorf("paged %v, want %v", paged, want)
	}
	close(f.runner.release)
}

func taskIDs(ts []*a2a.Task) []a2a.TaskID {
	out := []a2a.TaskID{}
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

func ptr[T any](v T) *T { return &v }
