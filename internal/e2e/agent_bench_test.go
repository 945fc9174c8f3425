package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
)

// sleepLifecycle keeps an agent session serving its door after each task.
const sleepLifecycle = "lifecycle:\n  after_task: sleep\n"

// murCmd is a `mur` process in dir with a private HOME, not yet started.
func murCmd(b *testing.B, homeDir, dir string, args ...string) *exec.Cmd {
	return murCmdEnv(b, homeDir, dir, nil, args...)
}

// startToReady starts cmd and returns, once its --json line is read, the
// time from just before the start to that line, and the line.
func startToReady(b *testing.B, cmd *exec.Cmd) (time.Duration, ready, *bufio.Reader) {
	b.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	br := bufio.NewReader(out)
	line, err := br.ReadString('\n')
	d := time.Since(t0)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		b.Fatalf("%v: reading the --json line: %v", cmd.Args, err)
	}
	return d, parseReady(b, line), br
}

// terminate SIGTERMs a sleeping agent session and waits for its exit 143.
func terminate(b *testing.B, cmd *exec.Cmd) {
	b.Helper()
	cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 143 {
		b.Fatalf("exit after SIGTERM: %v", err)
	}
}

// reportMedian reports the median of d in ms under unit.
func reportMedian(b *testing.B, d []time.Duration, unit string) {
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, unit)
}

// BenchmarkAgentStartToReady: process start to the --json line of a
// replay-driven agent capsule (after_task: sleep) declaring the Go-kit echo
// tool, warm caches (one run first compiles the tool); each session is then
// SIGTERMed. The figure covers staging (artifacts, driver, tool inventory,
// task.md), the door's listener, MURMUR.md, session_start and the running
// record.
func BenchmarkAgentStartToReady(b *testing.B) {
	homeDir, base := b.TempDir(), b.TempDir()
	proj := agentProject(b, homeDir, base, sleepLifecycle, agentTranscript)
	shareCompileCache(b, homeDir)
	once := func() time.Duration {
		cmd := murCmd(b, homeDir, proj, "run", "--json")
		d, _, _ := startToReady(b, cmd)
		terminate(b, cmd)
		return d
	}
	once() // warm: the tool's compile cache, the page cache
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d = append(d, once())
	}
	b.StopTimer()
	reportMedian(b, d, "median-ms")
}

// BenchmarkScriptStartToReady: the peer of BenchmarkAgentStartToReady, process
// start to the --json line of the cached WAT script capsule
// (BenchmarkMurRunCachedWAT times the whole process).
func BenchmarkScriptStartToReady(b *testing.B) {
	homeDir, base := b.TempDir(), b.TempDir()
	proj := capsule(b, filepath.Join(base, "bench"), "name: bench\nversion: 1.0.0\n", fixture(b, "ok.wat"))
	wd := filepath.Join(base, "wd")
	shareCompileCache(b, homeDir)
	once := func() time.Duration {
		cmd := murCmd(b, homeDir, proj, "run", "--json", "--workdir", wd)
		d, _, _ := startToReady(b, cmd)
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		return d
	}
	once()
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d = append(d, once())
	}
	b.StopTimer()
	reportMedian(b, d, "median-ms")
}

// oneTurnAnswers is a transcript of n one-turn answers (no tool call).
func oneTurnAnswers(n int) string {
	var sb strings.Builder
	sb.WriteString("version: 1\nresponses:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "  - content: [{type: text, text: \"answer %d\"}]\n", i)
	}
	return sb.String()
}

// BenchmarkDoorSendMessageCompleted: SendMessage → TASK_STATE_COMPLETED for a
// one-turn replay task through the door of a real `mur run` process
// (after_task: sleep, task_acceptance single), with a2a-go's client over
// loopback, one request at a time; the transcript holds one answer per
// iteration. Reports p50/p99 of the round trip. The in-process peer is
// internal/door's BenchmarkSendMessageCompleted (an immediate runner).
func BenchmarkDoorSendMessageCompleted(b *testing.B) {
	homeDir, base := b.TempDir(), b.TempDir()
	proj := agentProject(b, homeDir, base, sleepLifecycle, oneTurnAnswers(b.N+1))
	shareCompileCache(b, homeDir)
	cmd := murCmd(b, homeDir, proj, "run", "--json")
	_, rd, _ := startToReady(b, cmd)
	defer terminate(b, cmd)
	ctx := context.Background()
	c, err := a2aclient.NewFromEndpoints(ctx,
		[]*a2a.AgentInterface{a2a.NewAgentInterface("http://"+*rd.URL, a2a.TransportProtocolJSONRPC)})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Destroy()
	send := func(i int) {
		res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{
			Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello")),
		})
		if err != nil {
			b.Fatal(err)
		}
		task, ok := res.(*a2a.Task)
		if !ok || task.Status.State != a2a.TaskStateCompleted {
			b.Fatalf("SendMessage %d answered %#v", i, res)
		}
	}
	send(-1) // warm: the connection, the first task
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		send(i)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkLoopbackHTTPAnchor is the door benchmark's anchor: a bare HTTP
// exchange over loopback, one at a time on a kept connection, with bodies
// of the size of a one-turn SendMessage and its COMPLETED task (the server
// reads the request and writes a fixed answer; net/http on both sides, in
// this process). Reports p50/p99; run it with BenchmarkDoorSendMessageCompleted
// so both see the same load.
func BenchmarkLoopbackHTTPAnchor(b *testing.B) {
	answer := []byte(`{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 36) + `","result":{"task":{` + strings.Repeat(`"x":"yyyyyyyyyyyyyyyyyyyy",`, 28) + `"z":1}}}` + "\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	defer srv.Close()
	body := []byte(`{"jsonrpc":"2.0","id":"` + strings.Repeat("i", 36) + `","method":"SendMessage","params":{"message":{"messageId":"` +
		strings.Repeat("m", 36) + `","parts":[{"text":"hello"}],"role":"ROLE_USER"}}}`)
	c := srv.Client()
	send := func() {
		res, err := c.Post(srv.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, res.Body); err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
	}
	send() // warm: the connection
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		send()
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// vmRSS reads a process's resident set size in KiB from /proc/<pid>/status.
func vmRSS(b *testing.B, pid int) int { return procStatus(b, pid, "VmRSS") }

// procStatus reads one "<field>: N kB" value of /proc/<pid>/status.
func procStatus(b *testing.B, pid int, field string) int {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				b.Fatalf("%s line %q: %v", field, l, err)
			}
			return kb
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// BenchmarkAgentIdleRSS: the resident set of a sleeping agent session (the
// replay agent with the Go-kit echo tool, after_task: sleep, no task yet) 1 s
// after its --json line, and again after one task through the door and 1 s
// more; reports the medians in MiB. The time per op is meaningless (the
// sleeps).
func BenchmarkAgentIdleRSS(b *testing.B) {
	homeDir, base := b.TempDir(), b.TempDir()
	proj := agentProject(b, homeDir, base, sleepLifecycle, oneTurnAnswers(2))
	shareCompileCache(b, homeDir)
	var idle, anon, file, after []int
	for i := 0; i < b.N; i++ {
		cmd := murCmd(b, homeDir, proj, "run", "--json")
		_, rd, _ := startToReady(b, cmd)
		time.Sleep(time.Second)
		idle = append(idle, vmRSS(b, cmd.Process.Pid))
		anon = append(anon, procStatus(b, cmd.Process.Pid, "RssAnon"))
		file = append(file, procStatus(b, cmd.Process.Pid, "RssFile"))
		c, err := a2aclient.NewFromEndpoints(context.Background(),
			[]*a2a.AgentInterface{a2a.NewAgentInterface("http://"+*rd.URL, a2a.TransportProtocolJSONRPC)})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.SendMessage(context.Background(), &a2a.SendMessageRequest{
			Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))}); err != nil {
			b.Fatal(err)
		}
		c.Destroy()
		time.Sleep(time.Second)
		after = append(after, vmRSS(b, cmd.Process.Pid))
		terminate(b, cmd)
	}
	mib := func(kb []int) float64 { slices.Sort(kb); return float64(kb[len(kb)/2]) / 1024 }
	b.ReportMetric(mib(idle), "idle-MiB")
	b.ReportMetric(mib(anon), "idle-anon-MiB")
	b.ReportMetric(mib(file), "idle-file-MiB")
	b.ReportMetric(mib(after), "after-task-MiB")
}

// toolTurnAnswers is a replay transcript of n tasks, each one tool call of
// the echo tool then an answer.
func toolTurnAnswers(n int) string {
	var sb strings.Builder
	sb.WriteString("version: 1\nresponses:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "  - content: [{type: tool_call, id: c%d, name: echo, input: {message: m%d}}]\n", i, i)
		fmt.Fprintf(&sb, "  - content: [{type: text, text: \"answer %d\"}]\n", i)
	}
	return sb.String()
}

// BenchmarkAgentLongSessionRSS: the resident set of one sleeping agent
// session over many tasks through its door, each a call of the Go-kit echo
// tool and an answer: VmRSS after the first tenth of the tasks and after all
// of them, and the peak (VmHWM), in MiB. Run with -benchtime 1x;
// MURMUR_BENCH_TASKS sets the tasks (default 2,000), MURMUR_BENCH_GOGC a
// GOGC for mur (which turns off its start-up GC setting).
func BenchmarkAgentLongSessionRSS(b *testing.B) {
	tasks := 2000
	if v, err := strconv.Atoi(os.Getenv("MURMUR_BENCH_TASKS")); err == nil && v > 0 {
		tasks = v
	}
	for b.Loop() {
		homeDir, base := b.TempDir(), b.TempDir()
		proj := agentProject(b, homeDir, base, sleepLifecycle, toolTurnAnswers(tasks))
		shareCompileCache(b, homeDir)
		var env []string
		if g := os.Getenv("MURMUR_BENCH_GOGC"); g != "" {
			env = append(env, "GOGC="+g) // against the start-up GC setting (cmd/mur/gc.go)
		}
		cmd := murCmdEnv(b, homeDir, proj, env, "run", "--json")
		_, rd, _ := startToReady(b, cmd)
		ready := vmRSS(b, cmd.Process.Pid)
		ctx := context.Background()
		c, err := a2aclient.NewFromEndpoints(ctx,
			[]*a2a.AgentInterface{a2a.NewAgentInterface("http://"+*rd.URL, a2a.TransportProtocolJSONRPC)})
		if err != nil {
			b.Fatal(err)
		}
		var early int
		for i := 0; i < tasks; i++ {
			res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{
				Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello")),
			})
			if err != nil {
				b.Fatal(err)
			}
			if task, ok := res.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateCompleted {
				b.Fatalf("task %d answered %#v", i, res)
			}
			if i == tasks/10 {
				early = vmRSS(b, cmd.Process.Pid)
			}
		}
		late, peak := vmRSS(b, cmd.Process.Pid), procStatus(b, cmd.Process.Pid, "VmHWM")
		c.Destroy()
		terminate(b, cmd)
		b.ReportMetric(float64(ready)/1024, "MiB-at-ready")
		b.ReportMetric(float64(early)/1024, "MiB-after-a-tenth")
		b.ReportMetric(float64(late)/1024, "MiB-at-the-end")
		b.ReportMetric(float64(peak)/1024, "MiB-peak")
	}
}
