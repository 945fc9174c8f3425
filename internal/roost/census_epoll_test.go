package roost

import (
	"fmt"
	"os"
	"testing"

	"github.com/murmur-go/murmur/internal/home"
)

// The census's re-check goes through one epoll instance, and more capsules
// exiting at once than one epoll_wait returns (64) are all seen: the count
// steps down to exactly the ones still running.
func TestStartupSetEpollManyExits(t *testing.T) {
	dir := home.Running(t.TempDir())
	os.MkdirAll(dir, 0o700)
	const n, keep = 70, 3
	var sleepers []interface{ Kill() error }
	var waits []func() error
	for i := range n {
		c, start := startSleeper(t)
		writeRecord(t, dir, record(fmt.Sprintf("ses_%02d", i), c.Process.Pid, start))
		sleepers = append(sleepers, c.Process)
		waits = append(waits, c.Wait)
	}
	set, cnt, err := scanStartup(dir)
	if err != nil || cnt.Live != n {
		t.Fatalf("scan: %+v %v", cnt, err)
	}
	defer set.close()
	if set.epfd < 0 || len(set.fds) != n {
		t.Fatalf("epoll instance %d over %d pidfds, want one over %d", set.epfd, len(set.fds), n)
	}
	for i := keep; i < n; i++ {
		sleepers[i].Kill()
		waits[i]()
	}
	waitCount(t, set, keep)
	if len(set.fds) != keep || len(set.slow) != 0 || set.epfd < 0 {
		t.Fatalf("after the exits: %d pidfds, %d slow, epoll %d", len(set.fds), len(set.slow), set.epfd)
	}
}
