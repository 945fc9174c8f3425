package cli_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Every code the programs can print has a row (cause and fix) in the Codes
// table of docs/diagnostics.md.
func TestDiagnosticsDocListsEveryCode(t *testing.T) {
	root := repoRoot()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "diagnostics.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\| ([EW]-[A-Z]+-\d{3}) \|`).FindAllStringSubmatch(string(doc), -1) {
		rows[m[1]] = true
	}
	code := regexp.MustCompile(`"([EW]-[A-Z]+-\d{3})"`)
	used := map[string][]string{}
	for _, dir := range []string{"internal", "cmd", "guest"} {
		filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			for _, m := range code.FindAllStringSubmatch(string(b), -1) {
				rel, _ := filepath.Rel(root, p)
				used[m[1]] = append(used[m[1]], rel)
			}
			return nil
		})
	}
	if len(used) < 20 {
		t.Fatalf("found only %d codes in the sources: the scan is broken", len(used))
	}
	var missing []string
	for c, files := range used {
		if !rows[c] {
			missing = append(missing, c+" (used in "+files[0]+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("docs/diagnostics.md has no row for %s", m)
	}
}
