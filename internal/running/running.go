// Package running reads and writes running-capsule records (docs/running-capsules.md):
// one <session_id>.json per live session under $HOME/.murmur/running, written
// by the runtime and read by `mur ps` and by mur-roost's census.
//
// Liveness is decided from the record alone: a pid and the process's start
// time ("<boot_id>:<ticks>"), so a recycled pid is never mistaken for the
// capsule. The rule errs towards "live": a record stops counting only on
// evidence that its process is gone.
package running

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/murmur-go/murmur/internal/atomicfile"
)

// Record is one running-capsule record.
type Record struct {
	SessionID      string  `json:"session_id"`
	URL            *string `json:"url"` // null for a script capsule
	PID            int     `json:"pid"`
	ProcessStart   string  `json:"process_start"`
	CapsuleName    string  `json:"capsule_name"`
	CapsuleVersion string  `json:"capsule_version"`
	Workdir        string  `json:"workdir"`
	RecordsDir     string  `json:"records_dir"`
	StartedAt      string  `json:"started_at"`
	SpawnedBy      string  `json:"spawned_by,omitempty"`
	FormationID    string  `json:"formation_id,omitempty"`
	// FormationMember and FormationLauncher are set on a member a
	// formation's launcher started; DoorToken on a door with
	// network.authentication (its operator token: the record is 0600, and
	// mur ps never prints it).
	FormationMember   string    `json:"formation_member,omitempty"`
	FormationLauncher *Launcher `json:"formation_launcher,omitempty"`
	DoorToken         string    `json:"door_token,omitempty"`
}

// Launcher is a formation launcher's identity in a member's record.
type Launcher struct {
	PID          int    `json:"pid"`
	ProcessStart string `json:"process_start"`
}

// State classifies a record file.
type State int

const (
	Live       State = iota // its process is there (or cannot be ruled out)
	Stale                   // no process has the pid, or another process holds it
	Unreadable              // does not parse, or lacks records_dir/process_start
)

func (s State) String() string {
	switch s {
	case Live:
		return "live"
	case Stale:
		return "stale"
	default:
		return "unreadable"
	}
}

// Entry is one file found in the running directory.
type Entry struct {
	File   string // absolute path of the .json file
	Record Record // zero when Unreadable
	State  State
}

// Scan reads every .json file in dir and classifies it. A missing dir is a
// host running nothing (no entries, no error); a dir that exists but cannot be
// listed is an error whose text is the path and the OS's words. Scan never
// writes anything.
func Scan(dir string) ([]Entry, error) {
	names, err := readDirNames(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	boot := BootID()
	out := make([]Entry, 0, len(names))
	for _, n := range names {
		if !strings.HasSuffix(n, ".json") {
			continue
		}
		p := filepath.Join(dir, n)
		e := Entry{File: p, State: Unreadable}
		if data, err := readRecord(p); err == nil {
			if rec, ok := parse(data); ok {
				e.Record = rec
				e.State = liveness(rec, boot)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// readDirNames lists dir, reporting errors as "<dir>: <os words>".
func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: %w", dir, pe.Err)
		}
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: %w", dir, pe.Err)
		}
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return names, nil
}

// maxRecordBytes bounds one record file; a real record is a few hundred bytes.
const maxRecordBytes = 64 << 10

// readRecord reads a record file without ever blocking or reading without
// bound: it opens non-blocking (a FIFO named *.json must not hang mur-roost's
// start-up), accepts only a regular file, and reads at most maxRecordBytes.
// Anything else is unreadable.
func readRecord(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if st.Size() > maxRecordBytes {
		return nil, fmt.Errorf("%s: %d bytes is too large for a running record", path, st.Size())
	}
	return io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
}

func parse(data []byte) (Record, bool) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&r); err != nil {
		return Record{}, false
	}
	if r.RecordsDir == "" || r.ProcessStart == "" || r.SessionID == "" || r.PID <= 0 {
		return Record{}, false
	}
	return r, true
}

// Alive reports whether r's process is still the one that wrote it.
func (r Record) Alive() bool { return liveness(r, BootID()) == Live }

func liveness(r Record, boot string) State {
	if r.PID <= 0 {
		return Stale
	}
	if err := syscall.Kill(r.PID, 0); errors.Is(err, syscall.ESRCH) {
		return Stale
	}
	recBoot, recTicks, ok := strings.Cut(r.ProcessStart, ":")
	if !ok {
		return Live // the start time cannot be read: the holder may be the capsule
	}
	if boot != "" && recBoot != boot {
		return Stale
	}
	ticks, err := startTicks(r.PID)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Stale // the process went between the kill and the read
		}
		return Live
	}
	if strconv.FormatUint(ticks, 10) != recTicks {
		return Stale
	}
	return Live
}

var (
	bootOnce sync.Once
	bootID   string
)

// BootID is /proc/sys/kernel/random/boot_id, or "" where it cannot be read.
func BootID() string {
	bootOnce.Do(func() {
		b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		if err == nil {
			bootID = strings.TrimSpace(string(b))
		}
	})
	return bootID
}

// startTicks is field 22 of /proc/<pid>/stat, parsed after the last ')'
// because the command name (field 2) may itself hold spaces and parentheses.
func startTicks(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	fields := strings.Fields(string(b[i+1:]))
	// After ')' the first field is field 3 (state); field 22 is index 19.
	if len(fields) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// ProcessStart returns the "<boot_id>:<ticks>" identity of a process.
func ProcessStart(pid int) (string, error) {
	t, err := startTicks(pid)
	if err != nil {
		return "", err
	}
	return BootID() + ":" + strconv.FormatUint(t, 10), nil
}

// Write stores r as <dir>/<session_id>.json (0600), creating dir (0700) when
// missing. The write is atomic (temporary file, fsync, rename) so a reader
// never sees half a record (atomicfile).
func Write(dir string, r Record) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, r.SessionID+".json"), append(data, '\n'), 0o600)
}

// Remove deletes a session's record; a record already gone is not an error.
func Remove(dir, sessionID string) error {
	err := os.Remove(filepath.Join(dir, sessionID+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Self returns the pid and process_start of the calling process.
func Self() (int, string, error) {
	pid := os.Getpid()
	ps, err := ProcessStart(pid)
	return pid, ps, err
}

// Read reads the record of one session in dir and classifies it as Scan
// does. A session with no record is an error that wraps fs.ErrNotExist.
func Read(dir, sessionID string) (Record, State, error) {
	data, err := readRecord(filepath.Join(dir, sessionID+".json"))
	if err != nil {
		return Record{}, Unreadable, err
	}
	rec, ok := parse(data)
	if !ok || rec.SessionID != sessionID {
		return Record{}, Unreadable, fmt.Errorf("%s: not a running record of %s", filepath.Join(dir, sessionID+".json"), sessionID)
	}
	return rec, liveness(rec, BootID()), nil
}
