// Package logfile writes the logs a component's run leaves (its stdout,
// stderr and HTTP logs, a shell tool's output, the egress proxy's log): a
// file that keeps its head and its tail, so a guest printing without end
// costs bounded disk and memory, and the named pipe that feeds one from the
// engine, which writes a guest's stdio straight to a path.
package logfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A log a component writes (logs/stdout.log, logs/stderr.log,
// logs/http.log) keeps its first LogHeadBytes and its last LogTailBytes; the
// bytes between are dropped and a line says how many. A guest printing
// without end costs the host at most LogHeadBytes+LogTailBytes of disk per
// log, and LogTailBytes of memory.
const (
	LogHeadBytes = 8 << 20
	LogTailBytes = 1 << 20
)

// recentBytes is how much of a log's end CappedLog keeps for LastLines,
// whether or not the log was cut.
const recentBytes = 8 << 10

// ring keeps the last cap bytes written to it.
type ring struct {
	buf  []byte
	cap  int
	full bool
	at   int
}

func newRing(n int) *ring { return &ring{cap: n} }

func (r *ring) write(p []byte) {
	if len(p) >= r.cap {
		if r.buf == nil || len(r.buf) < r.cap {
			r.buf = make([]byte, r.cap)
		}
		copy(r.buf, p[len(p)-r.cap:])
		r.at, r.full = 0, true
		return
	}
	if !r.full {
		// Grow as written, so a short log never costs the whole ring.
		if len(r.buf)+len(p) <= r.cap {
			r.buf = append(r.buf, p...)
			r.full = len(r.buf) == r.cap
			return
		}
		nb := make([]byte, r.cap)
		copy(nb, r.buf)
		r.at, r.full = len(r.buf), true
		r.buf = nb
	}
	n := copy(r.buf[r.at:], p)
	if n < len(p) {
		copy(r.buf, p[n:])
	}
	r.at = (r.at + len(p)) % r.cap
}

// bytes returns the kept bytes, oldest first.
func (r *ring) bytes() []byte {
	if !r.full {
		return append([]byte(nil), r.buf...)
	}
	out := make([]byte, 0, r.cap)
	out = append(out, r.buf[r.at:]...)
	return append(out, r.buf[:r.at]...)
}

// CappedLog is a log file that keeps its head and its tail (LogHeadBytes
// and LogTailBytes by default). The head goes to disk as written; the tail
// is held in memory and written, after a line naming the dropped bytes, by
// Close. A log that never passes its head is the bytes written, unchanged.
type CappedLog struct {
	path       string
	head, tail int64
	lazy       bool

	mu      sync.Mutex
	f       *os.File
	err     error
	written int64 // bytes given to Write
	tailBuf *ring // bytes past the head
	recent  *ring // the last recentBytes, for LastLines
	closed  bool
}

// NewCappedLog creates (owner-only, truncating) the log at path, or, when
// lazy, creates it on the first write so a stream that writes nothing
// leaves no file. head and tail of 0 take LogHeadBytes and LogTailBytes.
func NewCappedLog(path string, head, tail int64, lazy bool) (*CappedLog, error) {
	if head <= 0 {
		head = LogHeadBytes
	}
	if tail <= 0 {
		tail = LogTailBytes
	}
	l := &CappedLog{path: path, head: head, tail: tail, lazy: lazy, tailBuf: newRing(int(tail)), recent: newRing(recentBytes)}
	if !lazy {
		if err := l.open(); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (l *CappedLog) open() error {
	if l.f == nil && l.err == nil {
		l.f, l.err = os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	}
	return l.err
}

// Write keeps p's bytes that fall in the head on disk and the rest in the
// tail. It fails only when the file cannot be written.
func (l *CappedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, os.ErrClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := l.open(); err != nil {
		return 0, err
	}
	l.recent.write(p)
	rest := p
	if l.written < l.head {
		n := min(int64(len(p)), l.head-l.written)
		if _, err := l.f.Write(p[:n]); err != nil {
			return 0, err
		}
		rest = p[n:]
	}
	if len(rest) > 0 {
		l.tailBuf.write(rest)
	}
	l.written += int64(len(p))
	return len(p), nil
}

// Written is how many bytes were given to the log; Dropped how many of
// them the log does not keep.
func (l *CappedLog) Written() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.written
}

// Dropped is how many written bytes fall between the head and the tail.
func (l *CappedLog) Dropped() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped()
}

func (l *CappedLog) dropped() int64 {
	return max(0, l.written-l.head-l.tail)
}

// LastLines returns up to n of the last lines written (from the last 8 KiB
// at most), without their line ends; a last line without one is included.
func (l *CappedLog) LastLines(n int) []string {
	l.mu.Lock()
	b := l.recent.bytes()
	full := l.recent.full
	l.mu.Unlock()
	if full {
		// The first line may be cut: drop it unless it is all there is.
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	text := strings.TrimRight(strings.ToValidUTF8(string(b), "\uFFFD"), "\n")
	if strings.TrimSpace(text) == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, s := range lines {
		lines[i] = strings.TrimRight(s, "\r")
	}
	return lines
}

// Close writes the tail (after a line saying how many bytes were dropped,
// when any were) and closes the file.
func (l *CappedLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.f == nil {
		return nil
	}
	var err error
	if l.written > l.head {
		if d := l.dropped(); d > 0 {
			_, err = fmt.Fprintf(l.f, "\n[mur: %d bytes dropped here: this log keeps its first %d and its last %d bytes]\n", d, l.head, l.tail)
		}
		if _, werr := l.f.Write(l.tailBuf.bytes()); err == nil {
			err = werr
		}
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// LogPipe feeds a CappedLog from a named pipe the engine opens as a file:
// wasmtime writes a guest's stdio straight to a path, so the cap is applied
// by reading that path. Path is what to give the engine; once the engine
// has opened it, call Opened; Close waits for the writer to finish (or
// grace to pass after it should have) and closes the log.
type LogPipe struct {
	Path string
	Log  *CappedLog

	r, keep *os.File
	done    chan error
}

// NewLogPipe makes a pipe beside logPath (its name starts with '.') whose
// bytes go to a CappedLog at logPath.
func NewLogPipe(logPath string) (*LogPipe, error) {
	log, err := NewCappedLog(logPath, 0, 0, false)
	if err != nil {
		return nil, err
	}
	p := &LogPipe{Path: filepath.Join(filepath.Dir(logPath), "."+filepath.Base(logPath)+".pipe"), Log: log, done: make(chan error, 1)}
	os.Remove(p.Path)
	if err := syscall.Mkfifo(p.Path, 0o600); err != nil {
		log.Close()
		return nil, fmt.Errorf("cannot make the pipe for %s: %w", logPath, err)
	}
	// Non-blocking opens: the read end first (so the write end's open does
	// not wait), then a write end of our own, so the reader sees no end of
	// file before the engine's writer has arrived.
	rfd, err := syscall.Open(p.Path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		p.cleanup()
		return nil, fmt.Errorf("cannot open the pipe for %s: %w", logPath, err)
	}
	p.r = os.NewFile(uintptr(rfd), p.Path)
	wfd, err := syscall.Open(p.Path, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		p.cleanup()
		return nil, fmt.Errorf("cannot open the pipe for %s: %w", logPath, err)
	}
	p.keep = os.NewFile(uintptr(wfd), p.Path)
	go func() {
		_, err := io.Copy(log, p.r)
		p.done <- err
	}()
	return p, nil
}

func (p *LogPipe) cleanup() {
	if p.keep != nil {
		p.keep.Close()
		p.keep = nil
	}
	if p.r != nil {
		p.r.Close()
	}
	os.Remove(p.Path)
	p.Log.Close()
}

// Opened is called once the engine has opened Path (or failed to): the
// pipe's name is removed and only the engine's writer keeps it open.
func (p *LogPipe) Opened() {
	os.Remove(p.Path)
	if p.keep != nil {
		p.keep.Close()
		p.keep = nil
	}
}

// Close waits until the engine's writer has closed its end (it does when
// the instance is freed), giving it grace at most, then closes the log.
func (p *LogPipe) Close(grace time.Duration) error {
	p.Opened()
	var err error
	select {
	case err = <-p.done:
	case <-time.After(grace):
		// A writer still held by an abandoned call: stop reading; what
		// was read is kept.
		p.r.SetReadDeadline(time.Now())
		err = <-p.done
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = nil
		}
	}
	p.r.Close()
	if cerr := p.Log.Close(); err == nil {
		err = cerr
	}
	return err
}
