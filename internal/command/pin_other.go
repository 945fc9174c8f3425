//go:build !linux

package command

import (
	"fmt"
	"os"
)

// Pinned is the executable at a path. Off Linux there is no /proc/self/fd
// to run a descriptor by, so Path is the name as it is.
type Pinned struct{ name string }

// Pin checks that path is an executable file.
func Pin(path string) (*Pinned, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return nil, fmt.Errorf("%s is not an executable file", path)
	}
	return &Pinned{name: path}, nil
}

// Name is the path given to Pin.
func (p *Pinned) Name() string { return p.name }

// Path is the name.
func (p *Pinned) Path() (string, error) { return p.name, nil }
