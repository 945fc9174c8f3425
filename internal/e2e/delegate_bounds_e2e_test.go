package e2e_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/trace"
)

// TestDelegateConcurrencyBound: under --max-concurrent 1 a model that
// delegates twice in one turn gets the daemon's sentence, and nothing
// around it, as the second call's result; the session goes on, and the
// first delegation's outcome arrives. The worker sleeps after its task, so
// it is still live at the second call (one that exits at once may have
// deregistered by then); the child watch of 2 s ends it.
func TestDelegateConcurrencyBound(t *testing.T) {
	t.Parallel()
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: sleep\n", workerTranscript)
	fp := fakeProvider(t, fakeprovider.Anthropic)
	fp.Push(delegateReply("1.0.0", "find three things", "worker", "worker"),
		fakeprovider.Reply{Text: []string{"Waiting."}}, fakeprovider.Reply{Text: []string{"One came back."}})
	orch := fakeModelCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", fp)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch", "--max-concurrent", "1")
	r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost, fakeKey, "MURMUR_DELEGATION_TIMEOUT_SECS=2"}, "run", "--json", "--task", "delegate twice")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	const sentence = "delegation concurrency bound reached: this daemon allows a capsule 1 live children at a time (--max-concurrent 1), and this session already holds 1 — wait for one to finish, or raise --max-concurrent"
	reqs := fp.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model calls: %d", len(reqs))
	}
	results := lastMessageText(t, reqs[1])
	if !strings.Contains(results, "\n"+sentence+"\n") || strings.Count(results, `"status":"started"`) != 1 {
		t.Errorf("tool results:\n%s", results)
	}
	lines := traceLines(t, rd.RecordsDir)
	dl := byType(lines, trace.TypeDelegation)
	var refused, ended int
	for _, l := range dl {
		switch l.Str("outcome") {
		case "refused":
			refused++
			if l.Str("reason") != sentence {
				t.Errorf("refused delegation's reason %q", l.Str("reason"))
			}
		case "terminated":
			ended++
		}
	}
	if refused != 1 || ended != 1 || len(byType(lines, trace.TypeDelegationStart)) != 1 {
		t.Errorf("delegation lines %v", dl)
	}
	if tc := byType(lines, trace.TypeToolCall); len(tc) != 2 || tc[0].Str("status") == tc[1].Str("status") {
		t.Errorf("tool_call lines %v", tc)
	}
	if end := lastEnd(t, lines); end.Str("exit_status") != "ok" {
		t.Errorf("session_end %v", end.Fields)
	}
}

const selfTranscript = `version: 1
responses:
  - content:
      - {type: tool_call, id: call_1, name: delegate-task, input: {capsule: rec, version: 1.0.0, task: "go one level down"}}
  - content:
      - {type: text, text: "Waiting on the level below."}
  - content:
      - {type: text, text: "The level below reported back."}
`

// TestDelegateDepthBound: a capsule whose spawn.allow names itself runs at
// four levels under --max-depth 3; the fourth level's delegate-task gets
// the depth sentence, and every level above continues with an ok outcome.
func TestDelegateDepthBound(t *testing.T) {
	t.Parallel()
	homeDir, base := t.TempDir(), t.TempDir()
	rec := replayCapsule(t, homeDir, filepath.Join(base, "rec"), "rec", "1.0.0",
		"capabilities:\n  spawn:\n    allow: [local/rec]\nlifecycle:\n  after_task: exit\n", selfTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/rec", "--max-depth", "3")
	r := runMur(t, homeDir, rec, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "recurse")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	const sentence = "delegation depth bound reached: this daemon allows 3 levels of delegation below a top-level capsule (--max-depth 3), and this session has none left to spend — a capsule whose capabilities.spawn.allow names itself terminates here rather than recursing"
	dir := parseReady(t, r.Stdout).RecordsDir
	for level := 1; level <= 4; level++ {
		lines := traceLines(t, dir)
		dl := byType(lines, trace.TypeDelegation)
		if len(dl) != 1 {
			t.Fatalf("level %d: delegation lines %s", level, types(lines))
		}
		if level == 4 {
			if dl[0].Str("outcome") != "refused" || dl[0].Str("reason") != sentence {
				t.Errorf("level 4: %v", dl[0].Fields)
			}
			if ds := byType(lines, trace.TypeDelegationStart); len(ds) != 0 {
				t.Errorf("level 4 started a delegation: %v", ds)
			}
			break
		}
		if dl[0].Str("outcome") != "ok" || len(byType(lines, trace.TypeTaskContinued)) != 1 {
			t.Errorf("level %d: %s %v", level, types(lines), dl[0].Fields)
		}
		dir = childRecords(t, homeDir, byType(lines, trace.TypeDelegationStart)[0].Str("child_workdir"))
	}
}

// fds lists a process's open descriptors (number → what it points at).
func fds(t *testing.T, pid int) map[string]string {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		l, _ := os.Readlink(filepath.Join(dir, e.Name()))
		out[e.Name()] = l
	}
	return out
}

// childPIDs lists the processes whose parent is pid.
func childPIDs(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, n)
		}
	}
	return out
}

// TestDelegateHundredInSequence: one task delegates 100 times, one round
// after another; afterwards the parent holds no more descriptors than it
// did after its first delegation, and no process of its own is left.
// (mur has no debug endpoint, so goroutines are not counted.)
func TestDelegateHundredInSequence(t *testing.T) {
	t.Parallel()
	const n = 100
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: exit\n", workerTranscript)
	call := "  - content:\n      - {type: tool_call, name: delegate-task, input: {capsule: worker, version: 1.0.0, task: \"find three things\"}}\n" +
		"  - content:\n      - {type: text, text: \"Waiting.\"}\n"
	done := "  - content:\n      - {type: text, text: \"Done.\"}\n"
	tr := "version: 1\nresponses:\n" + call + done + strings.Repeat(call, n) + done
	orch := replayCapsuleInference(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0", "  max_turns: 250\n",
		"capabilities:\n  spawn:\n    allow: [local/worker]\nlifecycle:\n  after_task: sleep\n", tr)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	cmd, out, stderr := startMurEnv(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "delegate once")
	rd := readReady(t, out)
	waitLines(t, rd.RecordsDir, trace.TypeTaskEnd, 1, stderr)
	before := fds(t, cmd.Process.Pid)

	rpc(t, "http://"+*rd.URL, `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"delegate a hundred times"}]},"configuration":{"returnImmediately":true}}}`)
	for i := 0; len(byType(traceLines(t, rd.RecordsDir), trace.TypeTaskEnd)) < 2; i++ {
		if i > 3000 {
			t.Fatalf("the second task did not end: %s", stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	lines := traceLines(t, rd.RecordsDir)
	if te := byType(lines, trace.TypeTaskEnd); te[1].Str("exit_status") != "ok" {
		t.Fatalf("second task_end %v", te[1].Fields)
	}
	ok := 0
	for _, l := range byType(lines, trace.TypeDelegation) {
		if l.Str("outcome") == "ok" {
			ok++
		}
	}
	if ok != n+1 || len(byType(lines, trace.TypeTaskContinued)) != n+1 {
		var why []string
		for _, l := range byType(lines, trace.TypeDelegation) {
			if l.Str("outcome") != "ok" {
				why = append(why, l.Str("outcome")+": "+l.Str("reason"))
			}
		}
		t.Errorf("%d ok delegations, %d continuations; want %d; the others: %q", ok, len(byType(lines, trace.TypeTaskContinued)), n+1, why)
	}
	// This test's own keep-alive connection to the door is one of the
	// parent's descriptors until the door sees it close.
	http.DefaultClient.CloseIdleConnections()
	after := fds(t, cmd.Process.Pid)
	for i := 0; len(after) > len(before) && i < 40; i++ {
		time.Sleep(50 * time.Millisecond)
		after = fds(t, cmd.Process.Pid)
	}
	if len(after) > len(before) {
		t.Errorf("the parent holds %d descriptors after %d delegations, %d after one:\nbefore %v\nafter  %v", len(after), n+1, len(before), before, after)
	}
	if c := childPIDs(cmd.Process.Pid); len(c) != 0 {
		t.Errorf("processes left under the parent: %v", c)
	}
	if recs, _ := running.Scan(home.Running(homeDir)); len(recs) != 1 {
		t.Errorf("running records: %v", recs)
	}
}
