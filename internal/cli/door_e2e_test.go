package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// answersTranscript is a replay transcript of n plain answers, one a task.
func answersTranscript(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nresponses:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - content:\n      - {type: text, text: \"answer %d\"}\n", i)
	}
	return b.String()
}

// sleepingDoor starts mur run --json on an agent capsule that serves its
// door until stopped and answers n tasks; it returns the door's URL.
func sleepingDoor(t *testing.T, n int) (string, ready) {
	t.Helper()
	homeDir, base := t.TempDir(), t.TempDir()
	proj := agentProject(t, homeDir, base, "lifecycle:\n  after_task: sleep\n", answersTranscript(n))
	_, out, _ := startMur(t, homeDir, proj, "run", "--json")
	rd := readReady(t, out)
	return "http://" + *rd.URL, rd
}

func rpcCode(r map[string]any) int {
	e, _ := r["error"].(map[string]any)
	if e == nil {
		return 0
	}
	c, _ := e["code"].(float64)
	return int(c)
}

// The door against A2A 1.0 through the built mur: the push-notification
// methods are -32003, GetExtendedAgentCard -32004, a negative historyLength
// -32602, and ListTasks is served: @a2a-js/sdk's listTasks pages through the
// tasks it sent, newest first, as the door lists them.
func TestDoorA2AConformance(t *testing.T) {
	url, _ := sleepingDoor(t, 3)
	codes := []struct {
		method, params string
		code           int
	}{
		{"GetTaskPushNotificationConfig", `{"taskId":"tsk_0","id":"c"}`, -32003},
		{"CreateTaskPushNotificationConfig", `{"taskId":"tsk_0","url":"http://127.0.0.1:9/"}`, -32003},
		{"ListTaskPushNotificationConfigs", `{"taskId":"tsk_0"}`, -32003},
		{"DeleteTaskPushNotificationConfig", `{"taskId":"tsk_0","id":"c"}`, -32003},
		{"GetExtendedAgentCard", `{}`, -32004},
		{"GetTask", `{"id":"tsk_0","historyLength":-1}`, -32602},
		{"ListTasks", `{"historyLength":-1}`, -32602},
		{"ListTasks", `{"pageSize":1000}`, -32602},
	}
	for _, c := range codes {
		r := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"`+c.method+`","params":`+c.params+`}`)
		if rpcCode(r) != c.code {
			t.Errorf("%s %s: %v, want %d", c.method, c.params, r, c.code)
		}
	}

	root := repoRoot()
	if _, err := os.Stat(filepath.Join(root, "node_modules", "@a2a-js", "sdk", "package.json")); err != nil {
		t.Skip("node_modules/@a2a-js/sdk is absent: run `npm ci` in the repository root")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	cmd := exec.Command(node, filepath.Join(root, "internal", "cli", "testdata", "door", "list-tasks.mjs"), url, "3")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var v struct {
		Sent  []struct{ ID, State string }
		Pages []struct {
			IDs, States         []string
			TotalSize, PageSize int
		}
		Completed []string
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("script output: %v: %s", err, out)
	}
	var sent []string
	for _, s := range v.Sent {
		if s.State != "TASK_STATE_COMPLETED" {
			t.Errorf("task %s: %s", s.ID, s.State)
		}
		sent = append(sent, s.ID)
	}
	slices.Reverse(sent) // newest first
	var listed []string
	for _, p := range v.Pages {
		if p.TotalSize != 3 || p.PageSize != 2 {
			t.Errorf("page %+v", p)
		}
		listed = append(listed, p.IDs...)
	}
	if len(v.Pages) != 2 || !slices.Equal(listed, sent) || !slices.Equal(v.Completed, sent) {
		t.Errorf("JS listTasks: pages %+v completed %v; sent (newest first) %v", v.Pages, v.Completed, sent)
	}
	// The raw door agrees.
	r := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"ListTasks"}`)
	res, _ := r["result"].(map[string]any)
	if res == nil || res["totalSize"].(float64) != 3 || len(res["tasks"].([]any)) != 3 {
		t.Errorf("ListTasks without params: %v", r)
	}
}

// The built mur's door keeps a bounded number of ended tasks: twenty 4 MB
// messages (80 MB, the whole bound is 64 MiB) leave the newest answerable
// and the oldest forgotten (-32001), and ListTasks counts only what is kept.
// (Before the bound, 100 such messages left mur at 1.6 GB; docs/door.md.)
func TestDoorKeepsBoundedTasks(t *testing.T) {
	url, _ := sleepingDoor(t, 20)
	text := strings.Repeat("x", 4_000_000)
	var ids []string
	for i := range 20 {
		body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m` + fmt.Sprint(i) + `","role":"ROLE_USER","parts":[{"text":"` + text + `"}]}}}`
		r := rpc(t, url, body)
		res, _ := r["result"].(map[string]any)
		task, _ := res["task"].(map[string]any)
		if task == nil {
			t.Fatalf("message %d: %v", i, r)
		}
		ids = append(ids, task["id"].(string))
	}
	r := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":100}}`)
	res, _ := r["result"].(map[string]any)
	if res == nil {
		t.Fatalf("ListTasks: %v", r)
	}
	kept := int(res["totalSize"].(float64))
	if kept < 1 || kept > 16 {
		t.Errorf("ListTasks totalSize %d, want at most 16 (64 MiB of 4 MB tasks)", kept)
	}
	for i, id := range ids {
		got := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"`+id+`","historyLength":0}}`)
		if want := i >= len(ids)-kept; (rpcCode(got) == 0) != want {
			t.Errorf("task %d (%s): GetTask %v, want kept %v", i, id, rpcCode(got), want)
		}
		if i < len(ids)-kept && rpcCode(got) != -32001 {
			t.Errorf("forgotten task %d: code %d, want -32001", i, rpcCode(got))
		}
	}
}
