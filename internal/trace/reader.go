package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"

	"github.com/murmur-go/murmur/internal/diag"
)

// Line is one event read back: the envelope, and the whole object for the
// fields of its type.
type Line struct {
	N         int // 1-based line number
	EventType string
	EventID   string
	ParentID  string // "" when null
	SessionID string
	Timestamp int64
	Fields    map[string]json.RawMessage
}

// Str returns a string field ("" when absent or not a string).
func (l Line) Str(key string) string {
	var s string
	if raw, ok := l.Fields[key]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// Int returns an integer field (0 when absent or not a number).
func (l Line) Int(key string) int64 {
	var n float64
	if raw, ok := l.Fields[key]; ok {
		_ = json.Unmarshal(raw, &n)
	}
	return int64(n)
}

// File is a trace read back.
type File struct {
	Lines []Line
	// Truncated is set when the last line had no newline and did not parse:
	// the writer was stopped in the middle of it.
	Truncated bool
	// Bad lists line numbers in the middle of the file that are not events
	// (the first 100 of them).
	Bad []int
}

// MaxLineBytes bounds the one line a reader holds in memory: a longer line
// is not an event (the writer never writes one), and is skipped and counted
// without being held whole.
const MaxLineBytes = 16 << 20

// maxBadListed bounds the line numbers of non-event lines kept; past it they
// are only counted.
const maxBadListed = 100

// ScanResult is what Scan found besides the events.
type ScanResult struct {
	Events int
	// Truncated is set when the last line had no newline and did not parse.
	Truncated bool
	// BadCount counts the lines in the middle that are not events; Bad
	// holds the first of their line numbers.
	BadCount int
	Bad      []int
	// Bytes is how much of the reader was consumed.
	Bytes int64
}

// Scan reads a trace one line at a time, calling fn with each event, so its
// memory is bounded by MaxLineBytes whatever the trace's length. It
// tolerates a cut-off last line (the session was killed mid-write) and
// skips, but counts, lines that are not events.
func Scan(r io.Reader, fn func(Line)) (ScanResult, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var res ScanResult
	var buf []byte
	n := 0
	for {
		raw, complete, over, err := readLine(br, &buf, &res.Bytes)
		if len(raw) > 0 || over {
			n++
			body := bytes.TrimSpace(raw)
			switch {
			case over:
				res.bad(n)
			case len(body) == 0:
			default:
				if l, ok := parseLine(body); ok {
					l.N = n
					res.Events++
					fn(l)
				} else if !complete && errors.Is(err, io.EOF) {
					res.Truncated = true
				} else {
					res.bad(n)
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return res, nil
			}
			return res, err
		}
	}
}

func (r *ScanResult) bad(n int) {
	r.BadCount++
	if len(r.Bad) < maxBadListed {
		r.Bad = append(r.Bad, n)
	}
}

// readLine reads up to and including the next newline into *buf. A line past
// MaxLineBytes is consumed but not kept: over is set and line is empty.
func readLine(br *bufio.Reader, buf *[]byte, total *int64) (line []byte, complete, over bool, err error) {
	*buf = (*buf)[:0]
	for {
		chunk, e := br.ReadSlice('\n')
		*total += int64(len(chunk))
		if !over {
			if len(*buf)+len(chunk) > MaxLineBytes {
				over = true
				*buf = (*buf)[:0]
			} else {
				*buf = append(*buf, chunk...)
			}
		}
		if errors.Is(e, bufio.ErrBufferFull) {
			continue
		}
		complete = len(chunk) > 0 && chunk[len(chunk)-1] == '\n'
		if over {
			return nil, complete, true, e
		}
		return *buf, complete, false, e
	}
}

// Read parses a whole trace into memory; Scan is the bounded way to read a
// trace of any length.
func Read(r io.Reader) (*File, error) {
	out := &File{}
	res, err := Scan(r, func(l Line) { out.Lines = append(out.Lines, l) })
	out.Truncated, out.Bad = res.Truncated, res.Bad
	return out, err
}

func parseLine(b []byte) (Line, bool) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		return Line{}, false
	}
	l := Line{Fields: fields}
	l.EventType = l.Str("event_type")
	l.EventID = l.Str("event_id")
	l.ParentID = l.Str("parent_id")
	l.SessionID = l.Str("session_id")
	l.Timestamp = l.Int("timestamp")
	if l.EventType == "" {
		return Line{}, false
	}
	return l, true
}

// ReadFile reads the trace at path, with coded errors for a person.
func ReadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, diag.New("E-TRC-002", "no trace at %s", path).
				WithHint("run 'mur trace show' with a session id, @N, or the path of a trace.jsonl")
		}
		return nil, diag.Wrap(err, "E-TRC-003", "cannot read the trace %s", path)
	}
	defer f.Close()
	tf, err := Read(f)
	if err != nil {
		return nil, diag.Wrap(err, "E-TRC-003", "cannot read the trace %s", path)
	}
	return tf, nil
}

// maxFirstLine bounds what Names reads: a session_start carries the effective
// grants and the tools, never megabytes.
const maxFirstLine = 1 << 20

// Names reports whether the trace at path is session id's: its first line
// is an event whose session_id is id. A missing, unreadable or foreign trace
// is not.
func Names(path, id string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	br := bufio.NewReaderSize(io.LimitReader(f, maxFirstLine), 64<<10)
	raw, err := br.ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	l, ok := parseLine(bytes.TrimSpace(raw))
	return ok && l.SessionID == id
}
