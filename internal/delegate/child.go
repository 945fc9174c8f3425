package delegate

import (
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/murmur-go/murmur/internal/launch/launchapi"
)

// Environment variables of the delegation runtime. EnvSpawner and
// EnvSpawnerLifeline belong to the child-launch protocol (launchapi).
const (
	EnvRoostURL        = "MURMUR_ROOST_URL"
	EnvSpawner         = launchapi.EnvSpawner
	EnvSpawnerLifeline = launchapi.EnvSpawnerLifeline
	EnvMurBinary       = "MURMUR_MUR_BINARY"
	EnvTimeout         = "MURMUR_DELEGATION_TIMEOUT_SECS"
	EnvHostWarnings    = "MURMUR_HOST_WARNINGS_REPORTED"
	EnvFormationID     = "MURMUR_FORMATION_ID"
)

// The child's side of the launch protocol, as the run reads it
// (launchapi has both sides).
type (
	Launched = launchapi.Launched
	Spawner  = launchapi.Spawner
)

// ReadLaunched reads the line a parent wrote to standard input
// (launchapi.ReadLaunched).
func ReadLaunched(r io.Reader) (*Launched, error) { return launchapi.ReadLaunched(r) }

// ReadSpawner reads MURMUR_SPAWNER (launchapi.ReadSpawner).
func ReadSpawner(lookup func(string) (string, bool)) (*Spawner, error) {
	return launchapi.ReadSpawner(lookup)
}

// OpenLifeline opens the lifeline MURMUR_SPAWNER_LIFELINE names
// (launchapi.OpenLifeline).
func OpenLifeline(lookup func(string) (string, bool)) (*os.File, error) {
	return launchapi.OpenLifeline(lookup)
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
