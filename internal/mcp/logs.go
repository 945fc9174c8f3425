package mcp

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// logs are a server's two logs: its stderr (each start headed) and the
// notifications it sent; each stops growing at MaxLogBytes per session, the
// rest drained and counted.
type logs struct {
	stderrPath string
	stderr     *capped
	notes      *capped
}

func newLogs(dir, server string) *logs {
	l := &logs{stderrPath: filepath.Join(dir, server+".stderr.log")}
	l.stderr = &capped{path: l.stderrPath, max: MaxLogBytes}
	l.notes = &capped{path: filepath.Join(dir, server+".log"), max: MaxLogBytes}
	return l
}

func (l *logs) close() {
	l.stderr.close()
	l.notes.close()
}

// capped is a file opened on its first write that keeps at most max bytes.
type capped struct {
	path    string
	max     int64
	mu      sync.Mutex
	f       *os.File
	failed  bool
	written int64
	dropped int64
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil && !c.failed {
		if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err == nil {
			c.f, err = os.OpenFile(c.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
			c.failed = err != nil
		} else {
			c.failed = true
		}
	}
	keep := int64(len(p))
	if room := c.max - c.written; keep > room {
		keep = max(room, 0)
	}
	if c.f != nil && keep > 0 {
		_, _ = c.f.Write(p[:keep])
		c.written += keep
	}
	c.dropped += int64(len(p)) - keep
	return len(p), nil
}

func (c *capped) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f != nil {
		if c.dropped > 0 {
			fmt.Fprintf(c.f, "\n[the log stopped at %d bytes; %d more were drained and dropped]\n", c.written, c.dropped)
		}
		c.f.Close()
		c.f = nil
	}
}

var _ io.Writer = (*capped)(nil)

// tailBuf keeps the last bytes a start wrote to stderr, for a start that
// failed.
type tailBuf struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 8 << 10

func (t *tailBuf) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailBytes:]...)
	}
	return len(p), nil
}

// lastLines is ": its last stderr lines: …" or "".
func (t *tailBuf) lastLines(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimRight(string(t.buf), "\n")
	if s == "" {
		return "; it wrote nothing to stderr"
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "; its last stderr lines:\n" + strings.Join(lines, "\n")
}
