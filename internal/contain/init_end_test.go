package contain_test

import (
	"context"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/command"
	"github.com/murmur-go/murmur/internal/contain"
)

// At the deadline a contained command ends as the same command ends outside
// containment (issue 22 item 22): same exit code and signal, ended by the
// SIGTERM, not by the SIGKILL after the grace. Before, a sealed command was
// pid 1 of its namespace, which the kernel spares any signal it has no
// handler for. The runtime's SIGTERM reaches the helper, which stays as the
// command's init and forwards it to the command's process group.
func TestDeadlineEndsAsOutsideContainment(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the tiers are Linux")
	}
	w := newWorld(t)
	cases := []struct{ name, script string }{
		{"sleep", "sleep 100"},
		{"a loop that prints", "while :; do echo tick; sleep 0.05; done"},
	}
	run := func(c string, wrap func(*exec.Cmd) error) command.Result {
		r, err := command.Run(context.Background(), command.Spec{
			Path: "/bin/sh", Args: []string{"-c", c}, Env: []string{"PATH=/usr/bin:/bin"}, Dir: w.work,
			Deadline: time.Second, KillGrace: 5 * time.Second, Limit: 1 << 16, Wrap: wrap,
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			outside := run(c.script, nil)
			if !outside.TimedOut || outside.Killed {
				t.Fatalf("outside containment: %+v", outside)
			}
			for _, class := range classes {
				requireTier(t, class)
				r := run(c.script, contain.Wrap(w.plan(t, class)))
				if r.ExitCode != outside.ExitCode || r.Signal != outside.Signal || r.TimedOut != outside.TimedOut || r.Killed != outside.Killed {
					t.Errorf("%s: ended exit %d signal %q timed out %v killed %v; outside containment exit %d signal %q timed out %v killed %v (stderr %s)",
						class, r.ExitCode, r.Signal, r.TimedOut, r.Killed, outside.ExitCode, outside.Signal, outside.TimedOut, outside.Killed, r.Stderr)
				}
			}
		})
	}
}
