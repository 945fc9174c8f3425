package manifest

import (
	"slices"
	"strings"
	"testing"
)

// capabilities.plan.submit: granted in an agent capsule; W-MAN-005 where it
// does nothing (an artifact's own capabilities, a script capsule).
func TestPlanGrant(t *testing.T) {
	agent := "name: a\nversion: \"1\"\ninference:\n  model: m\n"
	cases := []struct {
		name, yaml string
		submit     bool
		warn       string
	}{
		{"agent", agent + "capabilities:\n  plan:\n    submit: true\n", true, ""},
		{"agent off", agent + "capabilities:\n  plan:\n    submit: false\n", false, ""},
		{"artifact", agent + "artifacts:\n  - name: acme/t\n    version: \"1\"\n    capabilities:\n      plan:\n        submit: true\n", false,
			"artifacts[0].capabilities.plan.submit: submit-plan is a tool of the whole capsule"},
		{"script", "name: s\nversion: \"1\"\ncapabilities:\n  plan:\n    submit: true\n", false,
			"capabilities.plan.submit: a script capsule cannot submit plans"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Parse([]byte(c.yaml), "murmur.yaml", Options{})
			if err != nil {
				t.Fatal(err)
			}
			g, _ := m.EffectiveGrants()
			if g.Plan.Submit != c.submit {
				t.Errorf("submit %v", g.Plan.Submit)
			}
			var got []string
			for _, w := range m.Warnings {
				if w.Code == "W-MAN-005" {
					got = append(got, w.Message)
				}
			}
			if c.warn == "" && len(got) > 0 || c.warn != "" && (len(got) != 1 || !strings.Contains(got[0], c.warn)) {
				t.Errorf("W-MAN-005: %q", got)
			}
			want := "plan submit: no"
			if c.submit {
				want = "plan submit: yes"
			}
			if lines := g.Lines(); !slices.Contains(lines, want) {
				t.Errorf("--explain-scope's lines lack %q:\n%s", want, strings.Join(lines, "\n"))
			}
		})
	}
}
