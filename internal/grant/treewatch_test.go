package grant

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A folder that sat idle is still stopped as soon as a burst takes it past
// its limit, in a new subdirectory as in the
// folder itself, whether it is watched or polled.
func TestWatchWorkdirIdleThenBurst(t *testing.T) {
	for _, poll := range []bool{false, true} {
		t.Run(fmt.Sprint("poll=", poll), func(t *testing.T) {
			pollOnly = poll
			defer func() { pollOnly = false }()
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stopped := make(chan *WorkdirLimitError, 1)
			go WatchWorkdir(ctx, dir, 1<<20, func(e *WorkdirLimitError) { stopped <- e })
			time.Sleep(1200 * time.Millisecond) // idle: the watcher waits for a change
			select {
			case e := <-stopped:
				t.Fatalf("stopped while idle: %v", e)
			default:
			}
			sub := filepath.Join(dir, "a", "b")
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, "big"), make([]byte, 2<<20), 0o644); err != nil {
				t.Fatal(err)
			}
			select {
			case e := <-stopped:
				if e.Used <= 1<<20 {
					t.Fatalf("stopped with %+v", e)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("a burst past the limit was never stopped")
			}
		})
	}
}

// BenchmarkIdleWorkdirWatch is what watching an idle work folder (100 files
// in 10 directories) costs the process: CPU time per second of wall time,
// watched (inotify) and polled (every 20 ms). Run with -benchtime 1x.
func BenchmarkIdleWorkdirWatch(b *testing.B) {
	for _, poll := range []bool{false, true} {
		b.Run(map[bool]string{false: "inotify", true: "poll"}[poll], func(b *testing.B) {
			pollOnly = poll
			defer func() { pollOnly = false }()
			dir := b.TempDir()
			for d := 0; d < 10; d++ {
				sub := filepath.Join(dir, fmt.Sprint("d", d))
				os.Mkdir(sub, 0o755)
				for f := 0; f < 10; f++ {
					os.WriteFile(filepath.Join(sub, fmt.Sprint("f", f)), make([]byte, 1024), 0o644)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			go WatchWorkdir(ctx, dir, 1<<30, func(*WorkdirLimitError) {})
			time.Sleep(100 * time.Millisecond) // the first measure
			const span = 3 * time.Second
			var before, after syscall.Rusage
			for b.Loop() {
				syscall.Getrusage(syscall.RUSAGE_SELF, &before)
				time.Sleep(span)
				syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			}
			cancel()
			cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
			b.ReportMetric(100*cpu.Seconds()/span.Seconds(), "%-of-a-core")
		})
	}
}
