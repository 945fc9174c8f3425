package door_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/murmur-go/murmur/internal/door"
	"github.com/murmur-go/murmur/internal/ids"
	"net/http/httptest"
)

// startBounded is start with the ended-task bounds set.
func startBounded(t *testing.T, maxTasks int, ttl time.Duration, maxBytes int64) *fixture {
	t.Helper()
	f := &fixture{runner: newRunner(), rec: newRecorder()}
	ts := httptest.NewUnstartedServer(nil)
	t.Cleanup(ts.Close)
	srv, err := door.New(door.Config{
		Name: "local/hello-agent", Version: "0.1.0", SessionID: ids.New(ids.Session), URL: "http://" + ts.Listener.Addr().String(),
		TaskAcceptance: "single", AfterTask: "sleep", Runner: f.runner, Recorder: f.rec,
		MaxEndedTasks: maxTasks, EndedTaskTTL: ttl, MaxKeptBytes: maxBytes,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ts.Config.Handler = srv
	ts.Start()
	f.srv, f.url = srv, ts.URL
	c, err := a2aclient.NewFromEndpoints(context.Background(),
		[]*a2a.AgentInterface{a2a.NewAgentInterface(ts.URL, a2a.TransportProtocolJSONRPC)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	f.client = c
	return f
}

// known says whether GetTask still finds the task.
func (f *fixture) known(t *testing.T, id a2a.TaskID) bool {
	t.Helper()
	_, err := f.client.GetTask(context.Background(), &a2a.GetTaskRequest{ID: id})
	if err != nil && !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("GetTask %s: %v", id, err)
	}
	return err == nil
}

// The door forgets its oldest ended tasks past a count, past a byte total
// and past an age; a live task is never forgotten, and what is kept is still
// served whole.
func TestEndedTasksBounded(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		f := startBounded(t, 3, 0, 0)
		var ids []a2a.TaskID
		for i := range 6 {
			ids = append(ids, f.send(t, "echo task "+string(rune('a'+i)), false).ID)
		}
		// The last task is evicted from at the next admission or list.
		list, err := f.client.ListTasks(context.Background(), &a2a.ListTasksRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if list.TotalSize != 3 {
			t.Errorf("ListTasks total %d, want 3", list.TotalSize)
		}
		for i, id := range ids {
			if want := i >= 3; f.known(t, id) != want {
				t.Errorf("task %d kept %v, want %v", i, !want, want)
			}
		}
		if n, ns, _ := door.Kept(f.srv); n != 3 || ns != 3 {
			t.Errorf("door holds %d tasks, its store %d; want 3", n, ns)
		}
		last, _ := f.client.GetTask(context.Background(), &a2a.GetTaskRequest{ID: ids[5]})
		if artifact(last, "response") == nil || statusText(last) != "task f" {
			t.Errorf("a kept task is not whole: %+v", last)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		// Each task is a 10 000-byte message, then its 9 995-byte answer
		// streamed, as a tool result and as the answer: 39 985 bytes counted;
		// 130 000 bytes keep three.
		f := startBounded(t, 0, 0, 130_000)
		var ids []a2a.TaskID
		for range 5 {
			ids = append(ids, f.send(t, "echo "+strings.Repeat("x", 9995), false).ID)
		}
		f.client.ListTasks(context.Background(), &a2a.ListTasksRequest{})
		for i, id := range ids {
			if want := i >= 2; f.known(t, id) != want {
				t.Errorf("task %d kept %v, want %v", i, !want, want)
			}
		}
		if _, _, b := door.Kept(f.srv); b > 130_000 {
			t.Errorf("ended bytes kept %d, over the bound", b)
		}
	})
	t.Run("age", func(t *testing.T) {
		f := startBounded(t, 0, time.Minute, 0)
		var mu sync.Mutex
		now := time.Now()
		door.SetClock(f.srv, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
		old := f.send(t, "echo old", false).ID
		mu.Lock()
		now = now.Add(50 * time.Second)
		mu.Unlock()
		mid := f.send(t, "echo middle", false).ID
		res, err := f.client.SendMessage(context.Background(), &a2a.SendMessageRequest{Message: userMsg("hold"), Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
		if err != nil {
			t.Fatal(err)
		}
		live := res.(*a2a.Task).ID
		mu.Lock()
		now = now.Add(20 * time.Second) // old ended 70 s ago, middle 20 s ago
		mu.Unlock()
		f.client.ListTasks(context.Background(), &a2a.ListTasksRequest{})
		if f.known(t, old) || !f.known(t, mid) || !f.known(t, live) {
			t.Errorf("after 70 s: old kept %v (want false), middle %v, live %v (want true)", f.known(t, old), f.known(t, mid), f.known(t, live))
		}
		mu.Lock()
		now = now.Add(time.Hour)
		mu.Unlock()
		f.client.ListTasks(context.Background(), &a2a.ListTasksRequest{})
		if f.known(t, mid) || !f.known(t, live) {
			t.Errorf("an hour on: middle kept %v (want false), live %v (want true)", f.known(t, mid), f.known(t, live))
		}
		close(f.runner.release)
		f.waitState(t, live, a2a.TaskStateCompleted)
	})
}
