package door_test

import (
	"context"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// An operator's approval through a door that takes no tasks
// (task_acceptance: none): the --task task's questions are still answered
// there. Two questions asked at once are put one at a time, each with its
// data part, and the one waiting gets no "already waiting" refusal.
func TestQuestionsOneAtATimeUnderAcceptNone(t *testing.T) {
	f := start(t, "none", "sleep", 0)
	id, err := f.srv.SubmitTask(context.Background(), "ask two")
	if err != nil {
		t.Fatal(err)
	}
	answer := func() {
		t.Helper()
		task := f.waitState(t, a2a.TaskID(id), a2a.TaskStateInputRequired)
		q := statusText(task)
		if q == "first" && (len(task.Status.Message.Parts) != 2 || task.Status.Message.Parts[1].Data() == nil) {
			t.Errorf("the first question has no data part: %+v", task.Status.Message.Parts)
		}
		msg := userMsg(q + "-answer")
		msg.TaskID = a2a.TaskID(id)
		if _, err := f.client.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: msg}); err != nil {
			t.Fatalf("reply to %q: %v", q, err)
		}
	}
	answer()
	answer()
	task := f.waitState(t, a2a.TaskID(id), a2a.TaskStateCompleted)
	if got := task.Artifacts; len(got) == 0 || !strings.Contains(got[len(got)-1].Parts[0].Text(), "got first-answer,second-answer") {
		t.Errorf("artifacts %+v", got)
	}
	// A message that starts a task is still refused.
	if _, err := f.client.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: userMsg("echo x")}); err == nil {
		t.Error("task_acceptance none took a new task")
	}
}

// A question whose wait runs out leaves the task WORKING and able to go on:
// it completes, and a late reply is refused (the task waits for none).
func TestQuestionTimesOut(t *testing.T) {
	f := start(t, "single", "sleep", 0)
	task := f.send(t, "ask brief", false)
	if task.Status.State != a2a.TaskStateCompleted {
		task = f.waitState(t, task.ID, a2a.TaskStateCompleted)
	}
	if got := task.Artifacts; len(got) == 0 || got[len(got)-1].Parts[0].Text() != "timed out" {
		t.Errorf("artifacts %+v", got)
	}
}
