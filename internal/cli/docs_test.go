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

// userDocs returns README.md and every Markdown file under docs/, by their
// paths relative to the repository root, with their text.
func userDocs(t *testing.T) map[string]string {
	t.Helper()
	root := repoRoot()
	docs := map[string]string{}
	paths := []string{"README.md"}
	ents, err := os.ReadDir(filepath.Join(root, "docs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") {
			paths = append(paths, filepath.Join("docs", e.Name()))
		}
	}
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		docs[p] = string(b)
	}
	if len(docs) < 10 {
		t.Fatalf("found only %d docs: the scan is broken", len(docs))
	}
	return docs
}

// The specification texts are not in the repository, so a user doc (or a
// package's RATIONALE.md) that cites them (by file name, by section sign, or as "the spec") points a reader
// at nothing: it must state the rule itself.
func TestDocsCiteNoSpecFiles(t *testing.T) {
	// "spec" is matched in lower case only: `Spec.Wrap` is a Go name.
	cite := regexp.MustCompile(`(?i:contracts\.md|contracts §|capsules\.txt|roost-and-delegation|§|\bspecification\b)|\bspec\b`)
	docs := userDocs(t)
	rationales, _ := filepath.Glob(filepath.Join(repoRoot(), "internal", "*", "RATIONALE.md"))
	for _, full := range rationales {
		b, err := os.ReadFile(full)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot(), full)
		docs[rel] = string(b)
	}
	for p, text := range docs {
		for i, line := range strings.Split(text, "\n") {
			if m := cite.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q, which is not in the repository: say what it means instead\n\t%s", p, i+1, m, strings.TrimSpace(line))
			}
		}
	}
}

// anchors returns the GitHub-style anchors of a Markdown text's headings.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+string(rune('0'+n))] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// Every relative link in README.md and docs/ names a file or directory that
// exists, and an anchor, if it has one, names a heading of its target.
func TestDocsLinksResolve(t *testing.T) {
	root := repoRoot()
	docs := userDocs(t)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for p, text := range docs {
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, anchor, _ := strings.Cut(target, "#")
			full := filepath.Join(root, p)
			if file != "" {
				full = filepath.Join(root, filepath.Dir(p), file)
			}
			st, err := os.Stat(full)
			if err != nil {
				t.Errorf("%s links to %s, which does not exist", p, target)
				continue
			}
			if anchor == "" {
				continue
			}
			if st.IsDir() || !strings.HasSuffix(full, ".md") {
				t.Errorf("%s links to %s: an anchor into something that is not a Markdown file", p, target)
				continue
			}
			b, err := os.ReadFile(full)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(b))[anchor] {
				t.Errorf("%s links to %s, but %s has no heading with anchor #%s", p, target, file, anchor)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d relative links: the scan is broken", checked)
	}
}

// The reverse of TestDiagnosticsDocListsEveryCode: a code whose row in
// docs/diagnostics.md reads as live (not marked "Coming" or "Retired") is
// written somewhere in the sources that build the programs, and one marked
// "Coming" is written nowhere yet.
func TestDiagnosticsDocLiveCodesAreEmitted(t *testing.T) {
	root := repoRoot()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "diagnostics.md"))
	if err != nil {
		t.Fatal(err)
	}
	live, coming := map[string]bool{}, map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\| ([EW]-[A-Z]+-\d{3}) \| (.*)$`).FindAllStringSubmatch(string(doc), -1) {
		cause := strings.TrimLeft(m[2], "* ")
		if strings.HasPrefix(cause, "Coming") {
			coming[m[1]] = true
			continue
		}
		if strings.HasPrefix(cause, "Retired") {
			continue
		}
		live[m[1]] = true
	}
	if len(live) < 20 {
		t.Fatalf("found only %d live rows: the scan is broken", len(live))
	}
	// Any mention counts: some codes are written inside a longer string
	// (a reason that starts "E-RUN-017: …").
	code := regexp.MustCompile(`\b([EW]-[A-Z]+-\d{3})\b`)
	used := map[string]bool{}
	for _, dir := range []string{"internal", "cmd", "guest"} {
		filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "//") {
					continue // a comment naming a code emits nothing
				}
				for _, m := range code.FindAllStringSubmatch(line, -1) {
					used[m[1]] = true
				}
			}
			return nil
		})
	}
	var unused, mislabelled []string
	for c := range live {
		if !used[c] {
			unused = append(unused, c)
		}
	}
	for c := range coming {
		if used[c] {
			mislabelled = append(mislabelled, c)
		}
	}
	sort.Strings(mislabelled)
	for _, c := range mislabelled {
		t.Errorf("docs/diagnostics.md marks %s as coming, but a source emits it: document it as live", c)
	}
	sort.Strings(unused)
	for _, c := range unused {
		t.Errorf("docs/diagnostics.md documents %s as live, but no source emits it: emit it or mark its row *Coming: not emitted by this build.*", c)
	}
}
