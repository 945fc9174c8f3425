package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrapDoesNotRepeatItsCause checks every diag.Wrap call in the module:
// Wrap appends the cause's text itself, so passing the cause again as a
// format argument prints it twice ("connection refused: … connection
// refused"), as seven calls once did.
func TestWrapDoesNotRepeatItsCause(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(root(), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 4 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Wrap" {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "diag" {
				return true
			}
			cause := exprText(call.Args[0])
			for _, a := range call.Args[3:] {
				if cause != "" && exprText(a) == cause {
					t.Errorf("%s: diag.Wrap(%s, …) passes its cause again as a format argument: Wrap appends it already", fset.Position(call.Pos()), cause)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// exprText renders a simple expression (an identifier or a selector) as text.
func exprText(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		if s := exprText(x.X); s != "" {
			return s + "." + x.Sel.Name
		}
	}
	return ""
}
