package e2e_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/trace"
)

// BenchmarkDelegateChainKill: kill -9 of a top-level capsule whose chain
// of self-delegations is three levels deep (--max-depth 3) → every
// descendant's process gone (polled each millisecond by pid). Each
// iteration builds a fresh chain; reports the median and the max.
//
//	go test -run '^$' -bench BenchmarkDelegateChainKill -benchtime 20x ./internal/cli/
func BenchmarkDelegateChainKill(b *testing.B) {
	homeDir, base := b.TempDir(), b.TempDir()
	replayCapsule(b, homeDir, filepath.Join(base, "rec"), "rec", "1.0.0",
		"capabilities:\n  spawn:\n    allow: [local/rec]\nlifecycle:\n  after_task: sleep\n", selfTranscript)
	var d []time.Duration
	for b.Loop() {
		b.StopTimer()
		// A daemon per chain: the killed top never deregisters, and a
		// daemon keeps counting it toward --max-live-capsules.
		roost := startRoost(b, homeDir, "--spawn-allow", "local/rec", "--max-depth", "3")
		cmd, _, levels := chain(b, homeDir, base, roost)
		b.StartTimer()
		start := time.Now()
		cmd.Process.Kill()
		for _, l := range levels {
			for !gone(l.PID) {
				if time.Since(start) > 2*time.Minute {
					b.Fatalf("level pid %d outlived its chain", l.PID)
				}
				time.Sleep(time.Millisecond)
			}
		}
		d = append(d, time.Since(start))
		cmd.Wait()
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "ms-median")
	b.ReportMetric(float64(d[len(d)-1].Microseconds())/1000, "ms-max")
}

// BenchmarkDelegateContinuation: one task delegates 20 times in sequence
// to a replay worker that exits after its task; per delegation, from the
// trace's millisecond timestamps: the parent's delegation line (its
// launcher saw the child exit and read its record) → task_continued (the
// continuation starts), and the child's session_end → task_continued
// (adds the child's report, deregistration and exit).
//
//	go test -run '^$' -bench BenchmarkDelegateContinuation -benchtime 1x ./internal/cli/
func BenchmarkDelegateContinuation(b *testing.B) {
	const n = 20
	homeDir, base := b.TempDir(), b.TempDir()
	replayCapsule(b, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: exit\n", workerTranscript)
	call := "  - content:\n      - {type: tool_call, name: delegate-task, input: {capsule: worker, version: 1.0.0, task: \"find three things\"}}\n" +
		"  - content:\n      - {type: text, text: \"Waiting.\"}\n"
	tr := "version: 1\nresponses:\n" + strings.Repeat(call, n) + "  - content:\n      - {type: text, text: \"Done.\"}\n"
	orch := replayCapsuleInference(b, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0", "  max_turns: 50\n",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", tr)
	roost := startRoost(b, homeDir, "--spawn-allow", "local/orch")
	var fromExit, fromEnd []time.Duration
	for b.Loop() {
		r := runMur(b, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "delegate")
		if r.Code != 0 {
			b.Fatalf("run: %+v", r)
		}
		lines := traceLines(b, parseReady(b, r.Stdout).RecordsDir)
		var lastDelegation trace.Line
		for _, l := range lines {
			switch l.EventType {
			case trace.TypeDelegation:
				lastDelegation = l
			case trace.TypeTaskContinued:
				fromExit = append(fromExit, time.Duration(l.Timestamp-lastDelegation.Timestamp)*time.Millisecond)
			}
		}
		for _, ds := range byType(lines, trace.TypeDelegationStart) {
			cl := traceLines(b, childRecords(b, homeDir, ds.Str("child_workdir")))
			end := cl[len(cl)-1]
			for _, c := range byType(lines, trace.TypeTaskContinued) {
				if strings.Contains(string(c.Fields["delegations"]), ds.Str("delegation_id")) {
					fromEnd = append(fromEnd, time.Duration(c.Timestamp-end.Timestamp)*time.Millisecond)
				}
			}
		}
	}
	if len(fromExit) == 0 || len(fromEnd) == 0 {
		b.Fatal("no continuation measured")
	}
	slices.Sort(fromExit)
	slices.Sort(fromEnd)
	b.ReportMetric(float64(fromExit[len(fromExit)/2].Milliseconds()), "ms-p50-exit-to-continuation")
	b.ReportMetric(float64(fromExit[len(fromExit)-1].Milliseconds()), "ms-max-exit-to-continuation")
	b.ReportMetric(float64(fromEnd[len(fromEnd)/2].Milliseconds()), "ms-p50-session_end-to-continuation")
}
