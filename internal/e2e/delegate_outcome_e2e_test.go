package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/trace"
)

// answerTranscript is a replay transcript whose one response is text (nil:
// a response with no content at all, so the answer is empty).
func answerTranscript(text *string) string {
	content := []map[string]any{}
	if text != nil {
		content = append(content, map[string]any{"type": "text", "text": *text})
	}
	b, _ := json.Marshal(map[string]any{"version": 1, "responses": []any{map[string]any{"content": content}}})
	return string(b)
}

// failingTranscript calls a tool nobody has, then runs out of responses:
// the child's task fails and it writes no result file.
const failingTranscript = `version: 1
responses:
  - content:
      - {type: tool_call, id: call_1, name: no-such-tool, input: {}}
`

// outcomeCase is one row of the outcome-block table: a worker, how the
// parent runs, and how the block the parent's model reads must look.
type outcomeCase struct {
	name        string
	transcript  string
	afterTask   string // the worker's lifecycle.after_task
	parentExtra string
	env         []string
	hanging     bool                                         // the worker's model never answers
	wrapSleep   int                                          // MURMUR_MUR_BINARY sleeps this long before exec'ing mur
	during      func(t *testing.T, homeDir string, rd ready) // while the parent runs
	status      string
	reason      string // the terminated reason
	detail      string // a prefix of the block's detail
	ending      func(t *testing.T, tail string)
}

func endsWith(want string) func(*testing.T, string) {
	return func(t *testing.T, tail string) {
		if tail != want {
			t.Errorf("the block ends %.300q, want %.300q", tail, want)
		}
	}
}

// TestDelegateOutcomeBlocks walks the outcome table end to end: a parent
// whose model is a fake provider delegates to a real child mur process
// registered at a real mur-roost, and the continuation its model is sent
// holds the spec's block for each way a child can end.
func TestDelegateOutcomeBlocks(t *testing.T) {
	ten := "0123456789"
	full := strings.Repeat("a", 64<<10)
	big := "x" + strings.Repeat("é", 100<<10) // 200 KiB; byte 65536 falls inside a character
	none := "result: none (the child wrote no result file)"
	cases := []outcomeCase{
		{name: "ok 10 B", transcript: answerTranscript(&ten), status: "ok", ending: endsWith("result:\n" + ten)},
		{name: "ok 64 KiB", transcript: answerTranscript(&full), status: "ok", ending: endsWith("result:\n" + full)},
		{name: "ok 200 KiB", transcript: answerTranscript(&big), status: "ok", ending: func(t *testing.T, tail string) {
			m := regexp.MustCompile(`(?s)^result:\n(.*) \[…\]\n\[cut at (\d+) of 204801 bytes; the whole answer is delegations/(dlg_[0-9a-f]+)\.txt in the runtime directory\]$`).FindStringSubmatch(tail)
			if m == nil {
				t.Fatalf("cut block ends %q", tail[max(0, len(tail)-300):])
			}
			if len(m[1]) != 65535 || m[2] != "65535" || !utf8.ValidString(m[1]) || !strings.HasPrefix(big, m[1]) {
				t.Errorf("kept %d bytes, cut line says %s", len(m[1]), m[2])
			}
		}},
		{name: "empty result file", transcript: answerTranscript(nil), status: "ok", ending: endsWith("result: (the child's result file is empty)")},
		{name: "no result file", transcript: failingTranscript, status: "error", ending: endsWith(none)},
		{name: "crashed", transcript: answerTranscript(&ten), afterTask: "sleep", status: "crashed",
			during: func(t *testing.T, homeDir string, rd ready) {
				c := childOf(t, homeDir, rd.SessionID)
				waitLines(t, c.RecordsDir, trace.TypeTaskEnd, 1, "")
				// Only once the parent has the child's answer to the
				// delivery: the child can end its task before that answer
				// is read.
				waitLines(t, rd.RecordsDir, trace.TypeDelegationStart, 1, "")
				syscall.Kill(c.PID, syscall.SIGKILL)
			},
			detail: "the child exited without recording a completion; killed by SIGKILL", ending: endsWith("result:\n" + ten)},
		{name: "crashed mid-task", hanging: true, status: "crashed",
			during: func(t *testing.T, homeDir string, rd ready) {
				c := childOf(t, homeDir, rd.SessionID)
				waitLines(t, c.RecordsDir, trace.TypeTaskStart, 1, "")
				waitLines(t, rd.RecordsDir, trace.TypeDelegationStart, 1, "")
				syscall.Kill(c.PID, syscall.SIGKILL)
			},
			detail: "the child exited without recording a completion; killed by SIGKILL", ending: endsWith(none)},
		// The child answers, then its result file is replaced before it
		// ends (SIGTERM while idle: it reports itself, ok).
		{name: "result file a FIFO", transcript: answerTranscript(&ten), afterTask: "sleep", status: "ok",
			during: swapResult(func(p string) error { return syscall.Mkfifo(p, 0o600) }), ending: endsWith(none)},
		{name: "result file a symlink out of the child's folder", transcript: answerTranscript(&ten), afterTask: "sleep", status: "ok",
			during: swapResult(func(p string) error { return os.Symlink("/etc/passwd", p) }), ending: endsWith(none)},
		{name: "result file 2 GB (sparse)", transcript: answerTranscript(&ten), afterTask: "sleep", status: "ok",
			during: swapResult(func(p string) error {
				f, err := os.Create(p)
				if err != nil {
					return err
				}
				defer f.Close()
				f.WriteString(ten)
				return f.Truncate(2 << 30)
			}), ending: func(t *testing.T, tail string) {
				want := fmt.Sprintf(" […]\n[cut at 65536 of %d bytes; the whole answer could not be kept in the runtime directory: it is %d bytes, over the 268435456-byte ceiling of a kept answer]", 2<<30, 2<<30)
				if !strings.HasPrefix(tail, "result:\n"+ten) || !strings.HasSuffix(tail, want) || len(tail) != len("result:\n")+65536+len(want) {
					t.Errorf("the block ends %q", tail[max(0, len(tail)-300):])
				}
			}},
		{name: "terminated by MURMUR_DELEGATION_TIMEOUT_SECS", transcript: answerTranscript(&ten), afterTask: "sleep",
			env: []string{"MURMUR_DELEGATION_TIMEOUT_SECS=2"}, status: "terminated",
			reason: "the sub-capsule was still running at lifecycle.delegation_deadline_secs (2s)",
			detail: "the parent ended this delegation; exit status 143", ending: endsWith("result:\n" + ten)},
		{name: "terminated by lifecycle.delegation_deadline_secs", transcript: answerTranscript(&ten), afterTask: "sleep",
			parentExtra: "lifecycle:\n  delegation_deadline_secs: 2\n", status: "terminated",
			reason: "the sub-capsule was still running at lifecycle.delegation_deadline_secs (2s)",
			detail: "the parent ended this delegation; exit status 143", ending: endsWith("result:\n" + ten)},
		// The child takes 33 s to print its --json line (a slow start), so
		// the backstop (child watch 2 s + 30 s, from the launch) passes
		// before the child watch (from ready) does.
		{name: "terminated by the backstop", transcript: answerTranscript(&ten), afterTask: "sleep",
			env: []string{"MURMUR_DELEGATION_TIMEOUT_SECS=2"}, wrapSleep: 33, status: "terminated",
			reason: "no outcome reached the delegating task within 32s of this sub-capsule starting",
			detail: "the parent ended this delegation; exit status 143", ending: endsWith("result:\n" + ten)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runOutcomeCase(t, c)
		})
	}
}

func runOutcomeCase(t *testing.T, c outcomeCase) {
	homeDir, base := t.TempDir(), t.TempDir()
	after := c.afterTask
	if after == "" {
		after = "exit"
	}
	if c.hanging {
		wfp := fakeProvider(t, fakeprovider.Anthropic)
		wfp.Push(fakeprovider.Reply{Hang: true})
		fakeModelCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0",
			"capabilities:\n  env:\n    allow: [PROVIDER_TEST_KEY]\nlifecycle:\n  after_task: "+after+"\n", wfp)
		c.parentExtra = "  env:\n    allow: [PROVIDER_TEST_KEY]\n" + c.parentExtra
	} else {
		replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: "+after+"\n", c.transcript)
	}
	fp := fakeProvider(t, fakeprovider.Anthropic)
	fp.Push(delegateReply("1.0.0", "answer", "worker"), fakeprovider.Reply{Text: []string{"Waiting."}}, fakeprovider.Reply{Text: []string{"Read it."}})
	orch := fakeModelCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n"+c.parentExtra, fp)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	env := append([]string{"MURMUR_ROOST_URL=" + roost, fakeKey}, c.env...)
	if c.wrapSleep > 0 {
		w := filepath.Join(base, "slow-mur")
		os.WriteFile(w, []byte(fmt.Sprintf("#!/bin/sh\nsleep %d\nexec %s \"$@\"\n", c.wrapSleep, murBin(t))), 0o755)
		env = append(env, "MURMUR_MUR_BINARY="+w)
	}
	cmd, out, stderr := startMurEnv(t, homeDir, orch, env, "run", "--json", "--task", "delegate it")
	rd := readReady(t, out)
	if c.during != nil {
		c.during(t, homeDir, rd)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the parent: %v; stderr %s", err, stderr)
	}
	lines := traceLines(t, rd.RecordsDir)
	ds := byType(lines, trace.TypeDelegationStart)
	dl := byType(lines, trace.TypeDelegation)
	if len(ds) != 1 || len(dl) != 1 {
		t.Fatalf("delegation lines: %s; stderr %s", types(lines), stderr)
	}
	dlg, child := ds[0].Str("delegation_id"), ds[0].Str("child_session_id")
	if dl[0].Str("outcome") != c.status || dl[0].Str("reason") != c.reason {
		t.Errorf("delegation line %v", dl[0].Fields)
	}
	reqs := fp.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the parent's model was called %d times; stderr %s", len(reqs), stderr)
	}
	block := lastMessageText(t, reqs[2])
	head := fmt.Sprintf("[delegate-task] delegation %s to worker@1.0.0 ended %s:\n<untrusted-content source=delegation:worker>\n"+
		"Delegated capsule finished.\ndelegation_id: %s\ncapsule: worker@1.0.0\nsession_id: %s\nstatus: %s\nduration_ms: ",
		dlg, c.status, dlg, child, c.status)
	if !strings.HasPrefix(block, head) || !strings.HasSuffix(block, "\n</untrusted-content>") {
		t.Fatalf("block:\n%.2000s\nwant it to start\n%s", block, head)
	}
	rest := strings.TrimSuffix(block[len(head):], "\n</untrusted-content>")
	m := regexp.MustCompile(`(?s)^\d+\n(reason: [^\n]*\n)?(detail:\n(?:  [^\n]*\n)+)?workdir: ([^\n]+)\n`).FindStringSubmatch(rest)
	if m == nil {
		t.Fatalf("block after duration_ms: %.500q", rest)
	}
	if want := ""; c.reason != "" {
		want = "reason: " + c.reason + "\n"
		if m[1] != want {
			t.Errorf("reason line %q, want %q", m[1], want)
		}
	} else if m[1] != "" {
		t.Errorf("a %s block has a reason line %q", c.status, m[1])
	}
	if c.detail != "" && !strings.HasPrefix(m[2], "detail:\n  "+c.detail) {
		t.Errorf("detail %q, want it to start %q", m[2], c.detail)
	}
	if m[3] != ds[0].Str("child_workdir") {
		t.Errorf("workdir %s, want %s", m[3], ds[0].Str("child_workdir"))
	}
	c.ending(t, rest[len(m[0]):])

	// The child's completion.json: who reported, and that it was delivered
	// once.
	rec := readCompletion(t, childRecords(t, homeDir, ds[0].Str("child_workdir")))
	by := "child"
	if c.status == "crashed" || c.status == "terminated" {
		by = "launcher"
	}
	if rec["status"] != c.status || rec["reported_by"] != by || rec["delivered"] != true || rec["delegation_id"] != dlg {
		t.Errorf("completion.json %v", rec)
	}
	if cont := byType(lines, trace.TypeTaskContinued); len(cont) != 1 {
		t.Errorf("task_continued lines: %d", len(cont))
	}
}

// TestDelegateFourAtOnce: one turn delegates to four children at once; the
// task waits on four, and continues once with four ok blocks in id order.
func TestDelegateFourAtOnce(t *testing.T) {
	t.Parallel()
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: exit\n", workerTranscript)
	fp := fakeProvider(t, fakeprovider.Anthropic)
	fp.Push(delegateReply("1.0.0", "find three things", "worker", "worker", "worker", "worker"),
		fakeprovider.Reply{Text: []string{"Waiting on four."}}, fakeprovider.Reply{Text: []string{"All four reported."}})
	orch := fakeModelCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", fp)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost, fakeKey}, "run", "--json", "--task", "delegate four")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	lines := traceLines(t, parseReady(t, r.Stdout).RecordsDir)
	var ids []string
	for _, d := range byType(lines, trace.TypeDelegationStart) {
		ids = append(ids, d.Str("delegation_id"))
	}
	sort.Strings(ids)
	if len(ids) != 4 {
		t.Fatalf("delegation_start lines: %s", types(lines))
	}
	if cont := byType(lines, trace.TypeTaskContinued); len(cont) != 1 || string(cont[0].Fields["delegations"]) != `["`+strings.Join(ids, `","`)+`"]` {
		t.Errorf("task_continued %v, want %v", cont, ids)
	}
	// The task waits once if a child is still running when its turn ends;
	// on a loaded machine all four may have reported by then, and the task
	// continues without a task_waiting line.
	if w := byType(lines, trace.TypeTaskWaiting); len(w) > 1 || len(w) == 1 && w[0].Int("outstanding") < 1 {
		t.Errorf("task_waiting %v", w)
	}
	reqs := fp.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model calls %d", len(reqs))
	}
	blocks := strings.Split(lastMessageText(t, reqs[2]), "\n</untrusted-content>\n\n")
	if len(blocks) != 4 {
		t.Fatalf("%d blocks in the continuation", len(blocks))
	}
	for i, b := range blocks {
		if want := "[delegate-task] delegation " + ids[i] + " to worker@1.0.0 ended ok:\n"; !strings.HasPrefix(b, want) ||
			!strings.Contains(b, "result:\nThe report has three findings.") {
			t.Errorf("block %d:\n%s\nwant it to start %q", i, b, want)
		}
	}
}

// swapResult waits for the child's task to end, replaces its out/result.txt
// with what make leaves at the path, and SIGTERMs the (idle) child.
func swapResult(make func(p string) error) func(t *testing.T, homeDir string, rd ready) {
	return func(t *testing.T, homeDir string, rd ready) {
		c := childOf(t, homeDir, rd.SessionID)
		waitLines(t, c.RecordsDir, trace.TypeTaskEnd, 1, "")
		p := filepath.Join(c.RecordsDir, "out", "result.txt")
		os.Remove(p)
		if err := make(p); err != nil {
			t.Fatal(err)
		}
		syscall.Kill(c.PID, syscall.SIGTERM)
	}
}
