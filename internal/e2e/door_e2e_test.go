package e2e_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/murmur-go/murmur/internal/testbin"
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
	cmd := exec.Command(node, filepath.Join(root, "internal", "e2e", "testdata", "door", "list-tasks.mjs"), url, "3")
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

// The built mur's door answers only its own user: curl run as a throwaway
// user gets 403 {"error": "not_same_user"} and its murmur.StopSession ends
// nothing; the same curl as the runtime's user is served.
func TestDoorRefusesOtherUsersE2E(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to add a throwaway user")
	}
	for _, tool := range []string{"curl", "useradd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip(tool + " is not installed")
		}
	}
	u32, g32 := testbin.ThrowawayUser(t)
	uid, gid := int(u32), int(g32)

	url, rd := sleepingDoor(t, 1)
	curl := func(uid, gid int, body string) (string, string) {
		cmd := exec.Command("curl", "-s", "-o", "-", "-w", "\n%{http_code}", "-H", "A2A-Version: 1.0",
			"-H", "Content-Type: application/json", "--data-binary", body, url+"/")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		cmd.Dir = "/"
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("curl as uid %d: %v (%s)", uid, err, out)
		}
		s := strings.TrimRight(string(out), "\n")
		i := strings.LastIndex(s, "\n")
		return s[i+1:], s[:max(i, 0)]
	}
	code, body := curl(uid, gid, `{"jsonrpc":"2.0","id":1,"method":"murmur.StopSession"}`)
	var ref struct{ Error, Message string }
	if code != "403" || json.Unmarshal([]byte(body), &ref) != nil || ref.Error != "not_same_user" {
		t.Fatalf("as uid %d: %s %s", uid, code, body)
	}
	code, body = curl(0, 0, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`)
	if code != "200" || !strings.Contains(body, "TASK_STATE_COMPLETED") {
		t.Fatalf("as root: %s %s", code, body)
	}
	// The session is still running: the refused StopSession ended nothing.
	if got := rpc(t, url, `{"jsonrpc":"2.0","id":1,"method":"ListTasks"}`); rpcCode(got) != 0 {
		t.Fatalf("after the refusal: %v", got)
	}
	lines := traceLines(t, rd.RecordsDir)
	if n := strings.Count(types(lines), "a2a_task_received"); n != 1 {
		t.Errorf("trace has %d a2a_task_received lines, want 1 (root's): %s", n, types(lines))
	}
}

// The built mur's door serves at most 64 connections at once: 200 silent
// connections leave it well under 200 descriptors, and a client behind them
// is served (the cap closes the connections that only wait).
func TestDoorConnectionCapE2E(t *testing.T) {
	url, rd := sleepingDoor(t, 1)
	fds := func() int {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", rd.PID))
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	start := fds()
	var conns []net.Conn
	for range 200 {
		c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	resp, err := http.Get(url + "/.well-known/agent-card.json")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a client behind 200 silent connections: %v %v", resp, err)
	}
	resp.Body.Close()
	if n := fds(); n > start+64+2 {
		t.Errorf("mur holds %d descriptors (%d at start), cap 64 connections", n, start)
	}
}
