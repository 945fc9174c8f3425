package e2e_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/testbin"
	"github.com/murmur-go/murmur/internal/trace"
)

func newSessionID() string {
	var b [16]byte
	rand.Read(b[:])
	return "ses_" + hex.EncodeToString(b[:])
}

// roostStatus is GET /status/{id} at the real daemon.
func roostStatus(t *testing.T, roost, sid string) (status string, live int) {
	t.Helper()
	resp, err := http.Get(roost + "/status/" + sid)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Status string `json:"status"`
		Live   int    `json:"live_capsules"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /status/%s: %d %v", sid, resp.StatusCode, err)
	}
	return st.Status, st.Live
}

// TestRoostCeilingNotFilledByOtherUsers: another local user's credential-less
// registrations — answered, as any top-level registration is — are never
// counted toward the machine ceiling: no running record of theirs stands
// behind them in the daemon's running directory. Issue 22 item 4: four of
// them filled --max-live-capsules 2 and every delegation was refused until
// the daemon restarted.
func TestRoostCeilingNotFilledByOtherUsers(t *testing.T) {
	uid, gid := testbin.ThrowawayUser(t)
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: exit\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", orchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch", "--max-live-capsules", "2")

	var fake []string
	for range 4 {
		sid := newSessionID()
		body := fmt.Sprintf(`{"session_id":%q,"name":"local/orch","version":"0.1.0"}`, sid)
		cmd := exec.Command("curl", "-sS", "-w", "\n%{http_code}", "-H", "Content-Type: application/json", "-d", body, roost+"/register")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasSuffix(string(out), "\n200") || !strings.Contains(string(out), `"credential":"msc1.`) {
			t.Fatalf("register as uid %d: %v %s", uid, err, out)
		}
		fake = append(fake, sid)
	}
	if st, live := roostStatus(t, roost, fake[0]); st != "running" || live != 0 {
		t.Fatalf("after 4 registrations from uid %d: status %s, live_capsules %d; want running, 0", uid, st, live)
	}

	// The operator's own delegation is granted under the ceiling of 2.
	r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "delegate it")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	dl := byType(traceLines(t, parseReady(t, r.Stdout).RecordsDir), trace.TypeDelegation)
	if len(dl) != 1 || dl[0].Str("outcome") != "ok" {
		for _, l := range dl {
			t.Logf("delegation: %s %s", l.Str("outcome"), l.Str("reason"))
		}
		t.Fatalf("the delegation was not granted: %d delegation lines", len(dl))
	}
	if _, live := roostStatus(t, roost, fake[0]); live != 0 {
		t.Errorf("after the delegation ended: live_capsules %d, want 0", live)
	}
}

// TestRoostKilledParentStopsCounting: a registered parent killed with -9
// stops counting at the next census read — its record's process is watched
// from its registration — even after `mur ps` pruned its record; and the
// daemon reports it failed. Issue 22 item 4: it was still counted an hour
// later.
func TestRoostKilledParentStopsCounting(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: exit\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", orchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch", "--max-live-capsules", "2")

	// No task: the parent waits at its door, registered.
	cmd, out, stderr := startMurEnv(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json")
	rd := readReady(t, out)
	if st, live := roostStatus(t, roost, rd.SessionID); st != "running" || live != 1 {
		t.Fatalf("while it runs: status %s, live_capsules %d; want running, 1 (stderr %s)", st, live, stderr)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if r := runMur(t, homeDir, orch, nil, "ps"); !strings.Contains(r.Stderr, "pruned: "+rd.SessionID) {
		t.Fatalf("mur ps did not prune the killed session's record: %+v", r)
	}
	var st string
	var live int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, live = roostStatus(t, roost, rd.SessionID); st == "failed" && live == 0 {
			break
		}
	}
	if st != "failed" || live != 0 {
		t.Fatalf("after kill -9 and mur ps: status %s, live_capsules %d; want failed, 0", st, live)
	}

	// The slot is free: a new parent and its child fit under
	// --max-live-capsules 2, which the dead one would have filled.
	r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--task", "delegate it")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	dl := byType(traceLines(t, parseReady(t, r.Stdout).RecordsDir), trace.TypeDelegation)
	if len(dl) != 1 || dl[0].Str("outcome") != "ok" {
		t.Fatalf("delegation lines %v", dl)
	}
}
