package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/driver/fakeprovider"
	"github.com/murmur-go/murmur/internal/trace"
)

// standInEnv selects a stand-in child: a process the parent launches in
// place of mur, which misbehaves the way its name says. It is this test
// binary itself, started through a wrapper script (the parent builds the
// child's environment from nothing, so the selection rides the script).
const standInEnv = "MUR_TEST_STANDIN"

func init() {
	mode := os.Getenv(standInEnv)
	if mode == "" {
		return
	}
	os.WriteFile(os.Getenv(standInEnv+"_PIDFILE"), []byte(strconv.Itoa(os.Getpid())), 0o600)
	bufio.NewReader(os.Stdin).ReadString('\n') // the approval line
	ready := func(addr string) {
		fmt.Printf(`{"url":%q,"pid":%d,"session_id":"ses_00000000000000000000000000000001","name":"worker","version":"1.0.0","workdir":".","records_dir":"."}`+"\n", addr, os.Getpid())
	}
	switch mode {
	case "never-binds": // its --json line names a port it holds bound and never listens on
		// (a port closed again could be any other test's listener by the
		// time the parent dials it)
		fd, _ := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
		syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
		sa, _ := syscall.Getsockname(fd)
		ready(fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port))
	case "foreign-door": // its --json line names a door that serves another session
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("content-type", "application/json")
			if r.Method == http.MethodGet {
				fmt.Fprint(w, `{"name":"other","capabilities":{"extensions":[{"uri":"urn:other","params":{"sessionId":"ses_00000000000000000000000000000002"}}]}}`)
				return
			}
			var req struct{ ID json.RawMessage }
			json.NewDecoder(r.Body).Decode(&req)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"task":{"id":"tsk_1","contextId":"ctx_1","status":{"state":"TASK_STATE_SUBMITTED"}}}}`, req.ID)
		}))
		defer srv.Close()
		ready(strings.TrimPrefix(srv.URL, "http://"))
	case "never-accepts": // it listens and never accepts a connection
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		ready(ln.Addr().String())
		defer ln.Close()
	case "exits-early": // it exits before any --json line
		os.Exit(3)
	case "garbage": // its first line is not a --json line
		fmt.Println("hello from a child that is not mur")
	}
	time.Sleep(time.Hour)
	os.Exit(0)
}

// standIn writes the wrapper that starts this binary as a stand-in child
// in mode; the stand-in writes its pid to the returned file.
func standIn(t *testing.T, dir, mode string) (bin, pidFile string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, pidFile = filepath.Join(dir, "standin-"+mode), filepath.Join(dir, mode+".pid")
	os.WriteFile(bin, []byte(fmt.Sprintf("#!/bin/sh\n%s=%s %s_PIDFILE=%s exec %s \"$@\"\n", standInEnv, mode, standInEnv, pidFile, exe)), 0o755)
	return bin, pidFile
}

// TestDelegateChildThatNeverStarts: a child that exits before its --json
// line, prints something else, never binds the door its line names, or
// binds and never accepts fails the call in the same turn with status
// failed and an output saying why, and is stopped and reaped; the session
// goes on; so does one whose address is a door serving another session
// (the task goes to no door but the child's). The parents run at once
// (three of them wait out the 30 s delivery bound).
func TestDelegateChildThatNeverStarts(t *testing.T) {
	t.Parallel()
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: exit\n", workerTranscript)
	cases := []struct{ mode, output string }{
		{"exits-early", "worker@1.0.0 could not be started: the child exited before it was ready"},
		{"garbage", `worker@1.0.0 could not be started: the child's first line is not a --json ready line: "hello from a child that is not mur"`},
		{"never-binds", "worker@1.0.0 could not be started: the child did not accept its task: "},
		{"never-accepts", "worker@1.0.0 could not be started: the child did not accept its task: "},
		{"foreign-door", "worker@1.0.0 could not be started: the child did not accept its task: the door at its address answers as session ses_00000000000000000000000000000002, not its ses_00000000000000000000000000000001"},
	}
	type run struct {
		fp      *fakeprovider.Server
		pidFile string
		cmd     *exec.Cmd
		rd      ready
		stderr  fmt.Stringer
	}
	runs := make([]run, len(cases))
	allow := []string{}
	for i := range cases {
		fp := fakeProvider(t, fakeprovider.Anthropic)
		fp.Push(delegateReply("1.0.0", "answer", "worker"), fakeprovider.Reply{Text: []string{"It did not start."}})
		name := "orch" + strconv.Itoa(i)
		fakeModelCapsule(t, homeDir, filepath.Join(base, name), name, "0.1.0", "capabilities:\n  spawn:\n    allow: [local/worker]\n", fp)
		allow = append(allow, "--spawn-allow", "local/"+name)
		runs[i].fp = fp
	}
	roost := startRoost(t, homeDir, allow...)
	for i, c := range cases {
		bin, pidFile := standIn(t, base, c.mode)
		cmd, out, stderr := startMurEnv(t, homeDir, filepath.Join(base, "orch"+strconv.Itoa(i)),
			[]string{"MURMUR_ROOST_URL=" + roost, fakeKey, "MURMUR_MUR_BINARY=" + bin}, "run", "--json", "--task", "delegate it")
		runs[i].cmd, runs[i].pidFile, runs[i].stderr = cmd, pidFile, stderr
		runs[i].rd = readReady(t, out)
	}
	for i, c := range cases {
		r := runs[i]
		if err := r.cmd.Wait(); err != nil {
			t.Errorf("%s: the parent: %v; stderr %s", c.mode, err, r.stderr)
			continue
		}
		reqs := r.fp.Requests()
		if len(reqs) != 2 {
			t.Errorf("%s: model calls %d", c.mode, len(reqs))
			continue
		}
		res := lastMessageText(t, reqs[1])
		j := strings.Index(res, "{")
		var out map[string]string
		if j < 0 || json.Unmarshal([]byte(res[j:strings.LastIndex(res, "}")+1]), &out) != nil {
			t.Errorf("%s: tool result %q", c.mode, res)
			continue
		}
		if out["status"] != "failed" || !strings.HasPrefix(out["output"], c.output) || out["child_workdir"] != "" {
			t.Errorf("%s: result %v, want output starting %q", c.mode, out, c.output)
		}
		lines := traceLines(t, r.rd.RecordsDir)
		if dl := byType(lines, trace.TypeDelegation); len(dl) != 1 || dl[0].Str("outcome") != "failed" || len(byType(lines, trace.TypeDelegationStart)) != 0 {
			t.Errorf("%s: trace %s %v", c.mode, types(lines), dl)
		}
		b, err := os.ReadFile(r.pidFile)
		pid, _ := strconv.Atoi(string(b))
		if err != nil || pid == 0 || !gone(pid) {
			t.Errorf("%s: the stand-in child (pid %d, %v) outlived the failed call", c.mode, pid, err)
		}
	}
}

// TestDelegateOldCompletionAfterRestart: a parent killed while its child
// works leaves the child's completion undeliverable (recorded, with the
// reason, nothing lost); the same completion sent to the next session of
// that capsule is refused -31001 naming both sessions. (The door's port is
// OS-assigned, so the restarted parent is reached at its own address.)
func TestDelegateOldCompletionAfterRestart(t *testing.T) {
	t.Parallel()
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: sleep\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\nlifecycle:\n  after_task: sleep\n", orchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	env := []string{"MURMUR_ROOST_URL=" + roost}
	cmd, out, stderr := startMurEnv(t, homeDir, orch, env, "run", "--json", "--task", "delegate it")
	old := readReady(t, out)
	ds := waitLines(t, old.RecordsDir, trace.TypeDelegationStart, 1, stderr)[0]
	waitLines(t, old.RecordsDir, trace.TypeTaskWaiting, 1, stderr)
	child := childOf(t, homeDir, old.SessionID)
	cmd.Process.Kill()
	cmd.Wait()
	waitFor(t, "the child to wind down", func() bool { return gone(child.PID) })
	rec := readCompletion(t, child.RecordsDir)
	if rec["reported_by"] != "child" || rec["delivered"] != false || rec["delivery_error"] == nil || rec["delegation_id"] != ds.Str("delegation_id") {
		t.Errorf("the orphaned child's completion.json %v", rec)
	}
	// Its stderr was a pipe to the dead parent: the line saying the
	// delivery failed is in its bootstrap.log.
	if b, _ := os.ReadFile(filepath.Join(child.RecordsDir, "logs", "bootstrap.log")); !strings.Contains(string(b), "the completion of "+ds.Str("delegation_id")+" could not be delivered") {
		t.Errorf("bootstrap.log %q", b)
	}

	_, out2, _ := startMurEnv(t, homeDir, orch, env, "run", "--json")
	next := readReady(t, out2)
	m := completion(t, "http://"+*next.URL, old.SessionID, ds.Str("delegation_id"))
	e, _ := m["error"].(map[string]any)
	data, _ := json.Marshal(e["data"])
	if e == nil || e["code"] != float64(-31001) ||
		e["message"] != "completion is addressed to session "+old.SessionID+", which is not the session running here" ||
		!strings.Contains(string(data), `"addressed_session":"`+old.SessionID+`"`) || !strings.Contains(string(data), `"running_session":"`+next.SessionID+`"`) ||
		!strings.Contains(string(data), "COMPLETION_MISADDRESSED") || !strings.Contains(string(data), "murmur.nexus") {
		t.Errorf("old completion at the new session: %v", m)
	}
}

// TestDelegateBadRoostURL: a blank MURMUR_ROOST_URL is E-RUN-019; one that
// is not an address, one nothing answers at, and one where something other
// than the daemon answers (HTML, or JSON with no credential) are E-RUN-043
// naming the URL; the run prints no --json line and leaves nothing running.
func TestDelegateBadRoostURL(t *testing.T) {
	t.Parallel()
	homeDir, base := t.TempDir(), t.TempDir()
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", orchTranscript)
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("<html>not the daemon</html>"))
	}))
	t.Cleanup(garbage.Close)
	jsonish := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"unexpected": true}`))
	}))
	t.Cleanup(jsonish.Close)
	for _, c := range []struct{ url, code, says string }{
		{"   ", "E-RUN-019", "MURMUR_ROOST_URL is not set"},
		{"not a url", "E-RUN-043", "not a url"},
		{"http://127.0.0.1:1", "E-RUN-043", "http://127.0.0.1:1"},
		{garbage.URL, "E-RUN-043", garbage.URL},
		{jsonish.URL, "E-RUN-043", jsonish.URL},
	} {
		r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + c.url}, "run", "--json", "--task", "x")
		if r.Code == 0 || !jsonErrorOnly(r.Stdout, c.code) || !strings.Contains(r.Stderr, c.code) || !strings.Contains(r.Stderr, c.says) {
			t.Errorf("MURMUR_ROOST_URL=%q: %+v", c.url, r)
		}
	}
	if m, _ := os.ReadDir(filepath.Join(homeDir, ".murmur", "running")); len(m) != 0 {
		t.Errorf("a session was left running: %v", m)
	}
}

// TestDelegateBadSpawnerVariables: MURMUR_SPAWNER that is not JSON, names
// another session or lacks a field, and a lifeline naming fd 1, a closed
// fd, a file or a pipe's write end, refuse the launch with E-RUN-020
// before any session exists.
func TestDelegateBadSpawnerVariables(t *testing.T) {
	t.Parallel()
	homeDir, base := t.TempDir(), t.TempDir()
	worker := replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: exit\n", workerTranscript)
	f, _ := os.Create(filepath.Join(base, "a-file"))
	defer f.Close()
	pr, pw, _ := os.Pipe()
	defer pr.Close()
	defer pw.Close()
	for _, c := range []struct {
		name string
		env  []string
		says string
		// files are the child's fds 3, 4, …
		files []*os.File
	}{
		{name: "spawner not JSON", env: []string{"MURMUR_SPAWNER=not json"}, says: "MURMUR_SPAWNER is not a spawner handle"},
		{name: "spawner names another session", env: []string{`MURMUR_SPAWNER={"url":"http://127.0.0.1:1","session_id":"tsk_1","context_id":"c","delegation_id":"dlg_1"}`}, says: "session_id is not a ses_ id"},
		{name: "spawner lacks a field", env: []string{`MURMUR_SPAWNER={"url":"http://127.0.0.1:1","session_id":"ses_1","delegation_id":"dlg_1"}`}, says: "MURMUR_SPAWNER is not a spawner handle"},
		{name: "lifeline fd 1", env: []string{"MURMUR_SPAWNER_LIFELINE=1"}, says: "numbered 3 or above"},
		{name: "lifeline closed fd", env: []string{"MURMUR_SPAWNER_LIFELINE=9"}, says: "the descriptor is not open"},
		{name: "lifeline a file", env: []string{"MURMUR_SPAWNER_LIFELINE=3"}, files: []*os.File{f}, says: "the descriptor is not a pipe"},
		{name: "lifeline a pipe's write end", env: []string{"MURMUR_SPAWNER_LIFELINE=3"}, files: []*os.File{pw}, says: "not a pipe's read end"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := murCmdEnv(t, homeDir, worker, c.env, "run", "--json", "--task", "x")
			cmd.ExtraFiles = c.files
			var so, se strings.Builder
			cmd.Stdout, cmd.Stderr = &so, &se
			err := cmd.Run()
			if err == nil || !jsonErrorOnly(so.String(), "E-RUN-020") || !strings.Contains(se.String(), "E-RUN-020") || !strings.Contains(se.String(), c.says) {
				t.Errorf("%v: stdout %q stderr %q", err, so.String(), se.String())
			}
		})
	}
	if m := sessionsUnder(homeDir); len(m) != 0 {
		t.Errorf("sessions were made: %v", m)
	}
	if m, _ := os.ReadDir(filepath.Join(homeDir, ".murmur", "running")); len(m) != 0 {
		t.Errorf("running records were made: %v", m)
	}
}
