package delegate

import (
	"strings"
	"testing"
)

// TestReadReady: the child's first line is its ready line, its JSON
// refusal (said with its code), or anything else (named as not a ready line).
func TestReadReady(t *testing.T) {
	exited := make(chan struct{})
	close(exited)
	for _, c := range []struct{ line, want string }{
		{`{"url":null,"pid":7,"session_id":"ses_1","workdir":"/w","records_dir":"/r"}` + "\n", ""},
		{`{"error":{"code":"E-CAP-003","message":"this host cannot deliver sealed"}}` + "\n", "the child refused to start: E-CAP-003: this host cannot deliver sealed"},
		{"hello\n", `the child's first line is not a --json ready line: "hello"`},
		{"", "the child exited before it was ready"},
	} {
		rd, err := readReady(strings.NewReader(c.line), exited)
		if c.want == "" {
			if err != nil || rd.SessionID != "ses_1" || rd.PID != 7 {
				t.Errorf("%q: %+v, %v", c.line, rd, err)
			}
			continue
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: err %v, want %q", c.line, err, c.want)
		}
	}
}
