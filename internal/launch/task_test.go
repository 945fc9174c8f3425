package launch

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
)

// --task: a file is read, "-" is standard input, anything else is the text;
// text that looks like a path to nothing is a mistyped file name, warned
// about (issue 14 item 15).
func TestReadTask(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("task.md", []byte("count the lines\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir("notes", 0o755); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(dir, "task.md")
	cases := []struct {
		name, arg, stdin string
		want             string
		warn             bool
	}{
		{"none", "", "unread", "", false},
		{"stdin", "-", "from a pipe\nsecond line\n", "from a pipe\nsecond line\n", false},
		{"empty stdin", "-", "", "", false},
		{"relative file", "task.md", "", "count the lines\n", false},
		{"absolute file", abs, "", "count the lines\n", false},
		{"sentence", "count the lines in data.jsonl", "", "count the lines in data.jsonl", false},
		{"one word", "summarise", "", "summarise", false},
		{"a number", "3.14", "", "3.14", false},
		{"a version", "v1.2", "", "v1.2", false},
		{"mistyped file", "tsk.md", "", "tsk.md", true},
		{"missing in a dir", "notes/task.txt", "", "notes/task.txt", true},
		{"missing dir", "nowhere/task", "", "nowhere/task", true},
		{"dot path", "./task", "", "./task", true},
		{"home path", "~/task.md", "", "~/task.md", true},
		{"absolute missing", filepath.Join(dir, "gone"), "", filepath.Join(dir, "gone"), true},
		{"url", "https://example.com/spec", "", "https://example.com/spec", false},
		{"a path inside a sentence", "read notes/task.txt", "", "read notes/task.txt", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got, err := readTask(c.arg, strings.NewReader(c.stdin), &stderr)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("task %q, want %q", got, c.want)
			}
			w := stderr.String()
			if c.warn {
				if !strings.HasPrefix(w, "warning[W-RUN-001]: --task "+quoteArg(c.arg)+" is no file") || strings.Count(w, "\n") != 1 {
					t.Errorf("warning %q", w)
				}
			} else if w != "" {
				t.Errorf("unexpected warning %q", w)
			}
		})
	}
}

func quoteArg(s string) string { return `"` + s + `"` }

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestReadTaskErrors(t *testing.T) {
	_, err := readTask("-", failingReader{}, io.Discard)
	if !diag.Is(err, "E-RUN-007") || !strings.Contains(err.Error(), "standard input") || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("stdin failure: %v", err)
	}
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	f := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(f, []byte("x"), 0o000); err != nil {
		t.Fatal(err)
	}
	if _, err := readTask(f, strings.NewReader(""), io.Discard); !diag.Is(err, "E-RUN-007") {
		t.Errorf("unreadable file: %v", err)
	}
}
