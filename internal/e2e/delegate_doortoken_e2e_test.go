package e2e_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/trace"
)

// childDoorAuth is a worker whose door is authenticated
// (network.authentication, §22.8): its parent must present the operator
// token it minted for the child on every request to that door.
const childDoorAuth = "network:\n  authentication:\n    scheme: bearer\n"

// TestDelegateChildDoorTokenOk: a parent delegating to a child whose
// manifest declares network.authentication delivers the task through the
// child's authenticated door with the token it minted and handed in the
// approval line; the delegation completes ok.
func TestDelegateChildDoorTokenOk(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", childDoorAuth+"lifecycle:\n  after_task: exit\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", orchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")

	r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "delegate it")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	dl := byType(lines, trace.TypeDelegation)
	if len(dl) != 1 {
		t.Fatalf("delegation lines: %s", types(lines))
	}
	if dl[0].Str("outcome") != "ok" {
		t.Fatalf("delegation outcome %q: %s", dl[0].Str("outcome"), dl[0].Str("reason"))
	}
	got, _ := os.ReadFile(filepath.Join(rd.RecordsDir, "out", "result.txt"))
	if string(got) != "The worker reported back." {
		t.Errorf("result.txt %q", got)
	}
	ds := byType(lines, trace.TypeDelegationStart)
	if len(ds) != 1 {
		t.Fatalf("delegation_start: %s", types(lines))
	}
	crec := childRecords(t, homeDir, ds[0].Str("child_workdir"))
	cl := traceLines(t, crec)
	if rcv := byType(cl, "a2a_task_received"); len(rcv) != 1 || rcv[0].Str("origin") != "delegation" {
		t.Errorf("the child's a2a_task_received: %v\n%s", rcv, types(cl))
	}
	if strings.Contains(r.Stdout+r.Stderr, "mdt1.") {
		t.Errorf("the parent's output shows a door token:\n%s\n%s", r.Stdout, r.Stderr)
	}
	if f := filesHolding(t, "mdt1.", homeDir, base); len(f) != 0 {
		t.Errorf("a door token was left in %v", f)
	}
}

// TestDelegateChildDoorTokenRefusalsAndStop: while the child runs, its
// door refuses a request with no token (401 unauthenticated) and one with
// another token (401 invalid_token); the token the parent minted is in the
// child's 0600 running record and in no other file of either session, the
// door answers it, and mur stop presents it (murmur.StopSession, no signal).
func TestDelegateChildDoorTokenRefusalsAndStop(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", childDoorAuth+"lifecycle:\n  after_task: sleep\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", orchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	cmd, out, stderr := startMurEnv(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "delegate it")
	rd := readReady(t, out)

	// The child took its task: the parent waits on it, and the child's
	// answer is written (after_task: sleep keeps it running).
	waitFor(t, "the parent to wait on its delegation", func() bool {
		return len(byType(traceLines(t, rd.RecordsDir), trace.TypeTaskWaiting)) > 0
	})
	var child running.Entry
	waitFor(t, "the child's running record", func() bool {
		recs, _ := running.Scan(home.Running(homeDir))
		for _, e := range recs {
			if e.Record.SpawnedBy == rd.SessionID {
				child = e
				return true
			}
		}
		return false
	})
	waitFor(t, "the child's answer", func() bool {
		_, err := os.Stat(filepath.Join(child.Record.RecordsDir, "out", "result.txt"))
		return err == nil
	})
	tok := child.Record.DoorToken
	if !strings.HasPrefix(tok, "mdt1.") || len(tok) != len("mdt1.")+43 {
		t.Fatalf("the child's running record holds door_token %q", tok)
	}
	if st, err := os.Stat(child.File); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("running record %v %v", st, err)
	}
	if f := filesHolding(t, tok, homeDir, base); len(f) != 1 || f[0] != child.File {
		t.Errorf("the child's door token is in %v, want only %s", f, child.File)
	}

	url := "http://" + *child.Record.URL + "/"
	get := `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"tsk_00000000000000000000000000000000"}}`
	const realm = `Bearer realm="local/worker"`
	other := "mdt1." + strings.Repeat("A", 43)
	for _, c := range []struct {
		name      string
		headers   map[string][]string
		status    int
		challenge string
		want      string
	}{
		{"no token", nil, 401, realm, `{"error":"unauthenticated","message":"this door answers only requests that carry Authorization: Bearer <token>"}`},
		{"another token", map[string][]string{"Authorization": {"Bearer " + other}}, 401, realm + `, error="invalid_token"`, `{"error":"invalid_token","message":"the bearer token was not issued for this door"}`},
	} {
		a := call(t, url, c.headers, get)
		if a.status != c.status || strings.TrimSpace(a.body) != c.want || a.header.Get("Www-Authenticate") != c.challenge {
			t.Errorf("%s: %d %q %q, want %d %q %q", c.name, a.status, a.header.Get("Www-Authenticate"), a.body, c.status, c.challenge, c.want)
		}
	}
	if a := call(t, url, map[string][]string{"Authorization": {"Bearer " + tok}}, get); a.status != 200 || !strings.Contains(a.body, `"code":-32001`) {
		t.Errorf("the parent's token: %d %s", a.status, a.body)
	}

	r := runMur(t, homeDir, base, nil, "stop", "--json", child.Record.SessionID)
	var stop struct {
		State     string   `json:"state"`
		Signalled []string `json:"signalled"`
	}
	if r.Code != 0 || json.Unmarshal([]byte(r.Stdout), &stop) != nil || stop.State != "stopped" || len(stop.Signalled) != 0 {
		t.Fatalf("mur stop: %+v", r)
	}
	waitFor(t, "the child to end", func() bool { return gone(child.Record.PID) })
	// The child's outcome reaches the parent, whose task then ends.
	if err := cmd.Wait(); err != nil {
		t.Fatalf("parent: %v\n%s", err, stderr.String())
	}
	// Read once the parent has exited: its stderr is written until then.
	if strings.Contains(stderr.String(), tok) {
		t.Errorf("the parent's stderr shows the child's door token")
	}
	if f := filesHolding(t, tok, homeDir, base); len(f) != 0 {
		t.Errorf("the child's door token outlived its session in %v", f)
	}
	if dl := byType(traceLines(t, rd.RecordsDir), trace.TypeDelegation); len(dl) != 1 {
		t.Errorf("delegation lines %v", dl)
	}
}

// filesHolding lists the regular files under the roots that hold s.
func filesHolding(t *testing.T, s string, roots ...string) []string {
	t.Helper()
	var found []string
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(s)) {
				found = append(found, p)
			}
			return nil
		})
	}
	return found
}

// TestDelegateBadDoorToken: an approval line whose door_token is not an
// operator token refuses the launch with E-RUN-020 before any session
// exists, without quoting the token.
func TestDelegateBadDoorToken(t *testing.T) {
	t.Parallel()
	homeDir, base := t.TempDir(), t.TempDir()
	worker := replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", childDoorAuth, workerTranscript)
	bad := "mdt1." + strings.Repeat("x", 42) + "+"
	cmd := murCmdEnv(t, homeDir, worker, []string{"MURMUR_ROOST_URL=http://127.0.0.1:1"}, "run", "--json", "--spawn-approval-stdin")
	cmd.Stdin = strings.NewReader(`{"approval":"msa1.x","parent_tier":"advisory","door_token":"` + bad + `"}` + "\n")
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	const says = "--spawn-approval-stdin: the line's door_token is not an operator token (mdt1. and the base64url, no padding, of 32 bytes)"
	if err == nil || !jsonErrorOnly(so.String(), "E-RUN-020") || !strings.Contains(se.String(), says) {
		t.Fatalf("%v: stdout %q stderr %q", err, so.String(), se.String())
	}
	if strings.Contains(so.String()+se.String(), bad) {
		t.Errorf("the refusal quotes the token")
	}
	if m := sessionsUnder(homeDir); len(m) != 0 {
		t.Errorf("sessions were made: %v", m)
	}
}

// TestPlanCapsuleStepAuthenticatedChild: a plan's capsule step delivers
// its task to a child whose door declares network.authentication and
// reads the answer with GetTask, both with the token the parent minted.
func TestPlanCapsuleStepAuthenticatedChild(t *testing.T) {
	t.Parallel()
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", childDoorAuth+"lifecycle:\n  after_task: sleep\n", workerTranscript)
	p := jsonObj{"id": "ask", "steps": []jsonObj{
		{"id": "ask", "capsule": "worker", "input": jsonObj{"version": "1.0.0", "task": "find three things"}},
	}}
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  plan:\n    submit: true\n  spawn:\n    allow: [local/worker]\n", planTranscript(t, p))
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "delegate by plan")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	lines := traceLines(t, parseReady(t, r.Stdout).RecordsDir)
	_, ends := stepLines(lines, "ask")
	if ends["ask"].Str("status") != "success" || ends["ask"].Int("output_bytes") != int64(len("The report has three findings.")) {
		t.Fatalf("step ask: %v\n%s", ends["ask"].Fields, types(lines))
	}
	waitFor(t, "the child to end", func() bool {
		recs, _ := os.ReadDir(home.Running(homeDir))
		return len(recs) == 0
	})
	if f := filesHolding(t, "mdt1.", homeDir, base); len(f) != 0 {
		t.Errorf("a door token was left in %v", f)
	}
}

// TestDelegateChildWithoutTheParentToken: a child that did not take the
// parent's door_token (a mur between them strips it from the approval
// line) makes its own; its door refuses the parent's delivery, and the
// delegation fails at once with the door's refusal, not after the
// delivery bound's retries with an HTTP status alone.
func TestDelegateChildWithoutTheParentToken(t *testing.T) {
	t.Parallel()
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", childDoorAuth+"lifecycle:\n  after_task: exit\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", orchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	strip := filepath.Join(base, "strip-mur")
	os.WriteFile(strip, []byte("#!/bin/sh\nsed 's/,\"door_token\":\"[^\"]*\"//' | exec "+murBin(t)+" \"$@\"\n"), 0o755)
	r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost, "MURMUR_MUR_BINARY=" + strip}, "run", "--json", "--task", "delegate it")
	lines := traceLines(t, parseReady(t, r.Stdout).RecordsDir)
	dl := byType(lines, trace.TypeDelegation)
	const want = "worker@1.0.0 could not be started: the child did not accept its task: its door refused the task: HTTP 401 invalid_token: the bearer token was not issued for this door"
	if len(dl) != 1 || dl[0].Str("outcome") != "failed" || dl[0].Str("reason") != want {
		t.Fatalf("delegation lines %d, %s\n%+v", len(dl), types(lines), r)
	}
}
