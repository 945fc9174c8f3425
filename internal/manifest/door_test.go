package manifest

import (
	"strings"
	"testing"

	"github.com/murmur-go/murmur/internal/diag"
)

const agentHead = head + "inference:\n  model: m\n"

func TestDoorKeys(t *testing.T) {
	cases := []struct {
		name       string
		src        string
		auth       bool
		accept     bool
		code, warn string
	}{
		{"none", agentHead, false, false, "", ""},
		{"both", agentHead + "network:\n  authentication:\n    scheme: bearer\nexports:\n  peer_tasks:\n    accept: true\n", true, true, "", ""},
		{"accept false", agentHead + "exports:\n  peer_tasks:\n    accept: false\n", false, false, "", ""},
		{"empty authentication is absent", agentHead + "network:\n  authentication:\n", false, false, "", ""},
		{"other scheme", agentHead + "network:\n  authentication:\n    scheme: basic\n", false, false, "E-MAN-007", ""},
		{"no scheme", agentHead + "network:\n  authentication:\n    realm: x\n", false, false, "E-MAN-007", ""},
		{"accept not bool", agentHead + "exports:\n  peer_tasks:\n    accept: yes please\n", false, false, "E-MAN-004", ""},
		{"unknown key warns", agentHead + "exports:\n  peer_task:\n    accept: true\n", false, false, "", "W-MAN-001"},
		{"script capsule", head + "network:\n  authentication:\n    scheme: bearer\n", true, false, "", "W-MAN-004"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Parse([]byte(c.src), "", Options{LookupEnv: env(nil)})
			if c.code != "" {
				if diag.Code(err) != c.code {
					t.Fatalf("err = %v, want %s", err, c.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Door.Authenticated() != c.auth || m.Door.AcceptsPeerTasks() != c.accept {
				t.Fatalf("door = %+v", m.Door)
			}
			var codes []string
			for _, w := range m.Warnings {
				codes = append(codes, w.Code)
			}
			if got := strings.Join(codes, ","); !strings.Contains(got, c.warn) || (c.warn == "" && got != "") {
				t.Fatalf("warnings = %q, want %q", got, c.warn)
			}
		})
	}
}
