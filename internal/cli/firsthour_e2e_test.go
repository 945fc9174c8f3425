package cli_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/e2e"
)

// Without --json, mur run prints the answer on stdout once the session has
// ended — an agent's last task result, a script's out/result.txt — and the
// status and record paths on stderr; with --json, stdout holds the ready
// line alone (docs/cli.md). mur trace show shows the answer too.
func TestRunPrintsTheAnswer(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	agentProj := agentProject(t, homeDir, base, "", agentTranscript)
	scriptProj := capsule(t, filepath.Join(base, "probe"), "name: probe\nversion: 1.0.0\n", fixture(t, "capsule-probe.wasm"))
	for _, tc := range []struct {
		name, proj, task, answer string
		agent                    bool // the answer is in the records dir, not the work folder
	}{
		{name: "agent", proj: agentProj, task: "say hello", answer: "The echo tool said hello.\n", agent: true},
		{name: "script", proj: scriptProj, task: "task", answer: "task: \"task\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runMur(t, homeDir, tc.proj, nil, "run", "--task", tc.task)
			if r.Code != 0 || r.Stdout != tc.answer {
				t.Fatalf("stdout %q, want the answer %q alone: %+v", r.Stdout, tc.answer, r)
			}
			m := regexp.MustCompile(`(?m)^(ses_[0-9a-z]+): ok\nrecords: (/\S+)\nanswer:  (/\S+)\n`).FindStringSubmatch(r.Stderr)
			if m == nil {
				t.Fatalf("stderr lacks the status, records and answer lines:\n%s", r.Stderr)
			}
			sid, records, answer := m[1], m[2], m[3]
			want := filepath.Join(tc.proj, "workdir", sid, "out", "result.txt")
			if tc.agent {
				want = filepath.Join(records, "out", "result.txt")
			}
			if answer != want || filepath.Base(records) != sid {
				t.Errorf("answer line names %s, want %s (records %s)", answer, want, records)
			}

			// trace show: the answer's path and its text.
			show := runMur(t, homeDir, tc.proj, nil, "trace", "show", sid)
			if show.Code != 0 || !strings.Contains(show.Stdout, "answer:    "+want+" (") ||
				!strings.Contains(show.Stdout, "\n  "+strings.TrimSuffix(tc.answer, "\n")+"\n") {
				t.Errorf("trace show lacks the answer:\n%+v", show)
			}

			// --json: the ready line alone on stdout.
			j := runMur(t, homeDir, tc.proj, nil, "run", "--json", "--task", tc.task)
			if j.Code != 0 {
				t.Fatalf("--json run: %+v", j)
			}
			rd := parseReady(t, j.Stdout) // fails unless stdout is exactly one JSON line
			if !strings.Contains(j.Stderr, rd.SessionID+": ok") || strings.Contains(j.Stdout, strings.TrimSuffix(tc.answer, "\n")) {
				t.Errorf("--json run: %+v", j)
			}
		})
	}
}

// An answer past 64 KiB is cut there, with a last line naming the file that
// holds all of it; a --workdir run's answer comes from that work folder.
func TestRunCutsALongAnswer(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "probe"), "name: probe\nversion: 1.0.0\n", fixture(t, "capsule-probe.wasm"))
	task := filepath.Join(base, "task.txt")
	os.WriteFile(task, []byte("task "+strings.Repeat("é", 40<<10)), 0o644) // 80 KiB and more, two bytes a rune
	wd := filepath.Join(base, "wd")
	r := runMur(t, homeDir, proj, nil, "run", "--task", task, "--workdir", wd)
	if r.Code != 0 {
		t.Fatalf("run: %+v", r)
	}
	file := filepath.Join(wd, "out", "result.txt")
	st, err := os.Stat(file)
	if err != nil || st.Size() <= 64<<10 {
		t.Fatalf("the probe's answer: %v, %v", st, err)
	}
	body, last, _ := strings.Cut(r.Stdout, "\n[")
	if len(body) > 64<<10 || len(body) < 64<<10-4 || !strings.HasPrefix(body, `task: "task éé`) {
		t.Errorf("the answer shown is %d bytes (%q…), want it cut at 64 KiB", len(body), body[:min(len(body), 20)])
	}
	if !strings.HasSuffix(body, "é") {
		t.Errorf("the cut splits a character: ends %q", body[len(body)-4:])
	}
	if want := "the answer is cut at 64 KiB here: all " + strconv.FormatInt(st.Size(), 10) + " bytes of it are in " + file + "]\n"; last != want {
		t.Errorf("last line %q, want %q", last, want)
	}
	if !strings.Contains(r.Stderr, "answer:  "+file+"\n") {
		t.Errorf("stderr %q", r.Stderr)
	}
}

// A capsule that writes no answer: nothing on stdout, and stderr says so.
func TestRunWithoutAnAnswer(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "probe"), "name: probe\nversion: 1.0.0\n", fixture(t, "capsule-probe.wasm"))
	r := runMur(t, homeDir, proj, nil, "run", "--task", "fail")
	if r.Code != 1 || r.Stdout != "" || !regexp.MustCompile(`(?m)^answer:  none \(/\S+/out/result\.txt was not written\)$`).MatchString(r.Stderr) {
		t.Errorf("a run with no answer: %+v", r)
	}
}

// On a terminal, an agent's session line names its door as a URL; the
// --json line keeps the bare host:port a parent reads.
func TestAgentDoorOnATerminal(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := agentProject(t, homeDir, base, "", agentTranscript)
	shareCompileCache(t, homeDir)
	master, slave := openPTY(t)
	defer master.Close()
	ctx, cancel := context.WithTimeout(context.Background(), murTimeout)
	defer cancel()
	cmd := e2e.CommandContext(ctx, t, murBin(t), homeDir, proj, nil, "run", "--task", "say hello")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var screen bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&screen, master); close(done) }()
	err := cmd.Wait()
	<-done
	got := strings.ReplaceAll(screen.String(), "\r\n", "\n")
	if err != nil {
		t.Fatalf("mur run: %v\nterminal %s", err, got)
	}
	if !regexp.MustCompile(`(?m)^session ses_[0-9a-z]+ started at http://127\.0\.0\.1:[0-9]+ \(records: /\S+\)$`).MatchString(got) {
		t.Errorf("no session line with the door's URL on the terminal:\n%s", got)
	}
	if stdout.String() != "The echo tool said hello.\n" {
		t.Errorf("stdout %q", stdout.String())
	}
}

// A script capsule that panics: the guest's last stderr lines are indented
// under the error, one per line, and the hint names mur explain.
func TestEndingShowsStderrIndented(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "probe"), "name: probe\nversion: 1.0.0\n", fixture(t, "capsule-probe.wasm"))
	r := runMur(t, homeDir, proj, nil, "run", "--task", "trap")
	// The last 10 lines of a Go panic are its stack: each indented.
	if r.Code != 1 || !regexp.MustCompile(`(?m)^error\[E-RUN-010\]: local/probe@1\.0\.0 ended trapped: .*\n  the guest's stderr ends:\n(    .*\n){10}  hint: `).MatchString(r.Stderr) {
		t.Errorf("the guest's stderr is not indented under the error:\n%s", r.Stderr)
	}
	if !strings.Contains(r.Stderr, "(and 'mur explain E-RUN-010')") {
		t.Errorf("the hint does not name mur explain:\n%s", r.Stderr)
	}
}

// mur explain prints a code's entry of docs/diagnostics.md; an unknown code
// is E-RUN-200, naming near ones.
func TestExplainCommand(t *testing.T) {
	homeDir := t.TempDir()
	for _, code := range []string{"E-RUN-013", "e-run-013"} {
		r := runMur(t, homeDir, homeDir, nil, "explain", code)
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "E-RUN-013\n\ncause: The script capsule ended `failed`") ||
			!strings.Contains(r.Stdout, "\n\nfix:   Read those lines") {
			t.Errorf("mur explain %s: %+v", code, r)
		}
	}
	r := runMur(t, homeDir, homeDir, nil, "explain", "E-RUN-0133")
	if r.Code != 1 || !strings.Contains(r.Stderr, "error[E-RUN-200]") || !strings.Contains(r.Stderr, "did you mean") ||
		!strings.Contains(r.Stderr, "E-RUN-013") {
		t.Errorf("mur explain of an unknown code: %+v", r)
	}
}

// trace.retain removes a project run's default work folders with their
// records, so workdir/ holds as many session folders as the records.
func TestRetainRemovesDefaultWorkdirs(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := capsule(t, filepath.Join(base, "ret"), "name: ret\nversion: 1.0.0\ntrace:\n  retain:\n    max_sessions: 2\n", fixture(t, "capsule-probe.wasm"))
	mine := filepath.Join(base, "mine")
	var ids []string
	for i := 0; i < 4; i++ {
		args := []string{"run", "--json", "--task", "task"}
		if i == 0 {
			args = append(args, "--workdir", mine) // the user's folder: never removed
		}
		r := runMur(t, homeDir, proj, nil, args...)
		if r.Code != 0 {
			t.Fatalf("run %d: %+v", i, r)
		}
		ids = append(ids, parseReady(t, r.Stdout).SessionID)
	}
	entries, _ := os.ReadDir(filepath.Join(proj, "workdir"))
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != ids[2]+" "+ids[3] {
		t.Errorf("workdir/ holds %v, want the two kept sessions %v", got, ids[2:])
	}
	if _, err := os.Stat(filepath.Join(mine, "out", "result.txt")); err != nil {
		t.Errorf("a --workdir folder was touched: %v", err)
	}
}
