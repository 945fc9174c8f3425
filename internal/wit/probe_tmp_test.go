package wit_test

import (
	"testing"

	"github.com/murmur-go/murmur/internal/wasmhost"
)

func BenchmarkProbeGet(b *testing.B) {
	BenchmarkHTTPGet1KiB(b)
	wasmhost.ProbeDump()
}
