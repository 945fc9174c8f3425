package e2e_test

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/e2e"
	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/running"
	"github.com/murmur-go/murmur/internal/store"
)

const (
	doorAuth  = "network:\n  authentication:\n    scheme: bearer\nexports:\n  peer_tasks:\n    accept: true\n"
	peerSleep = "lifecycle:\n  after_task: sleep\n"
)

// formationProject publishes lead (the entry, answering its task) and two
// peers (idle until their formation ends) and writes a roster with one edge.
func formationProject(t *testing.T, homeDir, base string) string {
	t.Helper()
	e2e.ReplayCapsule(t, homeDir, filepath.Join(base, "lead"), "lead", "0.1.0", doorAuth, workerTranscript)
	e2e.ReplayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "0.1.0", doorAuth+peerSleep, workerTranscript)
	proj := filepath.Join(base, "team")
	os.MkdirAll(proj, 0o755)
	writeRoster(t, proj, `roster_version: 1
members:
  - {name: lead, capsule: lead, version: "0.1.0", entry: true}
  - {name: alpha, capsule: worker, version: "0.1.0"}
  - {name: beta, capsule: worker, version: "0.1.0"}
reachability:
  - from: lead
    to: [alpha, beta]
`)
	return proj
}

func writeRoster(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "roster.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

type formationLine struct {
	FormationID string `json:"formation_id"`
	Roster      string `json:"roster"`
	Entry       string `json:"entry"`
	Peers       []struct {
		Name, Capsule, Version, URL, Workdir string
		SessionID                            string `json:"session_id"`
		RecordsDir                           string `json:"records_dir"`
		PID                                  int    `json:"pid"`
	} `json:"peers"`
}

// TestFormationAdmissionThroughTheBinary: a refused roster prints its code,
// exits 1 (2 for a usage error) and creates nothing.
func TestFormationAdmissionThroughTheBinary(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	e2e.ReplayCapsule(t, homeDir, filepath.Join(base, "lead"), "lead", "0.1.0", "", workerTranscript)
	e2e.ReplayCapsule(t, homeDir, filepath.Join(base, "closed"), "closed", "0.1.0", "network:\n  authentication:\n    scheme: bearer\n"+peerSleep, workerTranscript)
	proj := filepath.Join(base, "team")
	os.MkdirAll(proj, 0o755)
	lead := "  - {name: lead, capsule: lead, version: \"0.1.0\", entry: true}\n"
	for _, c := range []struct {
		name, roster string
		args         []string
		env          []string
		code         string
		exit         int
	}{
		{"unknown key", "roster_version: 1\nmembers:\n" + lead + "reachabilty: all\n", nil, nil, "E-ROS-001", 1},
		{"no entry", "roster_version: 1\nmembers:\n  - {name: a, capsule: lead, version: \"0.1.0\"}\n", nil, nil, "E-ROS-002", 1},
		{"duplicate", "roster_version: 1\nmembers:\n" + lead + lead, nil, nil, "E-ROS-003", 1},
		{"unknown member", "roster_version: 1\nmembers:\n" + lead + "reachability:\n  - {from: lead, to: [x]}\n", nil, nil, "E-ROS-004", 1},
		{"not installed", "roster_version: 1\nmembers:\n" + lead + "  - {name: w, capsule: nope, version: \"1\"}\n", nil, nil, "E-ROS-007", 1},
		{"callee refuses peers", "roster_version: 1\nmembers:\n" + lead + "  - {name: c, capsule: closed, version: \"0.1.0\"}\nreachability:\n  - {from: lead, to: [c]}\n", nil, nil, "E-ROS-005", 1},
		{"calls the entry", "roster_version: 1\nmembers:\n" + lead + "  - {name: c, capsule: closed, version: \"0.1.0\"}\nreachability:\n  - {from: c, to: [lead]}\n", nil, nil, "E-ROS-008", 1},
		{"other flag", "roster_version: 1\nmembers:\n" + lead, []string{"--workdir", base}, nil, "E-CFG-001", 2},
		{"inside a member", "roster_version: 1\nmembers:\n" + lead, nil, []string{"MURMUR_FORMATION_ID=frm_00112233445566778899aabbccddeeff"}, "E-RUN-046", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			writeRoster(t, proj, c.roster)
			args := append([]string{"run", "--roster", proj, "--json"}, c.args...)
			r := runMur(t, homeDir, base, c.env, args...)
			if r.Code != c.exit || !jsonErrorOnly(r.Stdout, c.code) || !strings.Contains(r.Stderr, "error["+c.code+"]") {
				t.Fatalf("%+v", r)
			}
		})
	}
	if r := runMur(t, homeDir, filepath.Join(base, "closed"), nil, "run", "--explain-scope"); r.Code != 0 || !strings.Contains(r.Stdout, "\ndoor auth: bearer\npeer tasks: refused\n") {
		t.Errorf("--explain-scope: %+v", r)
	}
	if _, err := os.Stat(home.Formations(homeDir)); !os.IsNotExist(err) {
		t.Errorf("a refused roster created %s: %v", home.Formations(homeDir), err)
	}
}

// TestFormationRuns: a three-member formation starts its peers, hands the
// entry its task, and ends every peer when the entry ends; no token or key
// is left anywhere the run wrote.
func TestFormationRuns(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := formationProject(t, homeDir, base)
	r := runMur(t, homeDir, base, nil, "run", "--roster", proj, "--json", "--task", "report")
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("stdout %q", r.Stdout)
	}
	var fl formationLine
	if err := json.Unmarshal([]byte(lines[0]), &fl); err != nil || !strings.HasPrefix(fl.FormationID, "frm_") || fl.Entry != "lead" ||
		fl.Roster != filepath.Join(proj, "roster.yaml") || len(fl.Peers) != 2 || fl.Peers[0].Name != "alpha" || fl.Peers[1].Name != "beta" {
		t.Fatalf("formation line %q: %+v %v", lines[0], fl, err)
	}
	entry := parseReady(t, lines[1]+"\n")
	if entry.Name != "local/lead" {
		t.Fatalf("entry ready line %q", lines[1])
	}
	// The peers are gone, each ended by its lifeline: formation_ended, then
	// session_end ok (nothing was live), exit 0.
	for _, p := range fl.Peers {
		if !e2e.Gone(p.PID) {
			t.Errorf("peer %s (pid %d) still running", p.Name, p.PID)
		}
		if p.Workdir != filepath.Join(home.Formations(homeDir), fl.FormationID, p.Name) {
			t.Errorf("peer workdir %s", p.Workdir)
		}
		tl := traceLines(t, p.RecordsDir)
		start := tl[0]
		if start.Str("formation_id") != fl.FormationID || start.Str("formation_member") != p.Name {
			t.Errorf("peer session_start %v", start.Fields)
		}
		if ended := lastOf(tl, "formation_ended"); ended == nil || ended.Str("formation_id") != fl.FormationID {
			t.Errorf("peer %s trace: %s", p.Name, types(tl))
		}
		if end := lastEnd(t, tl); end.Str("exit_status") != "ok" {
			t.Errorf("peer session_end %v", end.Fields)
		}
	}
	got, _ := os.ReadFile(filepath.Join(entry.RecordsDir, "out", "result.txt"))
	if string(got) != "The report has three findings." {
		t.Errorf("entry answer %q", got)
	}
	// formation.json: ended, exit status 0, every session known.
	var ff struct {
		ExitStatus *int    `json:"exit_status"`
		EndedAt    *string `json:"ended_at"`
		Members    []struct {
			Name      string
			SessionID *string `json:"session_id"`
		}
	}
	fj := filepath.Join(home.Formations(homeDir), fl.FormationID, "formation.json")
	b, err := os.ReadFile(fj)
	if err != nil || json.Unmarshal(b, &ff) != nil || ff.ExitStatus == nil || *ff.ExitStatus != 0 || ff.EndedAt == nil || len(ff.Members) != 3 {
		t.Fatalf("formation.json %s %v", b, err)
	}
	for _, m := range ff.Members {
		if m.SessionID == nil {
			t.Errorf("formation.json: member %s has no session", m.Name)
		}
	}
	if fi, err := os.Stat(fj); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("formation.json mode %v", fi)
	}
	// mur trace show frm_…: the members and their endings.
	ts := runMur(t, homeDir, base, nil, "trace", "show", fl.FormationID)
	if ts.Code != 0 || !strings.HasPrefix(ts.Stdout, "formation: "+fl.FormationID+"\nroster:    "+fl.Roster+"\n") ||
		!strings.Contains(ts.Stdout, "\nending:    ok\nmembers:\n  lead ") || !strings.Contains(ts.Stdout, "  alpha  peer   local/worker@0.1.0  "+fl.Peers[0].SessionID+"  ok") ||
		!strings.HasSuffix(ts.Stdout, "calls: 0\n") {
		t.Errorf("mur trace show:\n%+v", ts)
	}
	var tj struct {
		ExitStatus *int `json:"exit_status"`
		Members    []struct {
			Name       string  `json:"name"`
			ExitStatus *string `json:"exit_status"`
		} `json:"members"`
		Calls []any `json:"calls"`
	}
	if tr := runMur(t, homeDir, base, nil, "trace", "show", fl.FormationID, "--json"); tr.Code != 0 || json.Unmarshal([]byte(tr.Stdout), &tj) != nil ||
		tj.ExitStatus == nil || *tj.ExitStatus != 0 || len(tj.Members) != 3 || tj.Members[2].ExitStatus == nil || *tj.Members[2].ExitStatus != "ok" || tj.Calls == nil {
		t.Errorf("mur trace show --json: %+v", tr)
	}
	if tr := runMur(t, homeDir, base, nil, "trace", "show", "frm_1"); tr.Code != 2 || !strings.Contains(tr.Stderr, "E-RUN-052") {
		t.Errorf("a malformed formation id: %+v", tr)
	}
	// No token or key left in anything the run wrote or printed.
	leaks := []string{"mft1.", "verify_key"}
	check := func(where, text string) {
		for _, l := range leaks {
			if strings.Contains(text, l) {
				t.Errorf("%s holds %q", where, l)
			}
		}
	}
	check("stdout", r.Stdout)
	check("stderr", r.Stderr)
	filepath.WalkDir(homeDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(p, "/.murmur/compiled") || strings.Contains(p, "/.murmur/artifacts") {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil {
			check(p, string(b))
		}
		return nil
	})
}

// TestFormationLauncherKilled: SIGKILL of the launcher leaves no member
// running: each reads EOF on its lifeline and ends.
func TestFormationLauncherKilled(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := formationProject(t, homeDir, base)
	e2e.ShareCompileCache(t, homeDir)
	// The entry has no task: it serves its door until the formation ends.
	cmd := e2e.MurCmdEnv(t, homeDir, base, nil, "run", "--roster", proj, "--json")
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(out)
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("formation line: %v", err)
	}
	var fl formationLine
	if err := json.Unmarshal([]byte(line), &fl); err != nil || len(fl.Peers) != 2 {
		t.Fatalf("formation line %q", line)
	}
	entry := readReady(t, br)
	// mur ps groups the formation's members after the sessions in none.
	ps := runMur(t, homeDir, base, nil, "ps")
	rows := strings.Split(strings.TrimSpace(ps.Stdout), "\n")
	if head := strings.Fields(rows[0]); len(rows) != 4 || strings.Join(head[len(head)-3:], " ") != "SPAWNED_BY FORMATION MEMBER" {
		t.Fatalf("mur ps:\n%s", ps.Stdout)
	}
	members := map[string]bool{}
	for _, row := range rows[1:] {
		f := strings.Fields(row)
		if f[len(f)-2] != fl.FormationID {
			t.Errorf("mur ps row %q", row)
		}
		members[f[len(f)-1]] = true
	}
	if !members["lead"] || !members["alpha"] || !members["beta"] {
		t.Errorf("mur ps members: %v", members)
	}
	if r := runMur(t, homeDir, base, nil, "trace", "rm", fl.FormationID); r.Code != 1 || !strings.Contains(r.Stderr, "E-TRC-007") {
		t.Errorf("mur trace rm of a running formation: %+v", r)
	}
	pids := []int{entry.PID, fl.Peers[0].PID, fl.Peers[1].PID}
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for !e2e.Gone(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if !e2e.Gone(pid) {
			t.Errorf("member pid %d still running 30 s after the launcher was killed", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	tl := traceLines(t, fl.Peers[0].RecordsDir)
	if lastOf(tl, "formation_ended") == nil || lastEnd(t, tl).Str("exit_status") != "ok" {
		t.Errorf("peer trace %s", types(tl))
	}
}

// member starts mur run of capsule local/<capsule>@0.1.0 as a formation
// member the test launches itself: line 1 (and 2) on descriptor 3, the
// lifeline's read end on 4. The returned writer is the lifeline's write end.
func startMember(t *testing.T, homeDir, dir, frm string, lines ...[]byte) (*exec.Cmd, *os.File, *bufio.Reader, *bytes.Buffer) {
	t.Helper()
	chR, chW, _ := os.Pipe()
	lfR, lfW, _ := os.Pipe()
	for _, l := range lines {
		chW.Write(l)
	}
	chW.Close()
	member := "alpha"
	wd := filepath.Join(home.Formations(homeDir), frm, member)
	os.MkdirAll(wd, 0o700)
	e2e.ShareCompileCache(t, homeDir)
	cmd := e2e.MurCmdEnv(t, homeDir, dir, []string{"MURMUR_FORMATION_ID=" + frm, "MURMUR_FORMATION_CHANNEL=3", "MURMUR_FORMATION_LIFELINE=4"},
		"run", "--capsule", "local/worker", "--capsule-version", "0.1.0", "--workdir", wd, "--json")
	cmd.ExtraFiles = []*os.File{chR, lfR}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	chR.Close()
	lfR.Close()
	t.Cleanup(func() {
		lfW.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
	})
	return cmd, lfW, bufio.NewReader(out), &stderr
}

type doorAnswer struct {
	status int
	header http.Header
	body   string
}

func call(t *testing.T, url string, headers map[string][]string, body string) doorAnswer {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return doorAnswer{resp.StatusCode, resp.Header, string(b)}
}

// TestFormationMemberDoor: the test is the launcher. A member checks its
// channel's line 1 before anything exists (E-RUN-046, E-RUN-057), and its
// door answers only its operator token and formation tokens issued in this
// formation to call it, with the exact refusals.
func TestFormationMemberDoor(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	e2e.ReplayCapsule(t, homeDir, filepath.Join(base, "worker"), "worker", "0.1.0", doorAuth+peerSleep, workerTranscript)
	zip, _, _ := store.Global(homeDir).Paths("local/worker", "0.1.0")
	b, _ := os.ReadFile(zip)
	sum := store.HashHex(b)
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	frm := ids.New(ids.Formation)
	ps, _ := running.ProcessStart(os.Getpid())
	l1 := formation.Line1{V: 1, FormationID: frm, Member: "alpha", Project: base, SHA256: sum,
		Launcher: formation.Launcher{PID: os.Getpid(), ProcessStart: ps}, VerifyKey: formation.EncodeKey(pub), Calls: []formation.Call{}}
	enc := func(l formation.Line1) []byte { b, _ := formation.Encode(l); return b }

	// Line 1 refusals, through the binary: nothing is created.
	for _, c := range []struct {
		name string
		line []byte
		code string
		has  string
	}{
		{"eof", nil, "E-RUN-046", "end of the channel before line 1"},
		{"not json", []byte("hello\n"), "E-RUN-046", "it is not a JSON object"},
		{"other formation", enc(func() formation.Line1 { l := l1; l.FormationID = ids.New(ids.Formation); return l }()), "E-RUN-046", "formation_id is not MURMUR_FORMATION_ID"},
		{"forged call", enc(func() formation.Line1 {
			l := l1
			_, other, _ := ed25519.GenerateKey(rand.Reader)
			l.Calls = []formation.Call{{Name: "beta", Token: formation.MintToken(other, frm, "alpha", "beta")}}
			return l
		}()), "E-RUN-046", "was not issued in this formation"},
		{"other bytes", enc(func() formation.Line1 { l := l1; l.SHA256 = strings.Repeat("0", 64); return l }()), "E-RUN-057", "now hashes to " + sum},
	} {
		t.Run(c.name, func(t *testing.T) {
			var lines [][]byte
			if c.line != nil {
				lines = append(lines, c.line)
			}
			cmd, _, out, stderr := startMember(t, homeDir, base, frm, lines...)
			first, _ := out.ReadString('\n')
			cmd.Wait()
			if cmd.ProcessState.ExitCode() != 1 || !jsonErrorOnly(first, c.code) || !strings.Contains(stderr.String(), c.has) {
				t.Fatalf("exit %d, stdout %q, stderr %q", cmd.ProcessState.ExitCode(), first, stderr.String())
			}
			if strings.Contains(stderr.String(), "mft1.") {
				t.Fatal("the refusal quotes a token")
			}
		})
	}
	if n := len(sessionsUnder(homeDir)); n != 0 {
		t.Fatalf("a refused member made %d session(s)", n)
	}

	// A good member: its door.
	_, lifeline, out, _ := startMember(t, homeDir, base, frm, enc(l1), []byte(`{"addresses":[]}`+"\n"))
	rd := readReady(t, out)
	if rd.FormationID != frm || rd.URL == nil {
		t.Fatalf("ready %+v", rd)
	}
	md, _ := os.ReadFile(filepath.Join(home.Runtime(homeDir, rd.SessionID), "MURMUR.md"))
	if !strings.Contains(string(md), "\n## Formation\n\n- formation: "+frm+"\n- member: alpha\n- role: peer\n- callees: none\n") {
		t.Errorf("MURMUR.md:\n%s", md)
	}
	url := "http://" + *rd.URL + "/"
	if resp, err := http.Get(url + ".well-known/agent-card.json"); err != nil {
		t.Fatal(err)
	} else {
		cb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(cb), `"securitySchemes":{"bearer":{"httpAuthSecurityScheme":{"scheme":"Bearer"}}},"securityRequirements":[{"schemes":{"bearer":[]}}]`) ||
			!strings.Contains(string(cb), `"sessionId":"`+rd.SessionID+`"`) {
			t.Errorf("card %s", cb)
		}
	}
	send := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"returnImmediately":true}}}`
	bearer := func(tok string) map[string][]string { return map[string][]string{"Authorization": {"Bearer " + tok}} }
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	const realm = `Bearer realm="local/worker"`
	for _, c := range []struct {
		name      string
		headers   map[string][]string
		body      string
		status    int
		challenge string
		want      string
	}{
		{"no header", nil, send, 401, realm, `{"error":"unauthenticated","message":"this door answers only requests that carry Authorization: Bearer <token>"}`},
		{"garbage", bearer("abc"), send, 401, realm + `, error="invalid_token"`, `{"error":"invalid_token","message":"the bearer token was not issued for this door"}`},
		{"basic", map[string][]string{"Authorization": {"Basic abc"}}, send, 401, realm + `, error="invalid_token"`, `{"error":"invalid_token","message":"the bearer token was not issued for this door"}`},
		{"two headers", map[string][]string{"Authorization": {"Bearer a", "Bearer b"}}, send, 401, realm + `, error="invalid_token"`, `{"error":"invalid_token","message":"the bearer token was not issued for this door"}`},
		{"forged", bearer(formation.MintToken(otherPriv, frm, "lead", "alpha")), send, 401, realm + `, error="invalid_token"`, `{"error":"invalid_token","message":"the bearer token was not issued for this door"}`},
		{"cross-formation", bearer(formation.MintToken(priv, ids.New(ids.Formation), "lead", "alpha")), send, 401, realm + `, error="invalid_token"`, `{"error":"invalid_token","message":"the bearer token was not issued for this door"}`},
		{"wrong member", bearer(formation.MintToken(priv, frm, "lead", "beta")), send, 403, "", `{"error":"not_permitted","message":"formation member 'lead' may not call this member"}`},
		{"scope", bearer(formation.MintToken(priv, frm, "lead", "alpha")), `{"jsonrpc":"2.0","id":1,"method":"murmur.StopSession"}`, 403, realm + `, error="insufficient_scope"`, `{"error":"insufficient_scope","message":"a formation member may call SendMessage, GetTask and CancelTask here, not murmur.StopSession"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := call(t, url, c.headers, c.body)
			if a.status != c.status || strings.TrimSpace(a.body) != c.want || a.header.Get("Www-Authenticate") != c.challenge || a.header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %q %q, want %d %q %q", a.status, a.header.Get("Www-Authenticate"), a.body, c.status, c.challenge, c.want)
			}
		})
	}
	// Replayed: the same valid token twice is served twice (no expiry), as
	// origin peer whatever the header says.
	tok := formation.MintToken(priv, frm, "lead", "alpha")
	var taskID string
	for i := 0; i < 2; i++ {
		a := call(t, url, map[string][]string{"Authorization": {"Bearer " + tok}, "X-Murmur-Task-Origin": {"user"}}, strings.Replace(send, "m1", "m"+strconv.Itoa(i), 1))
		if a.status != 200 || !strings.Contains(a.body, `"result"`) {
			t.Fatalf("valid token: %d %s", a.status, a.body)
		}
		if i == 0 {
			taskID = regexp.MustCompile(`tsk_[0-9a-f]{32}`).FindString(a.body)
		}
	}
	// A member reaches only the tasks sent under its own name.
	get := `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"` + taskID + `"}}`
	if a := call(t, url, bearer(tok), get); a.status != 200 || !strings.Contains(a.body, taskID) || strings.Contains(a.body, `"error"`) {
		t.Errorf("GetTask of its own task: %d %s", a.status, a.body)
	}
	other := formation.MintToken(priv, frm, "beta", "alpha")
	for _, body := range []string{get, strings.Replace(get, "GetTask", "CancelTask", 1)} {
		if a := call(t, url, bearer(other), body); a.status != 200 || !strings.Contains(a.body, `"code":-32001`) {
			t.Errorf("another member's task: %d %s", a.status, a.body)
		}
	}
	// The operator token is in the 0600 running record, and mur stop presents it.
	var rec running.Record
	rb, _ := os.ReadFile(filepath.Join(home.Running(homeDir), rd.SessionID+".json"))
	if json.Unmarshal(rb, &rec) != nil || !strings.HasPrefix(rec.DoorToken, "mdt1.") || rec.FormationMember != "alpha" || rec.FormationLauncher == nil {
		t.Fatalf("running record %s", rb)
	}
	if a := call(t, url, bearer(rec.DoorToken), `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"tsk_00000000000000000000000000000000"}}`); a.status != 200 {
		t.Fatalf("operator token: %d %s", a.status, a.body)
	}
	if r := runMur(t, homeDir, base, nil, "ps", "--json"); strings.Contains(r.Stdout, "mdt1.") {
		t.Fatalf("mur ps --json prints the door token: %s", r.Stdout)
	}
	if r := runMur(t, homeDir, base, nil, "stop", rd.SessionID); r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, "StopSession") && r.Code != 0 {
		t.Fatalf("mur stop: %+v", r)
	}
	e2e.WaitFor(t, "the member to end", func() bool { return e2e.Gone(rd.PID) })
	lifeline.Close()
	got := e2e.ByType(traceLines(t, rd.RecordsDir), "a2a_task_received")
	// (The second offer may find the member busy: task_rejected, not received.)
	if len(got) == 0 || got[0].Str("caller_member") != "lead" || got[0].Str("origin") != "peer" {
		t.Errorf("a2a_task_received: %v", got)
	}
}

// TestFormationPeerDoesNotComeUp: a peer that cannot start is E-RUN-045:
// its reason and stderr lines, the members stopped, the entry never started.
func TestFormationPeerDoesNotComeUp(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := formationProject(t, homeDir, base)
	e2e.ReplayCapsule(t, homeDir, filepath.Join(base, "broken"), "broken", "0.1.0", doorAuth+peerSleep, workerTranscript)
	os.Remove(filepath.Join(base, "broken", "transcript.yaml")) // its driver cannot start
	writeRoster(t, proj, `roster_version: 1
members:
  - {name: lead, capsule: lead, version: "0.1.0", entry: true}
  - {name: alpha, capsule: worker, version: "0.1.0"}
  - {name: beta, capsule: broken, version: "0.1.0"}
`)
	r := runMur(t, homeDir, base, nil, "run", "--roster", proj, "--json", "--task", "report")
	if r.Code != 1 || !jsonErrorOnly(r.Stdout, "E-RUN-045") ||
		!strings.Contains(r.Stderr, "the formation did not come up: member 'beta' (local/broken@0.1.0) exited with status 1 before it reported itself ready") ||
		!strings.Contains(r.Stderr, "E-RUN-085") || !strings.Contains(r.Stderr, "stopped: alpha (pid ") {
		t.Fatalf("%+v", r)
	}
	// The entry never started; alpha was stopped by its lifeline.
	if n := len(sessionsUnder(homeDir)); n != 1 {
		t.Errorf("%d sessions, want alpha's only", n)
	}
}

// TestFormationEntryKilled: SIGKILL of the entry ends the formation: the
// launcher closes the peers' lifelines and exits 137.
func TestFormationEntryKilled(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := formationProject(t, homeDir, base)
	e2e.ShareCompileCache(t, homeDir)
	cmd := e2e.MurCmdEnv(t, homeDir, base, nil, "run", "--roster", proj, "--json")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(out)
	line, _ := br.ReadString('\n')
	var fl formationLine
	if err := json.Unmarshal([]byte(line), &fl); err != nil || len(fl.Peers) != 2 {
		t.Fatalf("formation line %q", line)
	}
	entry := readReady(t, br)
	syscall.Kill(entry.PID, syscall.SIGKILL)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the launcher did not end after its entry was killed")
	}
	if cmd.ProcessState.ExitCode() != 137 {
		t.Errorf("launcher exit %d, want 137", cmd.ProcessState.ExitCode())
	}
	for _, p := range fl.Peers {
		if !e2e.Gone(p.PID) {
			t.Errorf("peer %s still running", p.Name)
		}
	}
}

// TestFormationRetention: twenty formations in a row; the entry's
// trace.retain keeps the newest three of this roster's folder, an older one
// going with its records; nothing else is left behind.
func TestFormationRetention(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	e2e.ReplayCapsule(t, homeDir, filepath.Join(base, "solo"), "solo", "0.1.0", "trace:\n  retain:\n    max_sessions: 3\n", workerTranscript)
	proj := filepath.Join(base, "team")
	os.MkdirAll(proj, 0o755)
	writeRoster(t, proj, "roster_version: 1\nmembers:\n  - {name: solo, capsule: solo, version: \"0.1.0\", entry: true}\n")
	var frms []string
	for i := 0; i < 20; i++ {
		r := runMur(t, homeDir, base, nil, "run", "--roster", proj, "--json", "--task", "go")
		if r.Code != 0 {
			t.Fatalf("%+v", r)
		}
		var fl formationLine
		first, _, _ := strings.Cut(r.Stdout, "\n")
		if err := json.Unmarshal([]byte(first), &fl); err != nil || len(fl.Peers) != 0 {
			t.Fatalf("formation line %q", first)
		}
		frms = append(frms, fl.FormationID)
		if i >= 3 && !strings.Contains(r.Stderr, "retention: removed formation "+frms[i-3]+" (max_sessions)") {
			t.Fatalf("run %d: stderr %q", i, r.Stderr)
		}
	}
	left, _ := os.ReadDir(home.Formations(homeDir))
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != strings.Join(frms[17:], " ") {
		t.Errorf("formations left: %v, want %v", names, frms[17:])
	}
	recs, _ := os.ReadDir(home.ProjectRecords(homeDir, home.Formations(homeDir)))
	if len(recs) != 3 {
		t.Errorf("%d formation records trees left, want 3", len(recs))
	}
	if live, _ := running.Scan(home.Running(homeDir)); len(live) != 0 {
		t.Errorf("running records left: %v", live)
	}
}

// TestFormationStop: mur stop frm_… signals the launcher, which ends every
// member; each member's ending is reported.
func TestFormationStop(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	proj := formationProject(t, homeDir, base)
	if r := runMur(t, homeDir, base, nil, "stop", "frm_nothex"); r.Code != 2 || !strings.Contains(r.Stderr, "E-RUN-052") {
		t.Fatalf("a bad formation id: %+v", r)
	}
	e2e.ShareCompileCache(t, homeDir)
	cmd := e2e.MurCmdEnv(t, homeDir, base, nil, "run", "--roster", proj, "--json")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(out)
	line, _ := br.ReadString('\n')
	var fl formationLine
	if err := json.Unmarshal([]byte(line), &fl); err != nil {
		t.Fatalf("formation line %q", line)
	}
	entry := readReady(t, br)
	r := runMur(t, homeDir, base, nil, "stop", fl.FormationID)
	want := "stopped: " + fl.FormationID + "\nlauncher: pid " + strconv.Itoa(cmd.Process.Pid) + ", SIGTERM\nmember: lead " + entry.SessionID + " ok\nmember: alpha " +
		fl.Peers[0].SessionID + " ok\nmember: beta " + fl.Peers[1].SessionID + " ok\n"
	if r.Code != 0 || r.Stdout != want {
		t.Fatalf("mur stop: %+v\nwant %q", r, want)
	}
	cmd.Wait()
	if cmd.ProcessState.ExitCode() != 143 {
		t.Errorf("launcher exit %d, want 143", cmd.ProcessState.ExitCode())
	}
	if r := runMur(t, homeDir, base, nil, "stop", fl.FormationID); r.Code != 1 || !strings.Contains(r.Stderr, "E-RUN-053") {
		t.Errorf("a formation that is gone: %+v", r)
	}
	// mur trace rm frm_…: its folder and its records go.
	if r := runMur(t, homeDir, base, nil, "trace", "rm", fl.FormationID); r.Code != 0 || r.Stdout != "removed: "+fl.FormationID+"\n" {
		t.Fatalf("mur trace rm: %+v", r)
	}
	dir := filepath.Join(home.Formations(homeDir), fl.FormationID)
	for _, d := range []string{dir, home.ProjectRecords(homeDir, dir)} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s is still there", d)
		}
	}
}

// TestFormationExample runs examples/formation as its comments say: the
// three capsules published, the roster started with a task; the refused
// roster; the script-entry roster.
func TestFormationExample(t *testing.T) {
	homeDir, base := t.TempDir(), t.TempDir()
	ex := filepath.Join(base, "formation")
	copyDir(t, filepath.Join(e2e.RepoRoot(), "examples", "formation"), ex)
	for _, m := range []string{"lead", "researcher", "writer"} {
		copyDir(t, filepath.Join(e2e.RepoRoot(), "examples", "formation", m), filepath.Join(ex, m))
		e2e.PublishDir(t, homeDir, filepath.Join(ex, m))
	}
	echo := filepath.Join(base, "echo-tool")
	copyDir(t, filepath.Join(e2e.RepoRoot(), "examples", "echo-tool"), echo)
	e2e.PublishDir(t, homeDir, echo)
	hello := filepath.Join(base, "hello-script")
	copyDir(t, filepath.Join(e2e.RepoRoot(), "examples", "hello-script"), hello)
	e2e.PublishDir(t, homeDir, hello)

	r := runMur(t, homeDir, ex, nil, "run", "--roster", ".", "--json", "--task", "draft the release note")
	if r.Code != 0 || strings.Contains(r.Stderr, "warning[") {
		t.Fatalf("%+v", r)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	entry := parseReady(t, lines[len(lines)-1]+"\n")
	got, _ := os.ReadFile(filepath.Join(entry.RecordsDir, "out", "result.txt"))
	if string(got) != "Release note: capsules can now run together as a formation (formations, door tokens, retention)." {
		t.Errorf("the lead's answer %q", got)
	}
	// The lead called both specialists; both answered, in one continuation.
	tl := traceLines(t, entry.RecordsDir)
	calls := byType(tl, "member_call")
	if len(calls) != 2 || calls[0].Str("status") != "completed" || calls[1].Str("status") != "completed" || len(byType(tl, "task_continued")) != 1 {
		t.Errorf("the lead's calls: %s", types(tl))
	}
	if r := runMur(t, homeDir, ex, nil, "run", "--roster", "roster-refused.yaml"); r.Code != 1 || !strings.Contains(r.Stderr, "error[E-ROS-008]") {
		t.Errorf("roster-refused.yaml: %+v", r)
	}
	r = runMur(t, homeDir, ex, nil, "run", "--roster", "roster-script.yaml", "--json", "--task", "hello")
	var fl formationLine
	first, _, _ := strings.Cut(r.Stdout, "\n")
	if r.Code != 0 || json.Unmarshal([]byte(first), &fl) != nil || fl.Entry != "hello" || len(fl.Peers) != 2 {
		t.Errorf("roster-script.yaml: %+v", r)
	}
}
