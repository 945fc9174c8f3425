package logfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCappedLog(t *testing.T) {
	tests := []struct {
		name       string
		head, tail int64
		writes     []string
		want       string
		dropped    int64
	}{
		{"under the head", 8, 4, []string{"abc", "de"}, "abcde", 0},
		{"exactly the head", 4, 4, []string{"abcd"}, "abcd", 0},
		{"head and tail, nothing dropped", 4, 4, []string{"abcdef"}, "abcdef", 0},
		{"dropped in the middle", 4, 3, []string{"abcd", "efgh", "ijk", "lmn"},
			"abcd\n[mur: 7 bytes dropped here: this log keeps its first 4 and its last 3 bytes]\nlmn", 7},
		{"one large write", 2, 2, []string{"0123456789"},
			"01\n[mur: 6 bytes dropped here: this log keeps its first 2 and its last 2 bytes]\n89", 6},
		{"tail ring wraps", 1, 3, []string{"a", "bc", "de", "f", "gh"},
			"a\n[mur: 4 bytes dropped here: this log keeps its first 1 and its last 3 bytes]\nfgh", 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.log")
			l, err := NewCappedLog(p, tc.head, tc.tail, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.writes {
				if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := l.Dropped(); got != tc.dropped {
				t.Errorf("Dropped() = %d, want %d", got, tc.dropped)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(p)
			if string(got) != tc.want {
				t.Errorf("log = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCappedLogLazyAndLastLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "http.log")
	l, err := NewCappedLog(p, 0, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("a lazy log exists before any write: %v", err)
	}
	if got := l.LastLines(3); got != nil {
		t.Fatalf("LastLines of nothing = %q", got)
	}
	for i := range 20000 {
		fmt.Fprintf(l, "line %d\n", i)
	}
	l.Write([]byte("panic: boom"))
	if got, want := l.LastLines(3), []string{"line 19998", "line 19999", "panic: boom"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("LastLines(3) = %q, want %q", got, want)
	}
	l.Close()
	st, err := os.Stat(p)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("stat: %v, %v", st, err)
	}
}

// TestLogPipe: bytes written to the pipe's path by another opener (as the
// engine does) land in the capped log, past its cap too.
func TestLogPipe(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "stdout.log")
	p, err := NewLogPipe(logPath)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(p.Path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	p.Opened()
	if _, err := os.Stat(p.Path); !os.IsNotExist(err) {
		t.Errorf("the pipe's name outlived Opened: %v", err)
	}
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	total := int64(0)
	for range 3 * (LogHeadBytes + LogTailBytes) >> 20 {
		n, err := w.Write(chunk)
		if err != nil {
			t.Fatal(err)
		}
		total += int64(n)
	}
	w.Write([]byte("\nthe end\n"))
	total += 9
	w.Close()
	if err := p.Close(time.Minute); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > LogHeadBytes+LogTailBytes+200 {
		t.Fatalf("the log holds %d bytes of %d written", st.Size(), total)
	}
	if got := p.Log.Written(); got != total {
		t.Fatalf("the log read %d bytes, %d were written", got, total)
	}
	b, _ := os.ReadFile(logPath)
	if !bytes.HasSuffix(b, []byte("\nthe end\n")) || !bytes.Contains(b, []byte(fmt.Sprintf("[mur: %d bytes dropped here", total-LogHeadBytes-LogTailBytes))) {
		t.Fatalf("the log does not end with its tail or name the dropped bytes: ...%q", b[len(b)-100:])
	}
}

// TestLogPipeNoWriter: an engine that never opened the pipe (a failed
// instantiation) does not keep Close waiting.
func TestLogPipeNoWriter(t *testing.T) {
	p, err := NewLogPipe(filepath.Join(t.TempDir(), "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(time.Minute); err != nil {
		t.Fatal(err)
	}
}
