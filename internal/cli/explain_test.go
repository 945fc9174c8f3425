package cli

import (
	"regexp"
	"testing"

	"github.com/murmur-go/murmur/docs"
)

// Every row of the codes table in docs/diagnostics.md is one mur explain
// reads, with a cause and a fix: the embedded page and the parser agree.
func TestExplainReadsEveryRow(t *testing.T) {
	rows := regexp.MustCompile(`(?m)^\| [EW]-[A-Z]+-[0-9]{3} \|`).FindAllString(docs.Diagnostics, -1)
	got := diagEntries()
	if len(rows) < 100 || len(got) != len(rows) {
		t.Fatalf("%d code rows in docs/diagnostics.md, %d read", len(rows), len(got))
	}
	for code, e := range got {
		if e[0] == "" || e[1] == "" {
			t.Errorf("%s: cause %q, fix %q", code, e[0], e[1])
		}
	}
}
