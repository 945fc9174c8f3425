package wasihttp

import (
	"fmt"
	"os"
	"strconv"
	"sync"
)

// spoolDir is a run's directory of body files, removed with the run.
type spoolDir struct {
	dir  string
	mu   sync.Mutex
	next int
}

// spoolParents are where a spool directory is made, best first: a tmpfs
// (creating and unlinking a file there costs microseconds; on ext4 with
// many recently deleted inodes it cost ~0.5 ms of kernel time a request,
// the largest share of a 1 KiB GET), then the system temporary directory.
var spoolParents = []string{"/dev/shm", ""}

func newSpoolDir() (*spoolDir, error) {
	var err error
	for _, parent := range spoolParents {
		var d string
		if d, err = os.MkdirTemp(parent, "murmur-http-"); err == nil {
			return &spoolDir{dir: d}, nil
		}
	}
	return nil, fmt.Errorf("wasmhost: creating the wasi:http spool directory: %w", err)
}

// create makes a new empty body file, open for writing, and returns it with
// its name in the spool. Body files are unlinked as soon as the side that
// reads them has them open, so a run's spool holds only bodies in flight.
func (s *spoolDir) create(kind string) (*os.File, string, error) {
	s.mu.Lock()
	s.next++
	name := kind + "-" + strconv.Itoa(s.next)
	s.mu.Unlock()
	f, err := os.OpenFile(s.path(name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, "", err
	}
	return f, name, nil
}

func (s *spoolDir) path(name string) string { return s.dir + "/" + name }
