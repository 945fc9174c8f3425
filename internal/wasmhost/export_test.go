package wasmhost

// SpoolOnly keeps c's wasi:http bodies on the spool even where Go would
// answer its wasi:io (Component.goIO), for tests of the spool path.
func SpoolOnly(c *Component) { c.spoolOnly = true }
