package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCutKeepsTheWhole(t *testing.T) {
	dir := t.TempDir()
	a := &agentTools{recordsDir: dir}
	text := strings.Repeat("é", MaxToolResultBytes) // twice the bound, two-byte characters
	got := a.cut("call_1", text)
	head, note, ok := strings.Cut(got, "\n[cut at ")
	if !ok || len(head) > MaxToolResultBytes || !utf8.ValidString(head) {
		t.Fatalf("cut %d bytes, note %q", len(head), note)
	}
	path := filepath.Join(dir, "logs", "tools", "call_1.out")
	if !strings.Contains(note, path) {
		t.Errorf("the note does not name %s: %q", path, note)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != text {
		t.Errorf("kept %d bytes, %v", len(b), err)
	}
	if small := a.cut("call_2", "short"); small != "short" {
		t.Errorf("a short result was changed: %q", small)
	}
	// A driver-chosen id that cannot name a file gets one of the runtime's.
	if got := a.cut("../../etc/x", text); !strings.Contains(got, filepath.Join(dir, "logs", "tools", "evt_")) {
		t.Errorf("an unsafe id named the file: %q", got[len(got)-120:])
	}
}
