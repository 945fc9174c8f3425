// Package archtest keeps docs/architecture.md true: the package map as
// checks, in the manner of Tailscale's dependency tests. A new package must be
// placed on the map here; an import that runs up the map, cgo outside the
// engine, or a heavy dependency in mur-roost fails the build's tests.
package archtest

import (
	"bytes"
	"encoding/json"
	"go/doc"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/murmur-go/murmur"

// levels is the package map (docs/architecture.md): a package may import
// packages of its own level or lower, never higher. Subpackages take their
// parent's level unless listed.
var levels = map[string]int{
	"cmd/mur":         7,
	"cmd/mur-roost":   7,
	"cmd/roost-load":  7,
	"cmd/mur-contain": 7,
	"cmd/mur-driver":  7,
	"cmd/mur-floor":   7,

	"internal/cli": 6,

	"internal/launch": 5,

	"internal/script":     4,
	"internal/agent":      4,
	"internal/door":       4,
	"internal/delegate":   4,
	"internal/membercall": 4,

	"internal/tools":    3,
	"internal/plan":     3,
	"internal/kube":     3,
	"internal/hooks":    3,
	"internal/driver":   3,
	"internal/hostapi":  3,
	"internal/wit":      3,
	"internal/grant":    3,
	"internal/peerfile": 3,

	"internal/contain":          2,
	"internal/door/doorapi":     2, // wire types and the one client: hostapi reaches peers with it
	"internal/launch/launchapi": 2, // the child-launch protocol: mur run writes it, delegate reads it
	"internal/command":          2,
	"internal/roost":            2,
	"internal/session":          2,
	"internal/snapshot":         2,
	"internal/trace":            2,
	"internal/store":            2,
	"internal/envelope":         2,
	"internal/telemetry":        2,
	"internal/formation":        2, // the roster, tokens, channel lines: door and launch read them
	"internal/mcp":              2,

	"internal/wasmhost":   1,
	"internal/manifest":   1,
	"internal/running":    1,
	"internal/diag":       1,
	"internal/ids":        1,
	"internal/version":    1,
	"internal/home":       1,
	"internal/atomicfile": 1,
	"internal/logfile":    1,
	"docs":                1, // embeds diagnostics.md for mur explain

	// The engine's HTTP/1.1 client: pure Go, imports nothing of ours.
	"internal/wasmhost/wasihttp/h1": 1,
	// Go's wasi:io and wasi:http, providers the engine's callers plug in.
	"internal/wasmhost/wasiio":   1,
	"internal/wasmhost/wasihttp": 1,

	"guest": 0, // the public guest kit: compiled to wasm, imports nothing of ours

	// Test support: imported by tests only (checked below).
	"internal/testbin":                  -1,
	"internal/e2e":                      -1,
	"internal/driver/fakeprovider":      -1,
	"internal/archtest":                 -1,
	"testdata/components/capsule-probe": -1,
	// The example policy hook's rules, tested on the host (a component's main package).
	"examples/policy/hook": -1,
}

// testOnly packages may be imported by _test.go files only (and by one
// another: the e2e harness builds on testbin and fakeprovider).
var testOnly = []string{"internal/testbin", "internal/e2e", "internal/driver/fakeprovider"}

// only lists import paths (prefixes) that exactly one package tree may use.
var only = map[string][]string{
	"github.com/spf13/cobra":                  {"internal/cli"},
	"github.com/bytecodealliance/wasmtime-go": {"internal/wasmhost"},
	"github.com/anthropics/anthropic-sdk-go":  {"internal/driver/anthropic"},
	"github.com/openai/openai-go":             {"internal/driver/openai"},
	"go.opentelemetry.io/otel":                {"internal/telemetry"},
	// The official MCP Go SDK: the runtime's MCP client only.
	"github.com/modelcontextprotocol/go-sdk": {"internal/mcp"},
	// The Kubernetes API types check kube's renderings (its tests only).
	"k8s.io/":          {"internal/kube"},
	"sigs.k8s.io/yaml": {"internal/kube"},
}

// roostForbidden may not be anywhere in mur-roost's dependency closure: the
// daemon referees spawns and must stay small, pure Go and free of the
// runtime's engine, exporters and provider SDKs.
var roostForbidden = []string{
	"github.com/bytecodealliance/wasmtime-go",
	module + "/internal/wasmhost",
	"go.opentelemetry.io/",
	"github.com/anthropics/",
	"github.com/openai/",
	"github.com/modelcontextprotocol/",
}

type pkg struct {
	ImportPath   string
	Doc          string // the package doc comment's first sentence
	TestGoFiles  []string
	Dir          string
	GoFiles      []string
	Imports      []string
	TestImports  []string
	XTestImports []string
	CgoFiles     []string
	Standard     bool
}

func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// list runs go list -json over patterns in the module root.
func list(t *testing.T, env []string, args ...string) []pkg {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = root()
	cmd.Env = append(cmd.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// rel is a package's path inside the module ("" for one outside it).
func rel(path string) string {
	if path == module {
		return "."
	}
	r, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return ""
	}
	return r
}

// levelOf finds the map entry for a module package: itself or its nearest
// listed parent.
func levelOf(r string) (int, string, bool) {
	for p := r; p != "." && p != "/" && p != ""; p = filepath.Dir(p) {
		if l, ok := levels[p]; ok {
			return l, p, true
		}
	}
	return 0, "", false
}

// TestPackageMap checks every package of the module against the map.
func TestPackageMap(t *testing.T) {
	for _, p := range list(t, nil, "./...") {
		r := rel(p.ImportPath)
		lvl, entry, ok := levelOf(r)
		if !ok {
			t.Errorf("%s is not on the package map: place it in internal/archtest (levels) and docs/architecture.md", r)
			continue
		}
		for _, imp := range p.Imports {
			ir := rel(imp)
			if ir == "" {
				continue
			}
			il, ientry, ok := levelOf(ir)
			if !ok {
				continue // reported on its own
			}
			if il < 0 && lvl >= 0 {
				t.Errorf("%s imports the test-support package %s from non-test code", r, ir)
				continue
			}
			if lvl >= 0 && il > lvl {
				t.Errorf("%s (level %d, %s) imports %s (level %d, %s): imports must not run up the map", r, lvl, entry, ir, il, ientry)
			}
		}
	}
}

// TestOneHome checks the libraries that have exactly one importer, and that
// cgo lives in internal/wasmhost alone.
func TestOneHome(t *testing.T) {
	for _, p := range list(t, nil, "./...") {
		r := rel(p.ImportPath)
		if len(p.CgoFiles) > 0 && r != "internal/wasmhost" {
			t.Errorf("%s uses cgo (%s): cgo lives in internal/wasmhost only", r, strings.Join(p.CgoFiles, ", "))
		}
		all := append(append(append([]string(nil), p.Imports...), p.TestImports...), p.XTestImports...)
		for _, imp := range all {
			for lib, owners := range only {
				if !strings.HasPrefix(imp, lib) {
					continue
				}
				allowed := false
				for _, o := range owners {
					if r == o || strings.HasPrefix(r, o+"/") {
						allowed = true
					}
				}
				if !allowed {
					t.Errorf("%s imports %s, which only %s may import", r, imp, strings.Join(owners, ", "))
				}
			}
		}
		for _, imp := range p.Imports {
			for _, to := range testOnly {
				if lvl, _, _ := levelOf(r); rel(imp) == to && lvl >= 0 {
					t.Errorf("%s imports %s from non-test code", r, to)
				}
			}
		}
	}
}

// TestRoostLinksNothingHeavy checks mur-roost's whole dependency closure:
// nothing forbidden, no package outside the standard library with cgo, and
// it builds with CGO_ENABLED=0 (the standard library's own cgo DNS resolver
// is the only cgo a default build links, and the daemon never resolves
// names: it listens on 127.0.0.1).
func TestRoostLinksNothingHeavy(t *testing.T) {
	const bin = "./cmd/mur-roost"
	for _, cgo := range []string{"CGO_ENABLED=1", "CGO_ENABLED=0"} {
		var bad []string
		for _, p := range list(t, []string{cgo}, "-deps", bin) {
			for _, f := range roostForbidden {
				if strings.HasPrefix(p.ImportPath, f) {
					bad = append(bad, p.ImportPath)
				}
			}
			if len(p.CgoFiles) > 0 && !p.Standard {
				bad = append(bad, p.ImportPath+" (cgo)")
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			t.Errorf("%s (%s) links what it must not: %s", bin, cgo, strings.Join(bad, ", "))
		}
	}
}

// TestHelperLinksNothingHeavy: mur-contain, the containment helper every
// contained command starts as, exists to start fast; it links none of what
// mur-roost must not either.
func TestHelperLinksNothingHeavy(t *testing.T) {
	const bin = "./cmd/mur-contain"
	var bad []string
	for _, p := range list(t, nil, "-deps", bin) {
		for _, f := range roostForbidden {
			if strings.HasPrefix(p.ImportPath, f) {
				bad = append(bad, p.ImportPath)
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("%s links what it must not: %s", bin, strings.Join(bad, ", "))
	}
}

// TestMurLinksNoProviderSDK: mur built with the murdriver tag (the split
// build scripts/install.sh ships) reaches its provider built-ins through
// mur-driver (internal/driver/remote), so that no mur process starts their
// SDKs; only the helper links them.
func TestMurLinksNoProviderSDK(t *testing.T) {
	for _, c := range []struct {
		bin  string
		want bool
	}{{"./cmd/mur", false}, {"./cmd/mur-driver", true}} {
		if got, sdk := linksProviderSDK(t, c.bin, "-tags", "murdriver"); got != c.want {
			t.Errorf("%s -tags murdriver links a provider SDK: %v (want %v): %s", c.bin, got, c.want, strings.Join(sdk, ", "))
		}
	}
}

// TestPlainMurLinksProviderSDK is the converse: a plain `go build ./cmd/mur`
// links the provider built-ins, so it is complete alone (the provider
// drivers are built into mur: docs/drivers.md).
func TestPlainMurLinksProviderSDK(t *testing.T) {
	_, got := linksProviderSDK(t, "./cmd/mur")
	for _, sdk := range []string{"github.com/anthropics/", "github.com/openai/"} {
		found := false
		for _, p := range got {
			found = found || strings.HasPrefix(p, sdk)
		}
		if !found {
			t.Errorf("a plain build of ./cmd/mur does not link %s…: %s", sdk, strings.Join(got, ", "))
		}
	}
}

// linksProviderSDK lists the provider SDK packages bin links when built with
// flags.
func linksProviderSDK(t *testing.T, bin string, flags ...string) (bool, []string) {
	t.Helper()
	var sdk []string
	for _, p := range list(t, nil, append(append(flags, "-deps"), bin)...) {
		if strings.HasPrefix(p.ImportPath, "github.com/anthropics/") || strings.HasPrefix(p.ImportPath, "github.com/openai/") {
			sdk = append(sdk, p.ImportPath)
		}
	}
	return len(sdk) > 0, sdk
}

// TestMapIsDocumented checks docs/architecture.md names every package on the
// map, so the document and the checks cannot drift apart.
func TestMapIsDocumented(t *testing.T) {
	doc, err := readFile(filepath.Join(root(), "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	for _, p := range list(t, nil, "./...") {
		present[rel(p.ImportPath)] = true
	}
	for p := range levels {
		if !present[p] {
			continue // a planned package, not built yet
		}
		if !strings.Contains(doc, "`"+p+"`") {
			t.Errorf("docs/architecture.md does not name `%s`", p)
		}
	}
}

// TestMapRowsMatchPackageDocs keeps each package's one line on the map and
// its doc comment in step. The rule: a row's description leads with a
// phrase — its text up to the first ": ", "; ", " (", " — " or ". " — and
// that phrase must appear in the first sentence of the package's doc comment
// (the sentence go doc shows). A row naming several packages gives one
// "; "-separated part per package, in order; in a "(+ sub, …)" row only the
// first package is held to it. Backticks, case, runs of spaces and
// parenthesised asides in the doc are ignored.
func TestMapRowsMatchPackageDocs(t *testing.T) {
	doc, err := readFile(filepath.Join(root(), "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, p := range list(t, nil, "./...") {
		docs[rel(p.ImportPath)] = p.Doc
		if p.Doc == "" {
			docs[rel(p.ImportPath)] = testOnlyDoc(t, p)
		}
	}
	rows := 0
	for _, line := range strings.Split(doc, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) < 3 || !mapLevel.MatchString(cells[0]) {
			continue
		}
		rows++
		pkgCell, _, _ := strings.Cut(cells[1], "(+")
		var pkgs []string
		for _, m := range backticked.FindAllStringSubmatch(pkgCell, -1) {
			pkgs = append(pkgs, m[1])
		}
		job := strings.Join(cells[2:], " | ")
		parts := []string{job}
		if len(pkgs) > 1 {
			parts = strings.Split(job, "; ")
			if len(parts) < len(pkgs) {
				t.Errorf("docs/architecture.md: the row for %s has %d \"; \"-separated parts, one per package wanted", strings.Join(pkgs, ", "), len(parts))
				continue
			}
		}
		for i, p := range pkgs {
			synopsis, ok := docs[p]
			if !ok {
				continue // a planned package, not built yet
			}
			lead := leadPhrase(parts[i])
			if synopsis == "" {
				t.Errorf("%s has no package doc comment; its row on docs/architecture.md says %q", p, lead)
				continue
			}
			if lead == "" || !strings.Contains(docNorm(synopsis), lead) {
				t.Errorf("docs/architecture.md's row for %s leads with %q, which the first sentence of its package doc does not say:\n\t%s\nmake them agree: the row's text up to its first \": \", \"; \", \" (\", \" — \" or \". \" must appear in that sentence", p, lead, synopsis)
			}
		}
	}
	if rows < 20 {
		t.Fatalf("found %d rows in docs/architecture.md's package table; has its shape changed?", rows)
	}
}

var (
	mapLevel    = regexp.MustCompile(`^(\d+|test)$`)
	backticked  = regexp.MustCompile("`([^`]+)`")
	parenthesis = regexp.MustCompile(`\([^()]*\)`)
	spaces      = regexp.MustCompile(`\s+`)
)

// testOnlyDoc is the doc synopsis of a package made of test files only
// (go list reports none for it), such as this one.
func testOnlyDoc(t *testing.T, p pkg) string {
	for _, f := range p.TestGoFiles {
		af, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, f), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if af.Doc != nil {
			return new(doc.Package).Synopsis(af.Doc.Text())
		}
	}
	return ""
}

// leadPhrase is a row's description up to its first separator, normalised.
func leadPhrase(s string) string {
	end := len(s)
	for _, sep := range []string{": ", "; ", " (", " — ", ". "} {
		if i := strings.Index(s, sep); i >= 0 && i < end {
			end = i
		}
	}
	return textNorm(s[:end])
}

// docNorm is a doc sentence without its parenthesised asides, normalised.
func docNorm(s string) string {
	for {
		t := parenthesis.ReplaceAllString(s, "")
		if t == s {
			break
		}
		s = t
	}
	return textNorm(s)
}

func textNorm(s string) string {
	s = strings.ReplaceAll(s, "`", "")
	return strings.ToLower(strings.TrimSpace(spaces.ReplaceAllString(s, " ")))
}

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}
