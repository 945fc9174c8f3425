//go:build !unix

package wasmhost

import "io/fs"

func fileOwner(fs.FileInfo) (int, bool) { return 0, false }
