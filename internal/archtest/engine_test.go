package archtest

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// dialer is the one package of the engine's tree that opens connections:
// the HTTP/1.1 client wasi:http's exchanges use.
const dialer = "internal/wasmhost/wasihttp/h1"

// socketCode is what dials, listens or speaks TLS: only dialer may import
// it inside the engine's tree.
var socketCode = []string{"net", "crypto/tls", "crypto/x509", "golang.org/x/net/"}

// httpStack is net/http. The engine proper must not import it either: it
// runs components and knows no protocol; Go's wasi:http, a provider, may.
var (
	httpStack   = []string{"net/http"}
	httpAllowed = []string{"internal/wasmhost/wasihttp"}
)

// socketCalls are the raw-socket calls that would dial without package
// net: none of them may appear in the engine's tree outside dialer.
var socketCalls = []string{"Socket", "Connect", "Socketpair"}

// TestOnlyH1Dials: inside internal/wasmhost's tree, only the h1 package
// imports socket code or makes raw socket calls, and h1 is pure Go that
// imports nothing of the module (testable without wasmtime).
func TestOnlyH1Dials(t *testing.T) {
	for _, p := range list(t, nil, "./internal/wasmhost/...") {
		r := rel(p.ImportPath)
		if r == dialer {
			if len(p.CgoFiles) > 0 {
				t.Errorf("%s uses cgo: it is pure Go", r)
			}
			for _, imp := range p.Imports {
				if rel(imp) != "" {
					t.Errorf("%s imports %s: it imports nothing of the module", r, imp)
				}
			}
			continue
		}
		for _, imp := range p.Imports {
			for _, s := range socketCode {
				if imp == s || strings.HasSuffix(s, "/") && strings.HasPrefix(imp, s) {
					t.Errorf("%s imports %s: only %s dials", r, imp, dialer)
				}
			}
			for _, s := range httpStack {
				if imp == s && !allowedHTTP(r) {
					t.Errorf("%s imports %s: the engine knows no HTTP stack", r, imp)
				}
			}
		}
		fset := token.NewFileSet()
		for _, f := range goFiles(t, p.Dir) {
			af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if path != "syscall" && path != "golang.org/x/sys/unix" {
					continue
				}
				name := filepath.Base(path)
				if imp.Name != nil {
					name = imp.Name.Name
				}
				src, _ := readFile(f)
				for _, c := range socketCalls {
					if strings.Contains(src, name+"."+c+"(") {
						t.Errorf("%s calls %s.%s: only %s dials", rel(p.ImportPath)+"/"+filepath.Base(f), name, c, dialer)
					}
				}
			}
		}
	}
}

func allowedHTTP(r string) bool {
	for _, a := range httpAllowed {
		if r == a {
			return true
		}
	}
	return false
}

// goFiles are dir's non-test Go files.
func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range all {
		if !strings.HasSuffix(f, "_test.go") {
			out = append(out, f)
		}
	}
	return out
}
