package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/e2e"
	"github.com/murmur-go/murmur/internal/trace"
)

// containmentOf is session_start.effective_grants.containment.
func containmentOf(t *testing.T, start trace.Line) (declared, achieved string) {
	t.Helper()
	var eg struct {
		Containment struct{ Declared, Achieved string } `json:"containment"`
	}
	if err := json.Unmarshal(start.Fields["effective_grants"], &eg); err != nil {
		t.Fatalf("effective_grants %s: %v", start.Fields["effective_grants"], err)
	}
	return eg.Containment.Declared, eg.Containment.Achieved
}

// TestDelegateChildAtParentTier: a parent that declares no floor runs its
// commands at the host's strongest tier; the child it delegates to
// declares advisory, yet runs at the parent's tier (docs/delegation.md):
// its session_start records it, and its command cannot
// read /etc/shadow or a file of the parent's work folder.
func TestDelegateChildAtParentTier(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: /etc/shadow is the file the child must not read")
	}
	shadow, err := os.ReadFile("/etc/shadow")
	if err != nil || len(shadow) == 0 {
		t.Skipf("no /etc/shadow to read here: %v", err)
	}
	firstShadow := strings.SplitN(string(shadow), "\n", 2)[0]
	homeDir, base := t.TempDir(), t.TempDir()
	pwd := filepath.Join(base, "pwd")
	os.MkdirAll(pwd, 0o755)
	secret := filepath.Join(pwd, "secret.txt")
	os.WriteFile(secret, []byte("the parent's secret"), 0o644)
	worker := `version: 1
responses:
  - content:
      - {type: tool_call, id: call_sh, name: bash, input: {command: "echo ran > ran.txt; cat /etc/shadow > seen-shadow.txt 2>&1; cat ` + secret + ` > seen-secret.txt 2>&1"}}
  - content:
      - {type: text, text: "Looked around."}
`
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0",
		"capabilities:\n  containment: advisory\n  shell:\n    allow: [bash]\nlifecycle:\n  after_task: exit\n", worker)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  shell:\n    allow: [bash]\n  spawn:\n    allow: [local/worker]\n", orchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")

	r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost}, "run", "--json", "--workdir", pwd, "--task", "delegate it")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	rd := parseReady(t, r.Stdout)
	lines := traceLines(t, rd.RecordsDir)
	pDeclared, pTier := containmentOf(t, lines[0])
	if pDeclared != "none" {
		t.Fatalf("the parent declares %s, want none", pDeclared)
	}
	if pTier == "advisory" {
		t.Skip("this host delivers nothing above advisory, so no parent's tier can raise a child's")
	}
	ds := byType(lines, trace.TypeDelegationStart)
	if len(ds) != 1 {
		t.Fatalf("delegation_start: %s", types(lines))
	}
	wd := ds[0].Str("child_workdir")
	cstart := traceLines(t, childRecords(t, homeDir, wd))[0]
	if declared, achieved := containmentOf(t, cstart); declared != pTier || achieved != pTier {
		t.Errorf("the child (declaring advisory) runs at declared %s achieved %s; its parent's tier is %s", declared, achieved, pTier)
	}
	if b, err := os.ReadFile(filepath.Join(wd, "ran.txt")); err != nil || string(b) != "ran\n" {
		t.Fatalf("the child's command did not run: %q %v", b, err)
	}
	for file, leaked := range map[string]string{"seen-shadow.txt": firstShadow, "seen-secret.txt": "the parent's secret"} {
		b, _ := os.ReadFile(filepath.Join(wd, file))
		if strings.Contains(string(b), leaked) {
			t.Errorf("the child at %s read what it must not: %s holds %q", pTier, file, b)
		}
	}
}

// TestDelegateChildEnvBothLists: a name reaches the child only when both
// the child's and the parent's capabilities.env.allow list it and the
// parent's process holds it (docs/delegation.md); a name only the parent lists is absent from the child
// though the parent holds it.
func TestDelegateChildEnvBothLists(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0",
		"capabilities:\n  env:\n    allow: [BOTH_HELD, BOTH_UNSET]\nlifecycle:\n  after_task: exit\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n  env:\n    allow: [PARENT_ONLY, BOTH_HELD, BOTH_UNSET]\n", orchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	envFile := filepath.Join(base, "child.env")
	r := runMur(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost, "MURMUR_MUR_BINARY=" + envRecordingMur(t, base, envFile),
		"PARENT_ONLY=the-parents-own", "BOTH_HELD=shared", "UNLISTED=nobodys"}, "run", "--json", "--task", "delegate it")
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	if ds := byType(traceLines(t, parseReady(t, r.Stdout).RecordsDir), trace.TypeDelegationStart); len(ds) != 1 {
		t.Fatalf("no delegation started")
	}
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	var extra []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, _, _ := strings.Cut(l, "=")
		if !isRuntimeName(k) {
			extra = append(extra, l)
		}
	}
	sort.Strings(extra)
	if strings.Join(extra, " ") != "BOTH_HELD=shared" {
		t.Errorf("the child holds %v beside the runtime's names, want only BOTH_HELD=shared", extra)
	}
}

func isRuntimeName(k string) bool {
	for _, n := range runtimeNames {
		if n == k {
			return true
		}
	}
	return false
}

// netnsRefused runs the real mur in a user namespace of its own whose
// max_net_namespaces is 0: a host that refuses network namespaces, as a
// locked-down container does.
func netnsRefused(t *testing.T, homeDir, dir string, env []string, args ...string) murResult {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to map itself into a user namespace of its own")
	}
	if err := exec.Command("unshare", "-U", "-r", "true").Run(); err != nil {
		t.Skipf("unshare -U -r: %v", err)
	}
	shareCompileCache(t, homeDir)
	cmd := e2e.Command(t, "unshare", homeDir, dir, env, append([]string{"-U", "-r", "sh", "-c",
		`echo 0 > /proc/sys/user/max_net_namespaces && exec "$0" "$@"`, murBin(t)}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return murResult{Code: code, Stdout: stdout.String(), Stderr: stderr.String()}
}

// TestSpawnAllowNeedsNetNS: on a host that refuses network namespaces, a
// capsule that declares spawn.allow — with no shell tool — or shell.allow
// is refused with E-CAP-005 before its session exists (no session_start,
// no records); a capsule that declares neither runs.
func TestSpawnAllowNeedsNetNS(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	roost := startRoost(t, homeDir, "--spawn-allow", "local/spawner", "--spawn-allow", "local/script-spawner")
	scriptCapsule(t, homeDir, filepath.Join(base, "script-spawner"),
		"name: script-spawner\nversion: 1.0.0\ncapabilities:\n  spawn:\n    allow: [local/worker]\n", delegatorWasm)
	for _, c := range []struct {
		name, caps, code string
		script           bool
	}{
		{name: "spawn.allow, no shell tool", caps: "capabilities:\n  spawn:\n    allow: [local/worker]\n", code: "E-CAP-005"},
		{name: "a script capsule's spawn.allow", script: true, code: "E-CAP-005"},
		{name: "shell.allow", caps: "capabilities:\n  shell:\n    allow: [bash]\n", code: "E-CAP-005"},
		{name: "neither", caps: "", code: ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(base, "script-spawner")
			if !c.script {
				name := map[string]string{"E-CAP-005": "spawner", "": "plain"}[c.code]
				if strings.Contains(c.caps, "shell") {
					name = "sheller"
				}
				dir = replayCapsule(t, homeDir, filepath.Join(base, name), name, "1.0.0", c.caps+"lifecycle:\n  after_task: exit\n", workerTranscript)
			}
			args := []string{"run", "--json", "--task", "do it"}
			r := netnsRefused(t, homeDir, dir, []string{"MURMUR_ROOST_URL=" + roost}, args...)
			if c.code == "" {
				if r.Code != 0 {
					t.Fatalf("a capsule needing no namespace was refused: %+v", r)
				}
				return
			}
			if r.Code == 0 || !jsonErrorOnly(r.Stdout, c.code) || !strings.Contains(r.Stdout, "network namespace") {
				t.Fatalf("want the launch refused with %s on stdout: %+v", c.code, r)
			}
			if s := sessionsUnder(homeDir); len(s) != 0 {
				t.Errorf("a refused launch left a session behind: %v", s)
			}
		})
	}
}

// TestCompletionAnswersSpecWords: a session that delegates nothing answers
// a completion addressed to another session -31001 (whatever the session
// is) and one addressed to it -31002, in the spec's words.
func TestCompletionAnswersSpecWords(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	dir := replayCapsule(t, homeDir, filepath.Join(base, "plain"), "plain", "1.0.0", "lifecycle:\n  after_task: sleep\n", workerTranscript)
	cmd, out, stderr := startMurEnv(t, homeDir, dir, nil, "run", "--json", "--task", "answer")
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	rd := readReady(t, out)
	url := "http://" + *rd.URL
	const dlg = "dlg_0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		name, session string
		code          float64
		msg, reason   string
	}{
		{"misaddressed", "ses_0000000000000000000000000000dead", -31001,
			"completion is addressed to session ses_0000000000000000000000000000dead, which is not the session running here", "COMPLETION_MISADDRESSED"},
		{"addressed here", rd.SessionID, -31002, "no task in this session is waiting for delegation " + dlg, "COMPLETION_NOT_AWAITED"},
	} {
		e, _ := completion(t, url, c.session, dlg)["error"].(map[string]any)
		data, _ := json.Marshal(e["data"])
		if e == nil || e["code"] != c.code || e["message"] != c.msg || !strings.Contains(string(data), c.reason) {
			t.Errorf("%s: answered %v, want %v %q %s; stderr %s", c.name, e, c.code, c.msg, c.reason, stderr)
		}
	}
}

// TestDelegateEndedByItsTask: a parent's wind-down ends its child.
//   - The child, ending, reports its completion; the parent answers it in
//     the spec's words for a delegation it is ending (the child's stderr,
//     which the parent keeps as the child's log, says so).
//   - The launcher's record is posted to nobody: delivered false, with
//     the delegating task ended as delivery_error (docs/delegation.md).
//   - SIGTERM goes to the child's process group, so a process the child
//     started in its group is ended with it.
func TestDelegateEndedByItsTask(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	replayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "1.0.0", "lifecycle:\n  after_task: sleep\n", workerTranscript)
	orch := replayCapsule(t, homeDir, filepath.Join(base, "orch"), "orch", "0.1.0",
		"capabilities:\n  spawn:\n    allow: [local/worker]\n", orchTranscript)
	roost := startRoost(t, homeDir, "--spawn-allow", "local/orch")
	// The child's mur, with a process of its group beside it that notes
	// the SIGTERM it gets.
	got, pidFile := filepath.Join(base, "group-term"), filepath.Join(base, "group-pid")
	wrapper := filepath.Join(base, "group-mur")
	os.WriteFile(wrapper, []byte(fmt.Sprintf("#!/bin/sh\nsh -c 'echo $$ > %s; trap \"echo SIGTERM > %s; exit 0\" TERM; while :; do sleep 1; done' </dev/null >/dev/null 2>&1 3<&- &\nexec %s \"$@\"\n",
		pidFile, got, murBin(t))), 0o755)
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	cmd, out, stderr := startMurEnv(t, homeDir, orch, []string{"MURMUR_ROOST_URL=" + roost, "MURMUR_MUR_BINARY=" + wrapper}, "run", "--json", "--task", "delegate it")
	rd := readReady(t, out)
	ds := waitLines(t, rd.RecordsDir, trace.TypeDelegationStart, 1, stderr)
	dlg := ds[0].Str("delegation_id")
	child := childOf(t, homeDir, rd.SessionID)
	waitLines(t, child.RecordsDir, trace.TypeTaskEnd, 1, stderr)
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()

	dl := byType(traceLines(t, rd.RecordsDir), trace.TypeDelegation)
	if len(dl) != 1 || dl[0].Str("outcome") != "terminated" {
		t.Fatalf("delegation lines %v; stderr %s", dl, stderr)
	}
	log, _ := os.ReadFile(filepath.Join(rd.RecordsDir, "logs", "children", dlg+".log"))
	if want := "delegation " + dlg + " is being ended by this session; its launcher records the outcome"; !strings.Contains(string(log), want) {
		t.Errorf("the child's completion was not answered %q; its log:\n%s", want, log)
	}
	rec := readCompletion(t, child.RecordsDir)
	if rec["reported_by"] != "launcher" || rec["status"] != "terminated" || rec["delivered"] != false || rec["delivery_error"] != "the delegating task ended" {
		t.Errorf("completion.json %v, want the launcher's terminated record posted to nobody", rec)
	}
	for i := 0; ; i++ {
		if b, _ := os.ReadFile(got); string(b) == "SIGTERM\n" {
			break
		}
		if i > 100 {
			t.Fatalf("the process in the child's group got no SIGTERM")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
