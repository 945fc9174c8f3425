package contain_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/murmur-go/murmur/internal/contain"
	"github.com/murmur-go/murmur/internal/testbin"
)

// openPTY opens a pseudo-terminal pair, the slave non-canonical so that
// TIOCINQ counts every byte pushed into its input.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, s := testbin.OpenPTY(t)
	tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag &^= unix.ICANON
	if err := unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// TIOCSTI is refused by the seccomp filter at every tier, whatever the
// request's upper bits (the kernel reads only the low 32): the attack takes
// a terminal nobody holds as its controlling terminal, which passes every
// check of the kernel's own, and pushes a byte. Uncontained, the same
// attack reaches the terminal's input (where the host allows TIOCSTI at
// all), so the test can see an injection.
func TestTIOCSTIRefusedAtEveryTier(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the tiers are Linux")
	}
	w := newWorld(t)
	attempt := func(t *testing.T, start func(stdin *os.File) (int, string)) (int, int, string) {
		_, slave := openPTY(t)
		code, out := start(slave)
		queued, err := unix.IoctlGetInt(int(slave.Fd()), unix.TIOCINQ)
		if err != nil {
			t.Fatal(err)
		}
		return code, queued, out
	}
	code, queued, out := attempt(t, func(stdin *os.File) (int, string) {
		c := exec.Command(w.self, attackArg, "tiocsti")
		var b bytes.Buffer
		c.Stdin, c.Stdout, c.Stderr = stdin, &b, &b
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		err := c.Run()
		return c.ProcessState.ExitCode(), fmt.Sprint(b.String(), err)
	})
	t.Logf("uncontained: exit %d, %d bytes queued: %s", code, queued, out)
	if code == 0 && queued == 0 {
		t.Fatalf("uncontained TIOCSTI reported success but queued nothing: the check cannot see an injection")
	}
	for _, class := range classes {
		t.Run(class, func(t *testing.T) {
			requireTier(t, class)
			p := w.plan(t, class)
			code, queued, out := attempt(t, func(stdin *os.File) (int, string) {
				c, err := contain.Command(p, w.self, []string{attackArg, "tiocsti"}, []string{"PATH=/usr/bin:/bin"}, w.work)
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				c.Stdin, c.Stdout, c.Stderr = stdin, &b, &b
				c.Run()
				return c.ProcessState.ExitCode(), b.String()
			})
			t.Logf("%s: exit %d, %d bytes queued: %s", class, code, queued, out)
			if code != 1 || queued != 0 {
				t.Errorf("%s: TIOCSTI was not refused (exit %d, %d bytes queued): %s", class, code, queued, out)
			}
		})
	}
}
