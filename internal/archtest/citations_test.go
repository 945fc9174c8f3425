package archtest

import (
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// specCitation matches a citation of the specification files, which are not
// in this repository: a reader of the code cannot follow it. Say what the
// cited text means, or cite the docs/ page that says it.
var specCitation = regexp.MustCompile(`capsules\.txt|roost-and-delegation|contracts[\w-]*\.md|contracts §`)

// citationsNotYetClean are package trees whose comments may still cite the
// specification (none: the whole tree is held).
var citationsNotYetClean = []string{}

// TestNoSpecCitations checks the comments and string literals of every
// non-test Go file outside guest/ and testdata/ (whose committed components
// must stay byte-identical) for citations of the specification files.
func TestNoSpecCitations(t *testing.T) {
	base := root()
	err := filepath.WalkDir(base, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if d.Name() == "node_modules" || d.Name() == "testdata" || rel == "guest" ||
				(strings.HasPrefix(d.Name(), ".") && rel != ".") {
				return filepath.SkipDir
			}
			for _, p := range citationsNotYetClean {
				if rel == p {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		var s scanner.Scanner
		s.Init(fset.AddFile(rel, -1, len(src)), src, nil, scanner.ScanComments)
		for {
			pos, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok != token.COMMENT && tok != token.STRING {
				continue
			}
			if m := specCitation.FindString(lit); m != "" {
				t.Errorf("%s cites %q, a specification file not in this repository: say what it means, or cite the docs/ page that says it", fset.Position(pos), m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
