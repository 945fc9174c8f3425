package manifest

import (
	"errors"
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
)

// Every shape error says what to do, not only what was found where.
func TestShapeErrorsCarryAHint(t *testing.T) {
	tests := []struct{ yaml, code, hint string }{
		{"capabilities:\n  limits:\n    deadline_seconds: abc\n", "E-MAN-008", "plain whole number"},
		{"capabilities:\n  limits:\n    deadline_seconds: -3\n", "E-MAN-008", "plain whole number"},
		{"capabilities:\n  network: 5\n", "E-MAN-004", "shape"},
		{"capabilities:\n  network:\n    unix_sockets: maybe\n", "E-MAN-004", "true or false"},
		{"runtime: daemon\n", "E-MAN-007", "values the message lists"},
		{"capabilities:\n  spawn:\n    allow: [worker]\n", "E-MAN-005", "scope"},
		{"tags: [a]\ntags: [b]\n", "E-MAN-010", "keep one"},
	}
	for _, tc := range tests {
		_, err := Parse([]byte(head+tc.yaml), "murmur.yaml", Options{})
		var d *diag.Diagnostic
		if !errors.As(err, &d) || d.Code != tc.code {
			t.Errorf("%q: want %s, got %v", tc.yaml, tc.code, err)
			continue
		}
		if !strings.Contains(d.Hint, tc.hint) {
			t.Errorf("%q: %s hint %q lacks %q", tc.yaml, tc.code, d.Hint, tc.hint)
		}
	}
}
