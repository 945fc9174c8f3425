package contain_test

import (
	"os"
	"testing"

	"github.com/murmur-go/murmur/internal/contain"
)

func TestMain(m *testing.M) {
	// The test binary is its own init helper and probe child.
	contain.MaybeInit()
	if len(os.Args) > 1 && os.Args[1] == attackArg {
		os.Exit(attackMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}
