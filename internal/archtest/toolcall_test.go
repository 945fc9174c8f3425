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

// TestTheGateStandsInFrontOfEveryCall keeps the policy gate where every
// call passes: tools.Inventory.Call asks inv.gateCall (the call's own
// checks, the policy hooks, the operator) before the entry's Call, for any
// entry kind, and the gate is the only writer of a call_denied line. (That a
// denied call of any kind, one the gate has never heard of included, runs
// nothing is tools' TestGateStopsEveryKind.)
func TestTheGateStandsInFrontOfEveryCall(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(root(), "internal", "tools", "call.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var gate, entryCall token.Pos
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "Call" || fn.Recv == nil || exprText(fn.Recv.List[0].Type.(*ast.StarExpr).X) != "Inventory" {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			switch {
			case ok && exprText(sel) == "inv.gateCall" && gate == token.NoPos:
				gate = call.Pos()
			case ok && sel.Sel.Name == "Call" && len(call.Args) == 2 && entryCall == token.NoPos:
				if u, ok := call.Args[1].(*ast.UnaryExpr); ok && u.Op == token.AND {
					entryCall = call.Pos()
				}
			}
			return true
		})
	}
	if gate == token.NoPos {
		t.Fatal("tools.Inventory.Call no longer asks inv.gateCall: a call would reach its tool without passing the policy gate")
	}
	if entryCall != token.NoPos && entryCall < gate {
		t.Errorf("%s: an entry's Call comes before the gate in tools.Inventory.Call", fset.Position(entryCall))
	}
	base := root()
	err = filepath.WalkDir(base, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, path)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(src, func(n ast.Node) bool {
			if cl, ok := n.(*ast.CompositeLit); ok && exprText(cl.Type) == "trace.CallDenied" && filepath.ToSlash(rel) != "internal/tools/gate.go" {
				t.Errorf("%s: a call_denied line is written outside the gate (internal/tools/gate.go)", fset.Position(cl.Pos()))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
