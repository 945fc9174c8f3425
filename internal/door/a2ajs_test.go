package door_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// TestA2AJSClient drives the door with @a2a-js/sdk 1.3.0 (card, blocking
// and non-blocking send, get, cancel, stream, list) and checks the client's view of
// each task against the door's own.
func TestA2AJSClient(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "node_modules", "@a2a-js", "sdk", "package.json")); err != nil {
		t.Skip("node_modules/@a2a-js/sdk is absent: run `npm ci` in the repository root")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	f := start(t, "queue", "sleep", 4)
	script, _ := filepath.Abs("testdata/a2a-js-client.mjs")
	cmd := exec.Command(node, script, f.url)
	cmd.Dir = root
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	type artifactView struct {
		ID    string           `json:"id"`
		Name  string           `json:"name"`
		Parts []map[string]any `json:"parts"`
	}
	type taskView struct {
		ID, ContextID, State, Status string
		Artifacts                    []artifactView
	}
	var v struct {
		Card struct {
			Name, Description, Version string
			Skills                     []string
		}
		Blocking, NonBlocking, Get, Cancel taskView
		CancelAgain                        string
		Stream                             struct {
			Events []string
			Task   taskView
		}
		List struct {
			Pages []struct {
				N, TotalSize, PageSize int
			}
			IDs                []string
			CompletedInContext []taskView
		}
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("script output: %v: %s", err, out)
	}
	if v.Card.Name != "local/hello-agent" || v.Card.Description != "Murmur capsule local/hello-agent 0.1.0" || strings.Join(v.Card.Skills, ",") != "task" {
		t.Errorf("card %+v", v.Card)
	}
	// Each task as the JS client saw it must be the task the door holds.
	check := func(what string, jv taskView, wantState a2a.TaskState) {
		t.Helper()
		got, err := f.client.GetTask(context.Background(), &a2a.GetTaskRequest{ID: a2a.TaskID(jv.ID)})
		if err != nil {
			t.Fatalf("%s: GetTask %s: %v", what, jv.ID, err)
		}
		if jv.State != string(wantState) || got.ContextID != jv.ContextID {
			t.Errorf("%s: JS saw %s in %s; door has %s in %s; want %s", what, jv.State, jv.ContextID, got.Status.State, got.ContextID, wantState)
		}
	}
	check("blocking", v.Blocking, a2a.TaskStateCompleted)
	if v.Blocking.Status != "from js" || len(v.Blocking.Artifacts) == 0 {
		t.Errorf("blocking %+v", v.Blocking)
	}
	var resp *artifactView
	for i := range v.Blocking.Artifacts {
		if v.Blocking.Artifacts[i].ID == "response" {
			resp = &v.Blocking.Artifacts[i]
		}
	}
	if resp == nil || len(resp.Parts) != 1 || resp.Parts[0]["text"] != "from js" {
		t.Errorf("response artifact as JS saw it: %+v", resp)
	}
	if v.NonBlocking.State != "TASK_STATE_SUBMITTED" && v.NonBlocking.State != "TASK_STATE_WORKING" {
		t.Errorf("non-blocking %s", v.NonBlocking.State)
	}
	if v.Get.ID != v.NonBlocking.ID || (v.Get.State != "TASK_STATE_WORKING" && v.Get.State != "TASK_STATE_SUBMITTED") {
		t.Errorf("get %+v", v.Get)
	}
	check("cancel", v.Cancel, a2a.TaskStateCanceled)
	var residue bool
	for _, a := range v.Cancel.Artifacts {
		if a.ID == "residue" {
			b, _ := json.Marshal(a.Parts)
			residue = string(b) == `[{"data":{"delegations":["dlg_0193aaaabbbbccccddddeeeeffff0000"],"member_calls":["mcl_0193aaaabbbbccccddddeeeeffff0001"]}}]`
		}
	}
	if !residue {
		t.Errorf("cancel residue as JS saw it: %+v", v.Cancel.Artifacts)
	}
	if v.CancelAgain == "accepted" || !strings.Contains(v.CancelAgain, "already ended") {
		t.Errorf("second cancel: %q", v.CancelAgain)
	}
	check("stream", v.Stream.Task, a2a.TaskStateCompleted)

	// ListTasks as the JS client paged it (two a page) is the door's list.
	all, err := f.client.ListTasks(context.Background(), &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, task := range all.Tasks {
		want = append(want, string(task.ID))
	}
	if len(want) != 3 || strings.Join(v.List.IDs, " ") != strings.Join(want, " ") {
		t.Errorf("JS listed %v, the door lists %v", v.List.IDs, want)
	}
	if len(v.List.Pages) != 2 || v.List.Pages[0].N != 2 || v.List.Pages[0].TotalSize != 3 || v.List.Pages[0].PageSize != 2 || v.List.Pages[1].N != 1 {
		t.Errorf("JS pages %+v", v.List.Pages)
	}
	if c := v.List.CompletedInContext; len(c) != 1 || c[0].ID != v.Stream.Task.ID || c[0].State != "TASK_STATE_COMPLETED" || len(c[0].Artifacts) == 0 {
		t.Errorf("JS list of the stream's context, completed, with artifacts: %+v", c)
	}
	ev := strings.Join(v.Stream.Events, " ")
	if !strings.HasPrefix(ev, "task:TASK_STATE_SUBMITTED status:TASK_STATE_WORKING artifact:response:set:") ||
		!strings.HasSuffix(ev, "artifact:response:set:streamed words status:TASK_STATE_COMPLETED") {
		t.Errorf("stream events %q", ev)
	}
}
