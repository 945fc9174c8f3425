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

// TestToolCallsGoThroughTheInventory keeps one door in front of every tool:
// tools.Inventory.Call writes the call's line and fires its hooks, and a
// policy gate will sit there. So no non-test code calls a tool another way:
// an entry's own Call (the one taking a *tools.Call) is called only by the
// inventory, and nothing outside the tool kinds' packages builds their
// private call inputs or asks which kind an entry is by its Go type.
func TestToolCallsGoThroughTheInventory(t *testing.T) {
	const inventory = "internal/tools/call.go"
	private := map[string]string{ // composite literal → the package allowed to build it
		"tools.Invocation": "internal/tools", "tools.ShellCall": "internal/tools", "delegate.Call": "internal/delegate",
	}
	kinds := map[string]bool{"tools.WASM": true, "tools.Shell": true, "tools.Skill": true, "delegate.Tool": true}
	fset := token.NewFileSet()
	base := root()
	err := filepath.WalkDir(base, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || rel == "guest" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CallExpr:
				// Entry.Call takes a pointer; Inventory.Call and agent.Tools.Call take values.
				sel, ok := x.Fun.(*ast.SelectorExpr)
				if ok && sel.Sel.Name == "Call" && len(x.Args) == 2 && rel != inventory {
					if u, ok := x.Args[1].(*ast.UnaryExpr); ok && u.Op == token.AND {
						t.Errorf("%s: a tool entry's Call is called directly; call tools.Inventory.Call, which records the call", fset.Position(x.Pos()))
					}
				}
			case *ast.CompositeLit:
				if owner, ok := private[exprText(x.Type)]; ok && owner != dir {
					t.Errorf("%s: %s is built outside %s: call the tool through tools.Inventory.Call", fset.Position(x.Pos()), exprText(x.Type), owner)
				}
			case *ast.TypeAssertExpr:
				if star, ok := x.Type.(*ast.StarExpr); ok && kinds[exprText(star.X)] {
					t.Errorf("%s: a tool is asked for its kind by its Go type (%s): let the entry's Call decide", fset.Position(x.Pos()), exprText(star.X))
				}
			case *ast.TypeSwitchStmt:
				for _, cl := range x.Body.List {
					for _, e := range cl.(*ast.CaseClause).List {
						if star, ok := e.(*ast.StarExpr); ok && kinds[exprText(star.X)] {
							t.Errorf("%s: tools are dispatched by a type switch (%s): let the entry's Call decide", fset.Position(e.Pos()), exprText(star.X))
						}
					}
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
