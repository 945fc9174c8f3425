package door

import (
	"context"
	"fmt"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// heldRunner hands its Events out and holds its task until cancelled.
type heldRunner struct{ events chan Events }

func (r heldRunner) RunTask(ctx context.Context, _ *Task, ev Events) Outcome {
	r.events <- ev
	<-ctx.Done()
	return Canceled()
}

// TestNoWholeTaskCopyPerUpdate: an agent turn's updates (a status, a text
// chunk, a tool result) allocate as much for a task with 2,000 history
// messages and 2,000 artifacts as for a fresh one, a few allocations each:
// no update copies the task (a deep copy allocates at least once per message
// and artifact, as a2a-go's gob copies did, three of them per update).
func TestNoWholeTaskCopyPerUpdate(t *testing.T) {
	updates := map[string]func(Events){
		"status":      func(ev Events) { ev.Status("thinking") },
		"text chunk":  func(ev Events) { ev.AppendText("chunk") },
		"tool result": func(ev Events) { ev.ToolResult("call", "echo", "out", nil) },
	}
	const grown = 2000
	for name, update := range updates {
		allocs := make([]float64, 2)
		for i, size := range []int{0, grown} {
			ev, s := heldTask(t)
			for j := range size {
				ev.Status("step") // each status moves the one before into the history
				ev.ToolResult(fmt.Sprint(j), "echo", "out", nil)
			}
			if size > 0 {
				s.mu.Lock()
				cur := s.running.cur
				s.mu.Unlock()
				if len(cur.History) < size || len(cur.Artifacts) < size {
					t.Fatalf("grown task has %d messages, %d artifacts", len(cur.History), len(cur.Artifacts))
				}
			}
			allocs[i] = testing.AllocsPerRun(200, func() { update(ev) })
		}
		t.Logf("%s: %.1f allocations per update on a fresh task, %.1f on a grown one", name, allocs[0], allocs[1])
		if allocs[1] > allocs[0]+2 || allocs[1] > 40 {
			t.Errorf("%s: %.1f allocations per update on a task of %d messages and artifacts, %.1f on a fresh one: the update copies the task",
				name, allocs[1], grown, allocs[0])
		}
	}
}

// heldTask starts a door and one task whose runner holds it; it returns the
// task's Events.
func heldTask(t *testing.T) (Events, *Server) {
	t.Helper()
	r := heldRunner{events: make(chan Events, 1)}
	s, err := New(Config{Name: "local/a", Version: "0.1.0", SessionID: "s", URL: "http://127.0.0.1:1", AfterTask: AfterSleep, Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); _ = s.Wait(context.Background()) })
	_, err = s.h.SendMessage(context.Background(), &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("go")),
		Config:  &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	return <-r.events, s
}
