package wasihttp

import (
	"syscall"
	"testing"

	"github.com/murmur-go/murmur/internal/wasmhost"
)

// A fields value past the fields bound is refused (invalid-syntax) from its
// canonical ABI pointer and length, before any of it is copied: the
// component's declaration of fields.append is rewritten at compile time so
// that wasmtime hands the host (ptr, len) instead of lifting the list
// element by element. Issue 22 item 11: a 64 MiB value peaked at 4.94 GB
// (a 32-byte C value and a Rust value per byte); now the process grows by
// the guest's own 64 MiB and little else. A value within the bound is read
// from the guest's memory and kept.
func TestFieldsValueBoundedBeforeLift(t *testing.T) {
	h := wasmhost.NewHost()
	Enable(h, Grant{Decide: allowAll, MaxBodyBytes: 1 << 20, MaxInFlight: 4})
	i := instantiate(t, "httpleak.wat", wasmhost.RunConfig{Host: h, Limits: wasmhost.Limits{MemoryBytes: 256 << 20}})
	defer i.Close()
	for _, tc := range []struct {
		n    uint32
		want uint32 // 0 ok, 1 + the header-error case
	}{{1 << 10, 0}, {maxFieldsBytes - 5, 0}, {maxFieldsBytes - 4, 1}, {64 << 20, 1}} {
		var before, after syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &before)
		v, err := i.Call(bg, "", "append", tc.n)
		syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		if err != nil || v != tc.want {
			t.Fatalf("append of %d bytes: %v, %v; want %d", tc.n, v, err, tc.want)
		}
		grew := (after.Maxrss - before.Maxrss) << 10
		t.Logf("append of %d bytes: %d; peak RSS %d MiB (grew %d MiB)", tc.n, v, after.Maxrss>>10, grew>>20)
		// The guest's own memory grows by the value; the host copies none
		// of a refused one.
		if grew > int64(tc.n)+128<<20 {
			t.Errorf("append of %d bytes grew the peak RSS by %d MiB", tc.n, grew>>20)
		}
	}
}
