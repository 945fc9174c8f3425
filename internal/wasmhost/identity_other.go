//go:build !linux

package wasmhost

import (
	"errors"
	"os"
)

// fileIdentity is only implemented on Linux (nanosecond ctime is what makes
// it an identity); elsewhere no cache entry verifies and every Compile
// compiles.
func fileIdentity(f *os.File) ([]byte, int64, error) {
	return nil, 0, errors.New("cache entries are only verified on Linux")
}

func settledIdentity(f *os.File) ([]byte, error) {
	id, _, err := fileIdentity(f)
	return id, err
}
