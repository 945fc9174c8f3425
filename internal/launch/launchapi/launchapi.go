// Package launchapi is the protocol between a `mur run` process and
// whoever launched it, both sides in one file (docs/delegation.md, docs/cli.md):
//
//   - the --json ready line the run prints on standard output once its
//     session exists (Ready), which mur run writes and a parent runtime reads;
//   - what a parent runtime hands a delegated child: one line of JSON on
//     standard input under --spawn-approval-stdin (Launched), the
//     MURMUR_SPAWNER handle naming where the child reports its completion
//     (Spawner), and the lifeline, the read end of a pipe on descriptor 3
//     named by MURMUR_SPAWNER_LIFELINE, which reads EOF when the parent ends.
//
// A field renamed here is renamed for the writer and the reader at once.
package launchapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/door/doorapi"
	"github.com/murmur-go/murmur/internal/roost/roostapi"
	"github.com/murmur-go/murmur/internal/trace"
)

// Ready is the --json ready line: one JSON object on standard output once
// the session exists. URL is the door's bare host:port (127.0.0.1:PORT) for
// an agent capsule and null for a script capsule, which has no door.
type Ready struct {
	URL        *string `json:"url"`
	PID        int     `json:"pid"`
	SessionID  string  `json:"session_id"`
	Name       string  `json:"name"`
	Version    string  `json:"version"`
	Workdir    string  `json:"workdir"`
	RecordsDir string  `json:"records_dir"`
	// FormationID is set for a formation member only.
	FormationID string `json:"formation_id,omitempty"`
}

// ParseReady reads a launched run's first line of standard output: its
// ready line, or the JSON error a run refused before its session exists
// prints in its place (docs/cli.md "Machine-readable output").
func ParseReady(line string) (Ready, error) {
	var refused struct {
		Error *struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal([]byte(line), &refused) == nil && refused.Error != nil && refused.Error.Code != "" {
		return Ready{}, fmt.Errorf("the child refused to start: %s: %s", refused.Error.Code, refused.Error.Message)
	}
	var rd Ready
	if err := json.Unmarshal([]byte(line), &rd); err != nil || !strings.HasPrefix(rd.SessionID, "ses_") {
		return Ready{}, fmt.Errorf("the child's first line is not a --json ready line: %q", strings.TrimSpace(line))
	}
	return rd, nil
}

// Environment variables a parent runtime sets for a delegated child.
const (
	// EnvSpawner holds the Spawner handle as JSON.
	EnvSpawner = "MURMUR_SPAWNER"
	// EnvSpawnerLifeline names the lifeline's descriptor: LifelineFD.
	EnvSpawnerLifeline = "MURMUR_SPAWNER_LIFELINE"
)

// LifelineFD is the child's descriptor of the lifeline: the first one after
// standard input, output and error (exec.Cmd.ExtraFiles[0]).
const LifelineFD = 3

// FlagSpawnApprovalStdin is mur run's flag that makes it read Launched from
// standard input.
const FlagSpawnApprovalStdin = "spawn-approval-stdin"

// Launched is what a child's standard input holds under
// --spawn-approval-stdin: one line of compact JSON.
type Launched struct {
	Approval roostapi.Approval
	// Snapshot is the workdir snapshot summary, nil when none was made.
	Snapshot *trace.Snapshot
	// Task is a script child's task ("" for an agent child, which gets its
	// task at its door).
	Task string
	// ParentTier is the parent's achieved containment class: the child's
	// floor is at least this.
	ParentTier string
	// SpawnedBy and DelegationID name the parent session and the
	// delegation, for every delegated child: a child with no MURMUR_SPAWNER
	// handle (a plan capsule step's) still records them.
	SpawnedBy, DelegationID string
	// DoorToken is the operator token the parent's runtime minted for the
	// child (doorapi.NewOperatorToken): a child whose door declares
	// network.authentication takes it as its own instead of making one, so
	// the parent can deliver the task and reach the door after. "" when
	// the parent sent none. Never log it.
	DoorToken string
}

// launchLine is Launched on the wire.
type launchLine struct {
	Approval        string          `json:"approval"`
	ParentTier      string          `json:"parent_tier"`
	WorkdirSnapshot *trace.Snapshot `json:"workdir_snapshot,omitempty"`
	Task            string          `json:"task,omitempty"`
	SpawnedBy       string          `json:"spawned_by,omitempty"`
	DelegationID    string          `json:"delegation_id,omitempty"`
	DoorToken       string          `json:"door_token,omitempty"`
}

// Line is l as the parent writes it, newline included. It holds the
// approval's text and the door token: write it to the child's standard
// input and nowhere else.
func (l Launched) Line() []byte {
	b, _ := json.Marshal(launchLine{Approval: l.Approval.Reveal(), ParentTier: l.ParentTier, WorkdirSnapshot: l.Snapshot, Task: l.Task,
		SpawnedBy: l.SpawnedBy, DelegationID: l.DelegationID, DoorToken: l.DoorToken})
	return append(b, '\n')
}

// ReadLaunched reads the one line a parent wrote to standard input. The
// approval and the door token stay in memory; nothing here logs them, and a
// door_token not of an operator token's form is refused without quoting it.
func ReadLaunched(r io.Reader) (*Launched, error) {
	line, err := bufio.NewReaderSize(r, 64<<10).ReadString('\n')
	if err != nil && err != io.EOF {
		return nil, diag.Wrap(err, "E-RUN-020", "--spawn-approval-stdin: standard input cannot be read")
	}
	var l launchLine
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &l); err != nil {
		return nil, diag.Wrap(err, "E-RUN-020", "--spawn-approval-stdin: standard input does not hold one line of JSON {\"approval\", \"parent_tier\", \"workdir_snapshot\"?, \"task\"?, \"door_token\"?}").
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
	if l.DoorToken != "" && !doorapi.IsOperatorToken(l.DoorToken) {
		return nil, diag.New("E-RUN-020", "--spawn-approval-stdin: the line's door_token is not an operator token (%s and the base64url, no padding, of 32 bytes)", doorapi.OperatorTokenPrefix).
			WithHint("--spawn-approval-stdin is for a parent capsule's runtime only")
	}
	return &Launched{Approval: roostapi.ApprovalOf(l.Approval), Snapshot: l.WorkdirSnapshot, Task: l.Task, ParentTier: l.ParentTier,
		SpawnedBy: l.SpawnedBy, DelegationID: l.DelegationID, DoorToken: l.DoorToken}, nil
}

// Spawner is the MURMUR_SPAWNER handle: where a child reports its outcome
// (its parent's door, session, the delegating task's context, and the
// delegation).
type Spawner struct {
	URL          string `json:"url"`
	SessionID    string `json:"session_id"`
	ContextID    string `json:"context_id"`
	DelegationID string `json:"delegation_id"`
}

// EnvValue is s as EnvSpawner's value.
func (s Spawner) EnvValue() string {
	b, _ := json.Marshal(s)
	return string(b)
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
	fd, why := PipeReadEnd(v)
	if why != "" {
		return nil, bad(why)
	}
	syscall.CloseOnExec(fd) // never handed to a command, a tool or a child of the child
	return os.NewFile(uintptr(fd), "spawner-lifeline"), nil
}

// PipeReadEnd checks that v names an open pipe's read end numbered 3 or
// above, and returns it; why says what it is instead. A formation's
// lifeline is held to the same rule.
func PipeReadEnd(v string) (fd int, why string) {
	fd, err := strconv.Atoi(v)
	if err != nil || fd < LifelineFD {
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
