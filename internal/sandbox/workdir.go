package sandbox

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"
)

// WorkdirLimitError is why a run was stopped when its work folder passed
// capabilities.resources.workdir_max_bytes: EndingOf reads it (as the cause
// of a cancelled call) as a resource_limit ending.
type WorkdirLimitError struct {
	Dir  string
	Max  int64
	Used int64
}

func (e *WorkdirLimitError) Error() string {
	return fmt.Sprintf("E-RUN-017: the work folder %s holds %d bytes, past capabilities.resources.workdir_max_bytes (%d)", e.Dir, e.Used, e.Max)
}

// WorkdirBytes is the size of a work folder as the limit counts it: the
// apparent size of every regular file under dir (a hard link once;
// symbolic links are not followed). Files that vanish during the walk are
// skipped.
func WorkdirBytes(dir string) (int64, error) {
	type key struct{ dev, ino uint64 }
	seen := map[key]bool{}
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // unreadable or gone: the guest cannot grow it either
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			k := key{uint64(st.Dev), st.Ino}
			if seen[k] {
				return nil
			}
			seen[k] = true
		}
		total += info.Size()
		return nil
	})
	return total, err
}

// WorkdirPollInterval is the shortest time between two measures of a work
// folder; a walk that takes long spaces them out to ten times its length,
// so watching a large folder costs at most a tenth of a core.
const WorkdirPollInterval = 20 * time.Millisecond

// WatchWorkdir measures dir until ctx ends, and calls stop once with a
// *WorkdirLimitError when it holds more than max bytes. A folder already
// past max is stopped at the first measure. Between two measures a guest
// can write more: the overshoot is bounded by what it writes in one
// interval, not by the limit.
func WatchWorkdir(ctx context.Context, dir string, max int64, stop func(*WorkdirLimitError)) {
	if max <= 0 {
		return
	}
	wait := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		start := time.Now()
		used, err := WorkdirBytes(dir)
		if err == nil && used > max {
			stop(&WorkdirLimitError{Dir: dir, Max: max, Used: used})
			return
		}
		wait = WorkdirPollInterval
		if took := time.Since(start); 10*took > wait {
			wait = 10 * took
		}
	}
}
