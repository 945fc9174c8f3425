package delegate

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
	"github.com/murmur-go/murmur/internal/trace"
)

// Environment variables of the delegation runtime.
const (
	EnvRoostURL        = "MURMUR_ROOST_URL"
	EnvSpawner         = "MURMUR_SPAWNER"
	EnvSpawnerLifeline = "MURMUR_SPAWNER_LIFELINE"
	EnvMurBinary       = "MURMUR_MUR_BINARY"
	EnvTimeout         = "MURMUR_DELEGATION_TIMEOUT_SECS"
	EnvHostWarnings    = "MURMUR_HOST_WARNINGS_REPORTED"
	EnvFormationID     = "MURMUR_FORMATION_ID"
)

// Launched is what a child's standard input held under
// --spawn-approval-stdin (contracts §18): one line of compact JSON.
type Launched struct {
	Approval roostapi.Approval
	// Snapshot is the workdir snapshot summary, nil when none was made.
	Snapshot *trace.Snapshot
	// Task is a script child's task ("" for an agent child, which gets its
	// task at its door).
	Task string
	// ParentTier is the parent's achieved containment class: the child's
	// floor is at least this (contracts §18 "The parent's tier").
	ParentTier string
}

// launchLine is Launched on the wire.
type launchLine struct {
	Approval        string          `json:"approval"`
	ParentTier      string          `json:"parent_tier"`
	WorkdirSnapshot *trace.Snapshot `json:"workdir_snapshot,omitempty"`
	Task            string          `json:"task,omitempty"`
}

// ReadLaunched reads the one line a parent wrote to standard input. The
// approval stays in memory; nothing here logs it.
func ReadLaunched(r io.Reader) (*Launched, error) {
	line, err := bufio.NewReaderSize(r, 64<<10).ReadString('\n')
	if err != nil && err != io.EOF {
		return nil, diag.Wrap(err, "E-RUN-020", "--spawn-approval-stdin: standard input cannot be read")
	}
	var l launchLine
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &l); err != nil {
		return nil, diag.Wrap(err, "E-RUN-020", "--spawn-approval-stdin: standard input does not hold one line of JSON {\"approval\", \"parent_tier\", \"workdir_snapshot\"?, \"task\"?}").
			WithHint("--spawn-approval-stdin is for a parent capsule's runtime only")
	}
	if l.Approval == "" {
		return nil, diag.New("E-RUN-020", "--spawn-approval-stdin: the line on standard input holds no approval").
			WithHint("--spawn-approval-stdin is for a parent capsule's runtime only")
	}
	switch l.ParentTier {
	case "advisory", "scoped", "sealed":
	default:
		return nil, diag.New("E-RUN-020", "--spawn-approval-stdin: the line's parent_tier %q is not a containment class (advisory, scoped or sealed)", l.ParentTier).
			WithHint("--spawn-approval-stdin is for a parent capsule's runtime only")
	}
	return &Launched{Approval: roostapi.ApprovalOf(l.Approval), Snapshot: l.WorkdirSnapshot, Task: l.Task, ParentTier: l.ParentTier}, nil
}

// Spawner is the MURMUR_SPAWNER handle: where a child reports its outcome.
type Spawner struct {
	URL          string `json:"url"`
	SessionID    string `json:"session_id"`
	ContextID    string `json:"context_id"`
	DelegationID string `json:"delegation_id"`
}

// ReadSpawner reads MURMUR_SPAWNER; nil with no error when it is unset or
// blank (a capsule nobody delegated). A value that is not a spawner handle
// is E-RUN-020 naming the variable and why.
func ReadSpawner(lookup func(string) (string, bool)) (*Spawner, error) {
	v, _ := lookup(EnvSpawner)
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	bad := func(why string) error {
		return diag.New("E-RUN-020", "%s is not a spawner handle: %s", EnvSpawner, why).
			WithHint("it is set by a parent capsule's runtime only; unset it when running by hand")
	}
	var s Spawner
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, bad("it is not the JSON object {\"url\", \"session_id\", \"context_id\", \"delegation_id\"}")
	}
	switch {
	case !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
		return nil, bad("url is not an http:// address")
	case !strings.HasPrefix(s.SessionID, "ses_"):
		return nil, bad("session_id is not a ses_ id")
	case !strings.HasPrefix(s.DelegationID, "dlg_"):
		return nil, bad("delegation_id is not a dlg_ id")
	case s.ContextID == "":
		return nil, bad("context_id is missing")
	}
	return &s, nil
}

// OpenLifeline checks MURMUR_SPAWNER_LIFELINE and returns the descriptor it
// names as a file; nil with no error when it is unset or blank. Anything but
// an open pipe's read end numbered 3 or above is E-RUN-020.
func OpenLifeline(lookup func(string) (string, bool)) (*os.File, error) {
	v, _ := lookup(EnvSpawnerLifeline)
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	bad := func(why string) error {
		return diag.New("E-RUN-020", "%s=%s cannot be the spawner lifeline: %s", EnvSpawnerLifeline, v, why).
			WithHint("it is set by a parent capsule's runtime only; unset it when running by hand")
	}
	fd, why := pipeReadEnd(v)
	if why != "" {
		return nil, bad(why)
	}
	syscall.CloseOnExec(fd) // never handed to a command, a tool or a child of the child
	return os.NewFile(uintptr(fd), "spawner-lifeline"), nil
}

// pipeReadEnd checks that v names an open pipe's read end numbered 3 or
// above, and returns it; why says what it is instead.
func pipeReadEnd(v string) (fd int, why string) {
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return 0, "it must name a descriptor numbered 3 or above"
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return 0, "the descriptor is not open"
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return 0, "the descriptor is not a pipe"
	}
	flags, err := fcntlGetfl(fd)
	if err != nil || flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return 0, "the descriptor is not a pipe's read end"
	}
	return fd, ""
}

func fcntlGetfl(fd int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// WatchLifeline calls onEOF once the lifeline reads EOF (or fails): the
// process that launched this one has ended. The parent never writes, so
// any read that returns is the end. Before onEOF runs, standard error
// (fd 2, a pipe to the parent that nobody reads any more) is pointed at
// bootstrapLog, so the child's diagnostics from then on are kept there —
// and a write to the broken pipe cannot kill the child with SIGPIPE before
// it has recorded its completion.
func WatchLifeline(f *os.File, bootstrapLog string, onEOF func()) {
	go func() {
		var b [1]byte
		for {
			if _, err := f.Read(b[:]); err != nil {
				spawnerGone.Store(true)
				redirectStderr(bootstrapLog)
				onEOF()
				return
			}
		}
	}()
}

// redirectStderr points fd 2 at path (appended, 0600). When the file
// cannot be opened, fd 2 becomes /dev/null: losing the lines is better
// than dying of SIGPIPE mid-report.
func redirectStderr(path string) {
	if path != "" {
		_ = os.MkdirAll(filepath.Dir(path), 0o700)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		if f, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0); err != nil {
			return
		}
	}
	defer f.Close()
	_ = unix.Dup3(int(f.Fd()), 2, 0)
}
