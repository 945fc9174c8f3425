package e2e_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/trace"
)

const twoWorkersTranscript = `version: 1
responses:
  - content:
      - {type: tool_call, id: call_1, name: delegate-task, input: {capsule: busy, version: 1.0.0, task: "think forever"}}
      - {type: tool_call, id: call_2, name: delegate-task, input: {capsule: idle, version: 1.0.0, task: "answer and sleep"}}
  - content:
      - {type: text, text: "Waiting for both."}
`

// TestDelegateParentSIGTERMEndsChildren walks the child-trace table of
// "Ending a child": the parent's SIGTERM wind-down ends a child mid-task
// (its task cancelled, session_end canceled) and an idle one (session_end
// ok), neither with spawner_ended, both recorded terminated by the launcher.
func TestDelegateParentSIGTERMEndsChildren(t *testing.T) {
	t.Parallel()
	homeDir, base := t.TempDir(), t.TempDir()
	fp := fakeProvider(t, fakeprovider.Anthropic)
	fp.Push(fakeprovider.Reply{Hang: true})
	fakeModelCapsule(t, homeDir, filepath.Join(base, "busy"), "busy", "1.0.0",
		"capabilities:\n  env:\n    allow: [PROVIDER_TEST_KEY]\nlifecycle:\n  after_task: exit\n", fp)
	replayCapsule(t, homeDir, filepath.Join(base, "idle"), "idle", "1.0.0", "lifecycle:\n  after_task: sleep\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/busy, local/idle]\n  env:\n    allow: [PROVIDER_TEST_KEY]\n", twoWorkersTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	cmd, out, stderr := startMurEnv(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost, fakeKey}, "run", "--json", "--task", "delegate both")
	rd := readReady(t, out)
	waitLines(t, rd.RecordsDir, trace.TypeTaskWaiting, 1, stderr)
	ds := byType(traceLines(t, rd.RecordsDir), trace.TypeDelegationStart)
	if len(ds) != 2 {
		t.Fatalf("delegation_start lines: %v", ds)
	}
	dirs := map[string]string{}
	for _, d := range ds {
		dirs[d.Str("capsule")] = childRecords(t, homeDir, d.Str("child_workdir"))
	}
	waitFor(t, "the busy child's model call", func() bool { return len(fp.Requests()) > 0 })
	waitLines(t, dirs["idle"], trace.TypeTaskEnd, 1, stderr)

	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err == nil || err.(*exec.ExitError).ExitCode() != 143 {
		t.Errorf("parent exit %v; stderr %s", err, stderr)
	}
	for name, want := range map[string]string{"busy": "canceled", "idle": "ok"} {
		lines := traceLines(t, dirs[name])
		end := lastEnd(t, lines)
		if end.Str("exit_status") != want || strings.Contains(types(lines), "spawner_ended") {
			t.Errorf("%s child: %s; session_end %v", name, types(lines), end.Fields)
		}
		if name == "busy" {
			if te := byType(lines, trace.TypeTaskEnd); len(te) != 1 || te[0].Str("exit_status") != "canceled" {
				t.Errorf("busy child's task_end %v", te)
			}
		}
		rec := readCompletion(t, dirs[name])
		if rec["status"] != "terminated" || rec["reported_by"] != "launcher" || !strings.HasPrefix(rec["detail"].(string), "the parent ended this delegation; exit status 143") {
			t.Errorf("%s completion.json %v", name, rec)
		}
	}
}

// chain starts the self-delegating capsule published from base/rec, which
// sleeps after each task, at roost (run with --max-depth 3), and returns the top process and the running records of
// its three descendants, top down.
func chain(t testing.TB, homeDir, base, roost string) (*exec.Cmd, ready, []running.Record) {
	rec := filepath.Join(base, "rec")
	cmd, out, _ := startMurEnv(t, homeDir, rec, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "recurse")
	rd := readReady(t, out)
	var levels []running.Record
	parent := rd.SessionID
	for len(levels) < 3 {
		c := childOf(t, homeDir, parent)
		levels = append(levels, c)
		parent = c.SessionID
	}
	// The bottom level has heard its depth refusal and ended its task.
	for i := 0; ; i++ {
		if l, err := readTrace(levels[2].RecordsDir); err == nil && len(byType(l, trace.TypeTaskEnd)) > 0 {
			break
		}
		if i > 2400 {
			t.Fatalf("the fourth level never ended its task")
		}
		time.Sleep(25 * time.Millisecond)
	}
	return cmd, rd, levels
}

// TestDelegateChainEndsTopDown: kill -9 of a capsule three levels above
// the bottom of a chain ends every descendant (checked by pid); the first
// level below reads EOF (spawner_ended), the levels under it are ended by
// their parents' wind-down and record no spawner_ended.
func TestDelegateChainEndsTopDown(t *testing.T) {
	t.Parallel()
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "rec"), "rec", "1.0.0",
		"capabilities:\n  spawn:\n    allow: [local/rec]\nlifecycle:\n  after_task: sleep\n", selfTranscript)
	cmd, _, levels := chain(t, homeDir, base, startRoost(t, homeDir, "--spawn-allow", "local/rec", "--max-depth", "3"))
	cmd.Process.Kill()
	cmd.Wait()
	for _, l := range levels {
		waitFor(t, "the descendant to exit", func() bool { return gone(l.PID) })
	}
	for i, l := range levels {
		lines := traceLines(t, l.RecordsDir)
		ty := types(lines)
		if lines[len(lines)-1].EventType != "session_end" || strings.Contains(ty, "spawner_ended") != (i == 0) {
			t.Errorf("level %d's trace: %s", i+2, ty)
		}
	}
}

// TestDelegateCancelTaskEndsChild: CancelTask of a task waiting on a child
// ends the child (its pid gone), records the delegation terminated with the
// cancel reason, names it in task_canceled and in the CancelTask answer's
// residue, and the session goes on serving.
func TestDelegateCancelTaskEndsChild(t *testing.T) {
	t.Parallel()
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: sleep\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\nlifecycle:\n  after_task: sleep\n", orchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	cmd, out, stderr := startMurEnv(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "delegate it")
	rd := readReady(t, out)
	w := waitLines(t, rd.RecordsDir, trace.TypeTaskWaiting, 1, stderr)[0]
	ds := byType(traceLines(t, rd.RecordsDir), trace.TypeDelegationStart)[0]
	dlg := ds.Str("delegation_id")
	child := childOf(t, homeDir, rd.SessionID)
	res := rpc(t, "http://"+*rd.URL, `{"jsonrpc":"2.0","id":3,"method":"CancelTask","params":{"id":"`+w.Str("task_id")+`"}}`)
	b, _ := json.Marshal(res)
	if res["error"] != nil || !strings.Contains(string(b), dlg) {
		t.Errorf("CancelTask answer %s", b)
	}
	dl := waitLines(t, rd.RecordsDir, trace.TypeDelegation, 1, stderr)
	if dl[0].Str("outcome") != "terminated" || dl[0].Str("reason") != "the delegating task was cancelled" {
		t.Errorf("delegation line %v", dl[0].Fields)
	}
	if !gone(child.PID) {
		t.Errorf("the child %d outlived the cancelled task", child.PID)
	}
	tc := waitLines(t, rd.RecordsDir, trace.TypeTaskCanceled, 1, stderr)
	if !strings.Contains(string(tc[0].Fields["delegation_ids"]), dlg) {
		t.Errorf("task_canceled %v", tc[0].Fields)
	}
	if rec := readCompletion(t, childRecords(t, homeDir, ds.Str("child_workdir"))); rec["status"] != "terminated" || rec["reported_by"] != "launcher" {
		t.Errorf("completion.json %v", rec)
	}
	if card := rpc(t, "http://"+*rd.URL, `{"jsonrpc":"2.0","id":4,"method":"GetTask","params":{"id":"`+w.Str("task_id")+`"}}`); card["error"] != nil {
		t.Errorf("the session stopped serving: %v", card)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}
