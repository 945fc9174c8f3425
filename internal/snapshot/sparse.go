package snapshot

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Budget bounds the file data all the copies of one session write together
// (the disk the snapshots cost, holes and hard links counted nothing): each
// delegation's copy stays in the parent's records, so without it a session
// could fill the disk one delegation at a time. It is safe for concurrent
// copies.
type Budget struct {
	max  int64
	used atomic.Int64
}

// NewBudget is a budget of max bytes; max of zero or less is none.
func NewBudget(max int64) *Budget { return &Budget{max: max} }

// Used is the file data the copies hold now (a failed copy gives its bytes
// back).
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

func (b *Budget) take(n int64) bool {
	if b == nil || b.max <= 0 {
		return true
	}
	if b.used.Add(n) > b.max {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *Budget) give(n int64) {
	if b != nil && b.max > 0 && n != 0 {
		b.used.Add(-n)
	}
}

// BudgetSpent is a copy stopped because the session's copies together
// would write more file data than its Budget.
type BudgetSpent struct {
	Max, Used int64
}

func (e *BudgetSpent) Error() string {
	return fmt.Sprintf("this session's workdir snapshots already hold %d bytes of file data, and together they may hold at most %d", e.Used, e.Max)
}

// copyChunk is the most file data taken from the budget at a time.
const copyChunk = 4 << 20

// copySparse copies the open regular file in (descriptor fd) into out
// (descriptor ofd) extent by extent: only the data the file holds
// (SEEK_DATA to SEEK_HOLE) is read and written, at the same offsets, and
// out is then sized as in, so a hole stays a hole. A filesystem that cannot
// tell holes from data copies the whole file. limit (when not negative)
// bounds the apparent size looked at. It returns the apparent size copied
// (at most limit) and the file data written.
func (c *copier) copySparse(in, out *os.File, fd, ofd int, limit int64) (size, data int64, err error) {
	var pos int64
	for limit < 0 || pos < limit {
		start, err := unix.Seek(fd, pos, unix.SEEK_DATA)
		end := int64(1<<63 - 1)
		switch {
		case errors.Is(err, unix.ENXIO):
			start = end // nothing but a hole from pos to the end
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.EOPNOTSUPP):
			start = pos // no SEEK_DATA here: all of it is data
		case err != nil:
			return 0, data, err
		default:
			if end, err = unix.Seek(fd, start, unix.SEEK_HOLE); err != nil {
				return 0, data, err
			}
		}
		if limit >= 0 {
			end = min(end, limit)
		}
		if start >= end {
			break
		}
		if _, err := in.Seek(start, io.SeekStart); err != nil {
			return 0, data, err
		}
		if _, err := out.Seek(start, io.SeekStart); err != nil {
			return 0, data, err
		}
		short := false
		for off := start; off < end; {
			k := min(int64(copyChunk), end-off)
			if !c.budget.take(k) {
				return 0, data, &BudgetSpent{Max: c.budget.max, Used: c.budget.Used()}
			}
			n, err := io.CopyN(out, in, k)
			c.budget.give(k - n)
			data += n
			off += n
			if errors.Is(err, io.EOF) {
				short = true // the file ended early: it shrank, or it is all data
				break
			}
			if err != nil {
				return 0, data, err
			}
		}
		pos = end
		if short {
			break
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, data, err
	}
	size = st.Size
	if limit >= 0 {
		size = min(size, limit)
	}
	if err := unix.Ftruncate(ofd, size); err != nil {
		return 0, data, err
	}
	return size, data, nil
}
