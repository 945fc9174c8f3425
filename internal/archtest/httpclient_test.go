package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// handBuiltAllowed are the mechanisms that may build an HTTP client request
// by hand outside an *api package: a file, or a package tree.
var handBuiltAllowed = map[string]string{
	"internal/e2e":               "test support: the harness sends raw JSON-RPC to a door under test",
	"internal/wasmhost/wasihttp": "the wasi:http provider: a component's own outgoing requests",
	"internal/telemetry":         "the OTLP exporter",
	"internal/driver":            "the model drivers and the fake providers of their tests",
	"internal/contain/egress":    "the egress proxy",
	"internal/roost/load":        "roost-load: drives the daemon's raw HTTP path to measure it",
	"internal/roost/httpfast.go": "the daemon's fast path builds the incoming request it hands net/http's handler",
	"internal/testbin":           "test support",
	"guest":                      "the guest kit, compiled into components",
}

// isAPIPackage: a wire package sits beside what it describes and is named
// for it (internal/roost/roostapi, internal/door/doorapi).
func isAPIPackage(r string) bool {
	return path.Base(r) == path.Base(path.Dir(r))+"api"
}

func handBuiltAllowedFor(file string) bool {
	for p := range handBuiltAllowed {
		if file == p || strings.HasPrefix(file, p+"/") {
			return true
		}
	}
	return false
}

// TestNoHandBuiltHTTPRequests: outside an *api package (which owns its
// wire's one typed client) and the allowed mechanisms, no non-test code
// builds an HTTP client request: http.NewRequest*, http.Get/Post/PostForm/
// Head, http.DefaultClient, or an http.Request literal. A client's Do needs
// a request from one of these, so it is caught at the construction. A new
// caller of the door or of mur-roost uses doorapi's or roostapi's client.
func TestNoHandBuiltHTTPRequests(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	for _, p := range list(t, nil, "./...") {
		r := rel(p.ImportPath)
		if r == "" || isAPIPackage(r) {
			continue
		}
		for _, name := range p.GoFiles {
			file := path.Join(r, name)
			if handBuiltAllowedFor(file) {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, where := range handBuiltRequests(fset, f) {
				t.Errorf("%s builds an HTTP client request by hand: a door is called through doorapi.Client, mur-roost through roostapi.Client; a new mechanism goes in handBuiltAllowed with its reason", where)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d files: the scan is broken", checked)
	}
}

// handBuiltRequests lists where f builds a client request through net/http.
func handBuiltRequests(fset *token.FileSet, f *ast.File) []string {
	httpName := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "net/http" {
			httpName = "http"
			if imp.Name != nil {
				httpName = imp.Name.Name
			}
		}
	}
	if httpName == "" {
		return nil
	}
	isHTTP := func(e ast.Expr, names ...string) (string, bool) {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return "", false
		}
		if id, ok := sel.X.(*ast.Ident); !ok || id.Name != httpName {
			return "", false
		}
		for _, n := range names {
			if sel.Sel.Name == n {
				return httpName + "." + n, true
			}
		}
		return "", false
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			if what, ok := isHTTP(x.Fun, "NewRequest", "NewRequestWithContext", "Get", "Post", "PostForm", "Head"); ok {
				found = append(found, fset.Position(x.Pos()).String()+" ("+what+")")
			}
		case *ast.SelectorExpr:
			if what, ok := isHTTP(x, "DefaultClient"); ok {
				found = append(found, fset.Position(x.Pos()).String()+" ("+what+")")
			}
		case *ast.CompositeLit:
			if what, ok := isHTTP(x.Type, "Request"); ok {
				found = append(found, fset.Position(x.Pos()).String()+" ("+what+"{})")
			}
		}
		return true
	})
	return found
}
