package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/murmur-go/murmur/internal/testbin"
	"github.com/murmur-go/murmur/internal/trace"
)

// Records and processes: what a finished or running session left behind,
// read back for assertions.

// TraceLines reads a session's trace.jsonl, which must be whole and clean.
func TraceLines(t testing.TB, recordsDir string) []trace.Line {
	t.Helper()
	f, err := trace.ReadFile(filepath.Join(recordsDir, trace.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if f.Truncated || len(f.Bad) > 0 {
		t.Fatalf("trace not clean: truncated %v bad %v", f.Truncated, f.Bad)
	}
	return f.Lines
}

// LastEnd is the trace's last line, which must be session_end.
func LastEnd(t testing.TB, lines []trace.Line) trace.Line {
	t.Helper()
	if len(lines) == 0 || lines[len(lines)-1].EventType != trace.TypeSessionEnd {
		t.Fatalf("trace does not end with session_end: %+v", lines)
	}
	return lines[len(lines)-1]
}

// LastOf is the last line of type typ, nil when there is none.
func LastOf(lines []trace.Line, typ string) *trace.Line {
	var found *trace.Line
	for i := range lines {
		if lines[i].EventType == typ {
			found = &lines[i]
		}
	}
	return found
}

// Types is the event types of lines, space-separated.
func Types(lines []trace.Line) string {
	var ts []string
	for _, l := range lines {
		ts = append(ts, l.EventType)
	}
	return strings.Join(ts, " ")
}

// RPC posts a JSON-RPC body to a door (A2A 1.0) and decodes the answer.
func RPC(t *testing.T, url, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return out
}

// SessionsUnder lists the session records dirs under homeDir.
func SessionsUnder(homeDir string) []string {
	var out []string
	filepath.WalkDir(filepath.Join(homeDir, ".murmur", "records"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), "ses_") {
			out = append(out, p)
			return filepath.SkipDir
		}
		return nil
	})
	return out
}

// JSONErrorOnly reports whether stdout is what `--json` prints for a run
// refused before its session exists: one {"error":{...}} line with code.
func JSONErrorOnly(stdout, code string) bool {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	return strings.Count(stdout, "\n") == 1 && json.Unmarshal([]byte(stdout), &e) == nil && e.Error.Code == code
}

// ByType is the lines of type typ, in order.
func ByType(lines []trace.Line, typ string) []trace.Line {
	var out []trace.Line
	for _, l := range lines {
		if l.EventType == typ {
			out = append(out, l)
		}
	}
	return out
}

// Gone reports whether pid has exited (a zombie waiting for its reaper
// counts as exited).
func Gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// WaitFor waits until cond holds, failing the test after a bounded number
// of tries (it asserts an event, not a time).
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 3000; i++ {
		if cond() {
			return
		}
		sleepBriefly()
	}
	t.Fatalf("gave up waiting for %s", what)
}

func sleepBriefly() { time.Sleep(10 * time.Millisecond) }

// Tree lists every path under root with its size: what "left the store as it
// was" compares.
func Tree(t testing.TB, root string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			fmt.Fprintf(&b, "%s %d\n", strings.TrimPrefix(p, root), fi.Size())
		}
		return nil
	})
	return b.String()
}

// OpenPTY opens a pseudo-terminal pair: the test reads master, the child
// writes to slave, which is a real terminal to it.
func OpenPTY(t *testing.T) (master, slave *os.File) { return testbin.OpenPTY(t) }
