package contain_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/murmur-go/murmur/internal/contain"
)

func TestMain(m *testing.M) {
	// The test binary is its own init helper and probe child.
	contain.MaybeInit()
	// As mur-contain in TestPinHelperStartsNoProcess: answers the stamp
	// and records that it was asked.
	if log := os.Getenv(contain.StampLogEnv); log != "" && len(os.Args) == 2 && os.Args[1] == "--version" {
		f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err == nil {
			f.WriteString("run\n")
			f.Close()
		}
		fmt.Println(contain.HelperName + " " + contain.HelperStamp())
		os.Exit(0)
	}
	if len(os.Args) > 1 && os.Args[1] == attackArg {
		os.Exit(attackMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}
