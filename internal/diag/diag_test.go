package diag

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestPrint(t *testing.T) {
	cause := fs.ErrNotExist
	tests := []struct {
		name     string
		err      error
		want     string
		wantExit int
	}{
		{"coded with hint", New("E-MAN-003", "variable %s is not set", "X").WithHint("export X"),
			"error[E-MAN-003]: variable X is not set\n  hint: export X\n", 1},
		{"usage", New("E-CFG-001", "bad flag").WithExit(ExitUsage), "error[E-CFG-001]: bad flag\n", 2},
		{"uncoded falls back", errors.New("boom"), "error[E-IO-001]: boom\n", 1},
		{"lines indented under the error", New("E-RUN-013", "x ended failed: exit\nthe guest's stderr ends:\n  panic: a\r\n  b\n").WithHint("look\nhere"),
			"error[E-RUN-013]: x ended failed: exit\n  the guest's stderr ends:\n    panic: a \n    b\n  hint: look here\n", 1},
		{"wrapped keeps code", fmt.Errorf("ctx: %w", Wrap(cause, "E-REG-002", "reading store")),
			"error[E-REG-002]: reading store: file does not exist\n", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if got := Print(&b, tc.err, "E-IO-001"); got != tc.wantExit {
				t.Errorf("exit = %d, want %d", got, tc.wantExit)
			}
			if b.String() != tc.want {
				t.Errorf("printed %q, want %q", b.String(), tc.want)
			}
		})
	}
}

func TestCodeAndUnwrap(t *testing.T) {
	err := fmt.Errorf("outer: %w", Wrap(fs.ErrPermission, "E-IO-002", "writing"))
	if !Is(err, "E-IO-002") || Code(err) != "E-IO-002" {
		t.Fatalf("code lost: %q", Code(err))
	}
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatal("cause lost")
	}
	if Code(errors.New("x")) != "" {
		t.Fatal("uncoded error has a code")
	}
}

func TestWarning(t *testing.T) {
	w := Warn("W-SEC-007", "artifact %s: dropped %q", "local/t", "bash")
	if w.String() != `warning[W-SEC-007]: artifact local/t: dropped "bash"` {
		t.Fatal(w.String())
	}
}
