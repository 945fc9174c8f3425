package wasmhost

import "sync"

// spoolOnly marks the components tests run on the spool path although
// the callers' rule (callerIO) would give them Go's wasi:io.
var spoolOnly sync.Map

// SpoolOnly keeps c's runs in the tests on the spool path (callerIO).
func SpoolOnly(c *Component) { spoolOnly.Store(c, true) }
