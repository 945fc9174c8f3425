package cli_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/running"
)

// Item 18: mur run, like list, doctor and trace, finds its project's
// murmur.yaml in a parent directory when --manifest is not given.
func TestRunFindsTheManifestAbove(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "up"), "name: up\nversion: 1.0.0\n", fixture(t, "ok.wat"))
	sub := filepath.Join(proj, "src", "deep")
	os.MkdirAll(sub, 0o755)
	r := runMur(t, homeDir, sub, nil, "run", "--json")
	if r.Code != 0 {
		t.Fatalf("run from a subdirectory: %+v", r)
	}
	var rd ready
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.Stdout)), &rd); err != nil {
		t.Fatalf("ready line %q: %v", r.Stdout, err)
	}
	if want := filepath.Join(proj, "workdir", rd.SessionID); rd.Workdir != want {
		t.Errorf("workdir %s, want %s", rd.Workdir, want)
	}
	// trace, from the same subdirectory, finds the session.
	if r := runMur(t, homeDir, sub, nil, "trace", "show"); r.Code != 0 || !strings.Contains(r.Stdout, rd.SessionID) {
		t.Errorf("trace show after a run from below: %+v", r)
	}
	// No murmur.yaml anywhere above: the same refusal as before.
	if r := runMur(t, homeDir, t.TempDir(), nil, "run"); r.Code == 0 || !strings.Contains(r.Stderr, "E-MAN-020") {
		t.Errorf("run with no manifest: %+v", r)
	}
}

func TestTraceLs(t *testing.T) {
	homeDir, proj := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte("name: demo\nversion: 0.2.0\n"), 0o600)
	if r := runMur(t, homeDir, proj, nil, "trace", "ls"); r.Code != 0 || !strings.Contains(r.Stdout, "no recorded sessions") {
		t.Fatalf("empty trace ls: %+v", r)
	}
	older := ids.AtTime(ids.Session, time.Now().Add(-time.Hour))
	newer := ids.New(ids.Session)
	writeTrace(t, homeDir, proj, older, true, 2)
	writeTrace(t, homeDir, proj, newer, false, 1)
	r := runMur(t, homeDir, proj, nil, "trace", "ls")
	if r.Code != 0 {
		t.Fatalf("trace ls: %+v", r)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "@N SESSION CAPSULE STARTED ENDING" {
		t.Fatalf("trace ls:\n%s", r.Stdout)
	}
	for i, want := range []struct{ id, ending string }{{newer, "-"}, {older, "ok"}} {
		f := strings.Fields(lines[i+1])
		if len(f) != 5 || f[0] != "@"+string(rune('1'+i)) || f[1] != want.id || f[2] != "local/demo@0.2.0" || f[4] != want.ending {
			t.Errorf("row %d: %q, want %s ... %s", i+1, lines[i+1], want.id, want.ending)
		}
	}
	var rows []map[string]any
	r = runMur(t, homeDir, proj, nil, "trace", "ls", "--json")
	if err := json.Unmarshal([]byte(r.Stdout), &rows); err != nil || len(rows) != 2 || rows[0]["session_id"] != newer ||
		rows[1]["exit_status"] != "ok" || rows[0]["exit_status"] != nil {
		t.Errorf("trace ls --json: %v %+v", err, r)
	}
}

func TestJSONOnPsAndTraceShow(t *testing.T) {
	homeDir, proj := t.TempDir(), t.TempDir()
	r := runMur(t, homeDir, proj, nil, "ps", "--json")
	if r.Code != 0 || strings.TrimSpace(r.Stdout) != "[]" {
		t.Fatalf("ps --json with none: %+v", r)
	}
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	start, _ := running.ProcessStart(sleeper.Process.Pid)
	id := ids.New(ids.Session)
	running.Write(home.Running(homeDir), running.Record{SessionID: id, PID: sleeper.Process.Pid, ProcessStart: start,
		CapsuleName: "local/a", CapsuleVersion: "1.0.0", RecordsDir: "/r", Workdir: "/w",
		StartedAt: time.Now().UTC().Format(time.RFC3339)})
	r = runMur(t, homeDir, proj, nil, "ps", "--json")
	var ps []map[string]any
	if err := json.Unmarshal([]byte(r.Stdout), &ps); err != nil || len(ps) != 1 || ps[0]["session_id"] != id ||
		ps[0]["capsule"] != "local/a@1.0.0" || ps[0]["status"] != "running" || ps[0]["pid"] != float64(sleeper.Process.Pid) {
		t.Errorf("ps --json: %v %+v", err, r)
	}

	os.WriteFile(filepath.Join(proj, "murmur.yaml"), []byte("name: demo\nversion: 0.2.0\n"), 0o600)
	sid := ids.New(ids.Session)
	writeTrace(t, homeDir, proj, sid, true, 2)
	r = runMur(t, homeDir, proj, nil, "trace", "show", "--json")
	var sum struct {
		SessionID  string `json:"session_id"`
		Capsule    string `json:"capsule"`
		Ended      bool   `json:"ended"`
		ExitStatus string `json:"exit_status"`
		DurationMS int64  `json:"duration_ms"`
		ToolCalls  []struct {
			ToolName   string `json:"tool_name"`
			Status     string `json:"status"`
			DurationMS int64  `json:"duration_ms"`
		} `json:"tool_calls"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &sum); err != nil || r.Code != 0 {
		t.Fatalf("trace show --json: %v %+v", err, r)
	}
	if sum.SessionID != sid || sum.Capsule != "local/demo@0.2.0" || !sum.Ended || sum.ExitStatus != "ok" || sum.DurationMS != 1234 ||
		len(sum.ToolCalls) != 2 || sum.ToolCalls[1].ToolName != "echo1" || sum.ToolCalls[1].DurationMS != 11 {
		t.Errorf("trace show --json: %+v", sum)
	}
}

// The hints the issue found wrong: each names only what the command takes.
func TestHintsNameWhatTheCommandTakes(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	unreadable := filepath.Join(base, "unreadable")
	os.MkdirAll(unreadable, 0o755)
	os.WriteFile(filepath.Join(unreadable, "murmur.yaml"), []byte("name: x\n"), 0o000)
	nowasm := capsule(t, filepath.Join(base, "nowasm"), "name: nowasm\nversion: 1.0.0\n", nil)
	for _, tc := range []struct {
		dir     string
		args    []string
		code    string
		notHint string
	}{
		{t.TempDir(), []string{"doctor"}, "E-REG-017", "-g"},
		{unreadable, []string{"build"}, "E-MAN-020", "--manifest"},
		{nowasm, []string{"run"}, "E-RUN-003", "inference:"},
	} {
		if os.Geteuid() == 0 && tc.code == "E-MAN-020" {
			continue // root reads a 0000 file
		}
		r := runMur(t, homeDir, tc.dir, nil, tc.args...)
		_, hint, _ := strings.Cut(r.Stderr, "hint:")
		if r.Code == 0 || !strings.Contains(r.Stderr, "error["+tc.code+"]") || hint == "" || strings.Contains(hint, tc.notHint) {
			t.Errorf("mur %v: want %s with a hint not naming %q, got %+v", tc.args, tc.code, tc.notHint, r)
		}
	}
}
