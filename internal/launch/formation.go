package launch

// mur run --roster: the launcher of a formation (docs/formations.md). It is
// not a session: no trace, no running record. It mints the formation's id
// and key, starts every peer at once with its channel (fd 3) and lifeline
// (fd 4), waits until each peer's door answers as the session it reported,
// hands out the addresses, then runs the entry in its own process group and
// ends the peers when the entry ends.

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/murmur-go/murmur/internal/atomicfile"
	"github.com/murmur-go/murmur/internal/delegate"
	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/formation"
	"github.com/murmur-go/murmur/internal/home"
	"github.com/murmur-go/murmur/internal/ids"
	"github.com/murmur-go/murmur/internal/launch/launchapi"
	"github.com/murmur-go/murmur/internal/running"
)

// Formation bounds.
const (
	// PeerReadyWithin bounds a peer's start: its ready line, then its door
	// answering as that session.
	PeerReadyWithin = 180 * time.Second
	// ReapAfter: a member still running this long after its lifeline
	// closed gets SIGKILL of its process group.
	ReapAfter = 25 * time.Second
)

// FormationRequest is one mur run --roster.
type FormationRequest struct {
	Admitted    *formation.Admitted
	Task        string // the entry's --task ("" for none)
	JSON        bool
	Containment string
	Home        string
	Stdout      io.Writer
	Stderr      io.Writer
	// LookupEnv and Environ read the launcher's environment (nil: the process's).
	LookupEnv func(string) (string, bool)
	Environ   func() []string
}

// member is one started member process.
type member struct {
	idx       int
	name      string
	entry     bool
	workdir   string
	cmd       *exec.Cmd
	chanW     *os.File // nil once closed
	lifeW     *os.File // nil once closed
	ready     launchapi.Ready
	done      chan struct{} // closed when the process has been waited for
	exit      int
	stdout    *bufio.Reader // a peer's, until its ready line is read
	stderrBuf *tailBuffer
	lineMu    sync.Mutex
}

// formationFile is formation.json.
type formationFile struct {
	FormationID string             `json:"formation_id"`
	Roster      string             `json:"roster"`
	ProjectDir  string             `json:"project_dir"`
	Launcher    formation.Launcher `json:"launcher"`
	StartedAt   string             `json:"started_at"`
	EndedAt     *string            `json:"ended_at"`
	ExitStatus  *int               `json:"exit_status"`
	Members     []formationMember  `json:"members"`
}

type formationMember struct {
	Name       string  `json:"name"`
	Entry      bool    `json:"entry"`
	Capsule    string  `json:"capsule"`
	Version    string  `json:"version"`
	SHA256     string  `json:"sha256"`
	Workdir    string  `json:"workdir"`
	SessionID  *string `json:"session_id"`
	RecordsDir *string `json:"records_dir"`
}

// FormationLine is the --json formation line.
type FormationLine struct {
	FormationID string          `json:"formation_id"`
	Roster      string          `json:"roster"`
	Entry       string          `json:"entry"`
	Peers       []FormationPeer `json:"peers"`
}

// FormationPeer is one peer on the formation line.
type FormationPeer struct {
	Name       string `json:"name"`
	Capsule    string `json:"capsule"`
	Version    string `json:"version"`
	SessionID  string `json:"session_id"`
	PID        int    `json:"pid"`
	URL        string `json:"url"`
	Workdir    string `json:"workdir"`
	RecordsDir string `json:"records_dir"`
}

type launcher struct {
	req     FormationRequest
	a       *formation.Admitted
	frm     string
	pub     ed25519.PublicKey
	tokens  [][]formation.Call // per member, its calls
	dir     string
	file    formationFile
	fileMu  sync.Mutex
	members []*member // by roster index (nil: not started)
	outMu   sync.Mutex
	bin     string
}

// RunFormation runs the admitted roster and returns the launcher's exit
// status: the entry's, or 1 for a refusal before the entry started (the
// error says why), 130/143/129 when the launcher itself was signalled.
func RunFormation(ctx context.Context, req FormationRequest) (int, error) {
	if req.LookupEnv == nil {
		req.LookupEnv = os.LookupEnv
	}
	if req.Environ == nil {
		req.Environ = os.Environ
	}
	a := req.Admitted
	l := &launcher{req: req, a: a, members: make([]*member, len(a.Members))}
	l.bin = "/proc/self/exe"
	if b, _ := req.LookupEnv(delegate.EnvMurBinary); b != "" {
		l.bin = b
	} else if exe, err := os.Executable(); err == nil {
		l.bin = exe
	}
	for _, w := range a.Warnings {
		fmt.Fprintf(req.Stderr, "warning[%s]: %s\n", w.Code, w.Message)
	}
	// 3: the id and the key pair, in this process's memory only; a token per edge.
	l.frm = ids.New(ids.Formation)
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return 1, fmt.Errorf("cannot make the formation's key: %w", err)
	}
	l.pub = pub
	l.tokens = make([][]formation.Call, len(a.Members))
	for i, cs := range a.Callees {
		l.tokens[i] = []formation.Call{}
		for _, j := range cs {
			l.tokens[i] = append(l.tokens[i], formation.Call{Name: a.Members[j].Name, Token: formation.MintToken(priv, l.frm, a.Members[i].Name, a.Members[j].Name)})
		}
	}
	clear(priv) // every token is minted: the private key is no longer needed
	// 4: the formation's directory and formation.json.
	if err := l.makeDir(); err != nil {
		return 1, err
	}
	// Signals: close every lifeline; a second one kills every member's group.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	var sigMu sync.Mutex
	var got os.Signal
	go func() {
		for s := range sigs {
			sigMu.Lock()
			first := got == nil
			if first {
				got = s
			}
			sigMu.Unlock()
			if first {
				l.closeLifelines(true)
			} else {
				l.killAll()
			}
		}
	}()
	signalled := func() int {
		sigMu.Lock()
		defer sigMu.Unlock()
		if s, ok := got.(syscall.Signal); ok {
			return 128 + int(s)
		}
		return 0
	}
	// 5–6: every peer at once, then readiness.
	entry := a.Entry()
	var wg sync.WaitGroup
	errs := make([]error, len(a.Members))
	for i := range a.Members {
		if i == entry {
			continue
		}
		m, err := l.start(i)
		if err != nil {
			errs[i] = err
			break
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = l.awaitReady(ctx, m) }()
	}
	wg.Wait()
	// A signal to the launcher closed every lifeline: the peers' ends that
	// follow are its doing, not a formation that did not come up.
	if s := signalled(); s != 0 {
		l.reap()
		return l.finish(s), nil
	}
	for i, err := range errs {
		if err != nil {
			l.closeLifelines(false)
			stopped := l.reap()
			return l.finish(1), l.notUp(i, err, stopped)
		}
	}
	// 7: line 2 on every peer's channel; formation.json with the sessions.
	for i, m := range l.members {
		if m != nil && i != entry {
			l.writeLine2(m)
		}
	}
	l.writeFile()
	// 8: the formation line.
	l.printFormation()
	// 9: the entry, in the launcher's own process group.
	em, err := l.start(entry)
	if err != nil {
		l.closeLifelines(false)
		l.reap()
		return l.finish(1), l.notUp(entry, err, nil)
	}
	watched := make(chan struct{})
	go func() { defer close(watched); l.watchEntryRecord(em) }()
	<-em.done
	<-watched
	// 10: the peers' lifelines, then the reaping.
	l.closeLifelines(true)
	l.reap()
	status := em.exit
	if s := signalled(); s != 0 {
		status = s
	}
	return l.finish(status), nil
}

func (l *launcher) makeDir() error {
	root := home.Formations(l.req.Home)
	fail := func(err error) error {
		return diag.Wrap(err, "E-IO-058", "cannot create the formation's directory under %s", root).
			WithHint("make %s writable by you (0700); nothing was started", root)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fail(err)
	}
	_ = os.Chmod(root, 0o700)
	l.dir = filepath.Join(root, l.frm)
	if err := os.Mkdir(l.dir, 0o700); err != nil {
		return fail(err)
	}
	ps, _ := running.ProcessStart(os.Getpid())
	a := l.a
	l.file = formationFile{FormationID: l.frm, Roster: a.File, ProjectDir: a.Dir,
		Launcher:  formation.Launcher{PID: os.Getpid(), ProcessStart: ps},
		StartedAt: time.Now().UTC().Format(time.RFC3339)}
	for i, m := range a.Members {
		l.file.Members = append(l.file.Members, formationMember{Name: m.Name, Entry: m.Entry, Capsule: m.Full, Version: m.Version,
			SHA256: a.Bound[i].SHA256, Workdir: filepath.Join(l.dir, m.Name)})
	}
	if err := l.writeFile(); err != nil {
		return diag.Wrap(err, "E-IO-058", "cannot write %s", filepath.Join(l.dir, "formation.json")).
			WithHint("make %s writable by you; nothing was started", root)
	}
	return nil
}

func (l *launcher) writeFile() error {
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	b, err := json.MarshalIndent(l.file, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(l.dir, "formation.json"), append(b, '\n'), 0o600)
}

func (l *launcher) finish(status int) int {
	l.fileMu.Lock()
	now := time.Now().UTC().Format(time.RFC3339)
	l.file.EndedAt, l.file.ExitStatus = &now, &status
	l.fileMu.Unlock()
	_ = l.writeFile()
	l.retainFormations()
	return status
}

// env is a member's environment: the launcher's minus every formation and
// spawner variable, then the formation's.
func (l *launcher) env() []string {
	var env []string
	for _, kv := range l.req.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "MURMUR_FORMATION_") || name == launchapi.EnvSpawner || name == launchapi.EnvSpawnerLifeline || name == delegate.EnvHostWarnings {
			continue
		}
		env = append(env, kv)
	}
	return append(env, delegate.EnvFormationID+"="+l.frm, formation.EnvChannel+"=3",
		delegate.EnvFormationLifeline+"=4", delegate.EnvHostWarnings+"=1")
}

// start creates member i's work folder, channel and lifeline and starts its
// mur run. A peer gets its own process group and pipes for its output; the
// entry shares the launcher's group, standard input and output.
func (l *launcher) start(i int) (*member, error) {
	a := l.a
	mm := a.Members[i]
	m := &member{idx: i, name: mm.Name, entry: mm.Entry, workdir: filepath.Join(l.dir, mm.Name), done: make(chan struct{}), stderrBuf: &tailBuffer{max: 20}}
	if err := os.Mkdir(m.workdir, 0o700); err != nil {
		return nil, fmt.Errorf("could not be started: %v", pathlessErr(err))
	}
	ps, _ := running.ProcessStart(os.Getpid())
	line, err := formation.Encode(formation.Line1{V: 1, FormationID: l.frm, Member: mm.Name, Entry: mm.Entry, Project: a.Dir,
		SHA256: a.Bound[i].SHA256, Launcher: formation.Launcher{PID: os.Getpid(), ProcessStart: ps},
		VerifyKey: formation.EncodeKey(l.pub), Calls: l.tokens[i]})
	if err != nil {
		return nil, fmt.Errorf("could not be started: %v", err)
	}
	chanR, chanW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("could not be started: %v", err)
	}
	defer chanR.Close()
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		chanW.Close()
		return nil, fmt.Errorf("could not be started: %v", err)
	}
	defer lifeR.Close()
	// Both lines fit the pipe's buffer: these writes never block.
	if _, err := chanW.Write(line); err != nil {
		chanW.Close()
		lifeW.Close()
		return nil, fmt.Errorf("could not be started: %v", err)
	}
	m.chanW, m.lifeW = chanW, lifeW
	if mm.Entry {
		if l2, err := formation.Encode(l.line2(i)); err == nil {
			_, _ = chanW.Write(l2)
		}
		chanW.Close()
		m.chanW = nil
	}
	args := []string{"run", "--capsule", mm.Full, "--capsule-version", mm.Version, "--workdir", m.workdir}
	if !mm.Entry || l.req.JSON {
		args = append(args, "--json")
	}
	if l.req.Containment != "" {
		args = append(args, "--containment", l.req.Containment)
	}
	if mm.Entry && l.req.Task != "" {
		args = append(args, "--task", l.req.Task)
	}
	cmd := exec.Command(l.bin, args...)
	cmd.Args[0] = "mur"
	cmd.Env = l.env()
	cmd.ExtraFiles = []*os.File{chanR, lifeR}
	var stdout, stderr io.ReadCloser
	if mm.Entry {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, l.req.Stdout, l.req.Stderr
		if f, ok := l.req.Stdout.(*os.File); ok {
			cmd.Stdout = f
		}
		if f, ok := l.req.Stderr.(*os.File); ok {
			cmd.Stderr = f
		}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if stdout, err = cmd.StdoutPipe(); err == nil {
			stderr, err = cmd.StderrPipe()
		}
		if err != nil {
			m.closeLines()
			return nil, fmt.Errorf("could not be started: %v", err)
		}
	}
	if err := cmd.Start(); err != nil {
		m.closeLines()
		return nil, fmt.Errorf("could not be started: %v", pathlessErr(err))
	}
	m.cmd = cmd
	l.members[i] = m
	if !mm.Entry {
		m.stdout = bufio.NewReader(stdout)
		go l.copyLines(m, stderr, true)
	}
	go func() {
		err := cmd.Wait()
		m.exit = exitStatus(cmd, err)
		close(m.done)
	}()
	return m, nil
}

func (m *member) closeLines() {
	if m.chanW != nil {
		m.chanW.Close()
		m.chanW = nil
	}
	if m.lifeW != nil {
		m.lifeW.Close()
		m.lifeW = nil
	}
}

func exitStatus(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
		return 1
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

func pathlessErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// copyLines copies a peer's output to the launcher's stderr, each line
// prefixed [name]; stderr lines are kept for E-RUN-045 too.
func (l *launcher) copyLines(m *member, r io.Reader, keep bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if keep {
			m.stderrBuf.add(sc.Text())
		}
		l.outMu.Lock()
		fmt.Fprintf(l.req.Stderr, "[%s] %s\n", m.name, sc.Text())
		l.outMu.Unlock()
	}
}

// awaitReady is step 6 for one peer: its first stdout line is a ready line
// with a door and this formation's id, then its door answers as that session.
func (l *launcher) awaitReady(ctx context.Context, m *member) error {
	ctx, cancel := context.WithTimeout(ctx, PeerReadyWithin)
	defer cancel()
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := m.stdout.ReadString('\n')
		ch <- res{s, err}
	}()
	var first res
	select {
	case first = <-ch:
	case <-ctx.Done():
		return errors.New("did not report itself ready within 180s")
	}
	if first.err != nil && first.line == "" {
		<-m.done
		return fmt.Errorf("exited with status %d before it reported itself ready", m.exit)
	}
	rd, err := launchapi.ParseReady(first.line)
	switch {
	case err != nil && strings.HasPrefix(strings.TrimSpace(first.line), `{"error"`):
		// Refused before its session existed: its diagnostic is on its stderr.
		select {
		case <-m.done:
			return fmt.Errorf("exited with status %d before it reported itself ready", m.exit)
		case <-ctx.Done():
			return errors.New("did not report itself ready within 180s")
		}
	case err != nil:
		return errors.New("printed something other than a readiness line first")
	case rd.URL == nil:
		return errors.New("reported no door")
	case rd.FormationID == "":
		return errors.New("reported no formation")
	case rd.FormationID != l.frm:
		return fmt.Errorf("reported formation %s, not %s", rd.FormationID, l.frm)
	}
	m.ready = rd
	go l.copyLines(m, m.stdout, false)
	c := doorapi.NewClient(doorapi.Endpoint(*rd.URL), nil)
	for {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		sid, err := c.CardSessionID(pctx)
		pcancel()
		if err == nil && sid == rd.SessionID {
			break
		}
		select {
		case <-m.done:
			return errors.New("exited after reporting itself ready, before its door answered")
		case <-ctx.Done():
			return fmt.Errorf("its door did not answer as session %s within 180s", rd.SessionID)
		case <-time.After(100 * time.Millisecond):
		}
	}
	l.fileMu.Lock()
	sid, rdir := rd.SessionID, rd.RecordsDir
	l.file.Members[m.idx].SessionID, l.file.Members[m.idx].RecordsDir = &sid, &rdir
	l.fileMu.Unlock()
	_ = l.writeFile()
	return nil
}

func (l *launcher) line2(i int) formation.Line2 {
	out := formation.Line2{Addresses: []formation.Address{}}
	for _, j := range l.a.Callees[i] {
		if p := l.members[j]; p != nil && p.ready.URL != nil {
			out.Addresses = append(out.Addresses, formation.Address{Name: p.name, URL: "http://" + *p.ready.URL})
		}
	}
	return out
}

func (l *launcher) writeLine2(m *member) {
	if b, err := formation.Encode(l.line2(m.idx)); err == nil && m.chanW != nil {
		_, _ = m.chanW.Write(b)
	}
	if m.chanW != nil {
		m.chanW.Close()
		m.chanW = nil
	}
}

func (l *launcher) printFormation() {
	a := l.a
	fl := FormationLine{FormationID: l.frm, Roster: a.File, Entry: a.Members[a.Entry()].Name, Peers: []FormationPeer{}}
	for i, m := range l.members {
		if m == nil || i == a.Entry() {
			continue
		}
		mm := a.Members[i]
		fl.Peers = append(fl.Peers, FormationPeer{Name: mm.Name, Capsule: mm.Full, Version: mm.Version, SessionID: m.ready.SessionID,
			PID: m.cmd.Process.Pid, URL: *m.ready.URL, Workdir: m.workdir, RecordsDir: m.ready.RecordsDir})
	}
	l.outMu.Lock()
	defer l.outMu.Unlock()
	if l.req.JSON {
		b, _ := json.Marshal(fl)
		fmt.Fprintln(l.req.Stdout, string(b))
		return
	}
	fmt.Fprintf(l.req.Stderr, "formation %s (roster %s)\n", l.frm, a.File)
	for _, p := range fl.Peers {
		fmt.Fprintf(l.req.Stderr, "  peer %s  %s  http://%s  pid %d\n", p.Name, p.SessionID, p.URL, p.PID)
	}
	fmt.Fprintf(l.req.Stderr, "  entry %s\n", fl.Entry)
}

// watchEntryRecord learns the entry's session as soon as it exists and
// rewrites formation.json. The entry shares the launcher's stdout, so its
// ready line is not the launcher's to read; its records dir is: a member's
// records lie under its own fresh work folder's records root, which holds
// its one session.
func (l *launcher) watchEntryRecord(m *member) {
	root := home.ProjectRecords(l.req.Home, m.workdir)
	for {
		ended := false
		select {
		case <-m.done:
			ended = true
		default:
		}
		if names, _ := os.ReadDir(root); len(names) > 0 {
			for _, n := range names {
				if ids.Valid(ids.Session, n.Name()) {
					sid, rdir := n.Name(), filepath.Join(root, n.Name())
					l.fileMu.Lock()
					l.file.Members[m.idx].SessionID, l.file.Members[m.idx].RecordsDir = &sid, &rdir
					l.fileMu.Unlock()
					_ = l.writeFile()
					return
				}
			}
		}
		if ended {
			return
		}
		select {
		case <-m.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// closeLifelines closes the lifelines of the started members (the entry's
// too when entry is true); a member reads EOF and winds down.
func (l *launcher) closeLifelines(entry bool) {
	for _, m := range l.members {
		if m != nil && (entry || !m.entry) {
			m.lineMu.Lock()
			if m.lifeW != nil {
				m.lifeW.Close()
				m.lifeW = nil
			}
			m.lineMu.Unlock()
		}
	}
}

// killAll SIGKILLs every started member's process group at once.
func (l *launcher) killAll() {
	for _, m := range l.members {
		if m != nil && m.cmd != nil && !m.entry {
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		} else if m != nil && m.cmd != nil {
			_ = m.cmd.Process.Kill()
		}
	}
}

// reap waits for every started peer, SIGKILLing the group of one still
// there ReapAfter after its lifeline closed. It returns "<name> (pid N)"
// per member that had been started.
func (l *launcher) reap() []string {
	var out []string
	deadline := time.After(ReapAfter)
	for _, m := range l.members {
		if m == nil || m.cmd == nil || m.entry {
			continue
		}
		out = append(out, fmt.Sprintf("%s (pid %d)", m.name, m.cmd.Process.Pid))
		select {
		case <-m.done:
		case <-deadline:
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
			<-m.done
		}
		m.closeLines()
		if m.exit != 0 {
			l.outMu.Lock()
			fmt.Fprintf(l.req.Stderr, "[%s] ended (exit status %d)\n", m.name, m.exit)
			l.outMu.Unlock()
		}
	}
	return out
}

// notUp is E-RUN-045 for member i.
func (l *launcher) notUp(i int, why error, stopped []string) error {
	mm := l.a.Members[i]
	var b strings.Builder
	fmt.Fprintf(&b, "the formation did not come up: member '%s' (%s@%s) %v", mm.Name, mm.Full, mm.Version, why)
	if m := l.members[i]; m != nil {
		for _, s := range m.stderrBuf.lines() {
			b.WriteString("\n  " + s)
		}
	}
	if len(stopped) == 0 {
		b.WriteString("\nstopped: none")
	} else {
		b.WriteString("\nstopped: " + strings.Join(stopped, ", "))
	}
	return diag.New("E-RUN-045", "%s", b.String()).WithHint("run the member alone (mur run --capsule %s --capsule-version %s) to see why", mm.Full, mm.Version)
}

// tailBuffer keeps the last max lines.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	l   []string
}

func (t *tailBuffer) add(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.l = append(t.l, s)
	if len(t.l) > t.max {
		t.l = t.l[len(t.l)-t.max:]
	}
}

func (t *tailBuffer) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.l...)
}
