package wasmhost_test

// The package's tests run components with Go's wasi:io (RunConfig.GoIO),
// which its own package registers: imported here, it is in the test
// binary for the internal tests too.
import _ "github.com/murmur-go/murmur/internal/wasmhost/wasiio"
