package delegate

import (
	"os"
	"strconv"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
)

// TestReadFormation walks the formation variables' rules: the id's form
// (E-RUN-044), and the peers, channel and lifeline refusals (E-RUN-046).
func TestReadFormation(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	f, err := os.CreateTemp(t.TempDir(), "chan")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, wr := strconv.Itoa(int(pr.Fd())), strconv.Itoa(int(pw.Fd()))
	const id = "frm_0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		name string
		env  map[string]string
		id   string
		code string
	}{
		{"none", nil, "", ""},
		{"blank id", map[string]string{EnvFormationID: "  "}, "", ""},
		{"an id", map[string]string{EnvFormationID: id}, id, ""},
		{"upper-case hex", map[string]string{EnvFormationID: "frm_0123456789ABCDEF0123456789abcdef"}, "", "E-RUN-044"},
		{"short", map[string]string{EnvFormationID: "frm_0123"}, "", "E-RUN-044"},
		{"another prefix", map[string]string{EnvFormationID: "ses_0123456789abcdef0123456789abcdef"}, "", "E-RUN-044"},
		{"peers set", map[string]string{EnvFormationPeers: "a=http://a.formation.invalid"}, "", "E-RUN-046"},
		{"channel not a number", map[string]string{EnvFormationChannel: "x"}, "", "E-RUN-046"},
		{"channel closed", map[string]string{EnvFormationChannel: "999"}, "", "E-RUN-046"},
		{"channel write-only", map[string]string{EnvFormationChannel: wr}, "", "E-RUN-046"},
		{"channel readable", map[string]string{EnvFormationID: id, EnvFormationChannel: strconv.Itoa(int(f.Fd()))}, id, ""},
		{"blank lifeline", map[string]string{EnvFormationLifeline: " "}, "", ""},
		{"lifeline without an id", map[string]string{EnvFormationLifeline: rd}, "", "E-RUN-046"},
		{"lifeline fd 1", map[string]string{EnvFormationID: id, EnvFormationLifeline: "1"}, "", "E-RUN-046"},
		{"lifeline a file", map[string]string{EnvFormationID: id, EnvFormationLifeline: strconv.Itoa(int(f.Fd()))}, "", "E-RUN-046"},
		{"lifeline a write end", map[string]string{EnvFormationID: id, EnvFormationLifeline: wr}, "", "E-RUN-046"},
		{"lifeline a read end", map[string]string{EnvFormationID: id, EnvFormationLifeline: rd}, id, ""},
	} {
		lookup := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
		got, err := ReadFormation(lookup)
		if diag.Code(err) != c.code || (err == nil) != (c.code == "") {
			t.Errorf("%s: error %v, want code %q", c.name, err, c.code)
			continue
		}
		if got != c.id {
			t.Errorf("%s: id %q, want %q", c.name, got, c.id)
		}
	}
}
