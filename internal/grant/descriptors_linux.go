package grant

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func boundDescriptors(n uint64) (uint64, error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("read the open-file limit: %w", err)
	}
	if lim.Cur <= n {
		return lim.Cur, nil
	}
	lim.Cur = n
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("lower the open-file limit to %d: %w", n, err)
	}
	return n, nil
}
