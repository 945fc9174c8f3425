package manifest

import (
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/murmur-go/murmur/internal/diag"
)

// Options control loading. The zero value resolves ${NAME} from os.LookupEnv.
type Options struct {
	// SkipSecrets leaves gateway.api_key unresolved (mur-roost reads manifests
	// for their policy only and never holds provider keys).
	SkipSecrets bool
	// LookupEnv resolves ${NAME}; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// MaxManifestBytes bounds what Parse accepts: a manifest is configuration,
// and a bigger file is a mistake or an attack on the YAML decoder.
const MaxManifestBytes = 1 << 20

// Load reads and parses the manifest at path.
func Load(path string, opts Options) (*Manifest, error) {
	buf, err := Read(path)
	if err != nil {
		return nil, err
	}
	return Parse(buf, path, opts)
}

// Read reads a manifest file's bytes, bounded by MaxManifestBytes. A run
// keeps these bytes: it parses them, resolves secrets from them and copies
// them into the runtime dir, so every step sees the same manifest.
func Read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, diag.Wrap(err, "E-MAN-020", "cannot read manifest %s", path).
			WithHint("check the path given with --manifest, or run from the directory holding murmur.yaml")
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, diag.Wrap(err, "E-MAN-020", "cannot read manifest %s", path)
	}
	if len(buf) > MaxManifestBytes {
		return nil, diag.New("E-MAN-020", "manifest %s is larger than %d bytes", path, MaxManifestBytes).
			WithHint("a murmur.yaml is configuration; move large content into files named by requires_files")
	}
	return buf, nil
}

// Parse parses and validates manifest bytes. file names the source in
// messages ("murmur.yaml" when ""). Every error is a *diag.Diagnostic whose
// message starts with "<file>:<line>:<col>: "; validation stops at the first
// error in document order, then the rules that relate keys to one another.
// On success Manifest.Warnings holds, in order, the unknown-key and other
// W-MAN warnings and then the W-SEC-007 narrowing warnings EffectiveGrants
// reports, each positioned and prefixed the same way.
func Parse(data []byte, file string, opts Options) (*Manifest, error) {
	name := file
	if name == "" {
		name = "murmur.yaml"
	}
	if len(data) > MaxManifestBytes {
		return nil, diag.New("E-MAN-020", "%s:1:1: manifest is larger than %d bytes", name, MaxManifestBytes).
			WithHint("a murmur.yaml is configuration; move large content into files named by requires_files")
	}
	doc, yerr := decodeYAML(data)
	if yerr != nil {
		line := 1
		if mm := yamlLine.FindStringSubmatch(yerr.Error()); mm != nil {
			if l, e := strconv.Atoi(mm[1]); e == nil && l > 0 {
				line = l
			}
		}
		msg := strings.TrimPrefix(yerr.Error(), "yaml: ")
		msg = yamlLine.ReplaceAllString(msg, "")
		return nil, diag.New("E-MAN-002", "%s:%d:1: malformed YAML: %s", name, line, oneLine(msg)).
			WithHint("fix the YAML syntax at that line (indentation, quoting, a missing ':')")
	}
	top := &doc
	if top.Kind == yaml.DocumentNode && len(top.Content) > 0 {
		top = top.Content[0]
	}
	top = deref(top)
	if top.Kind == 0 || top.Kind == yaml.DocumentNode || (top.Kind == yaml.ScalarNode && top.Tag == "!!null") {
		return nil, diag.New("E-MAN-018", "%s:1:1: the manifest is empty", name).
			WithHint("a murmur.yaml needs at least name: and version:")
	}
	if top.Kind != yaml.MappingNode {
		return nil, diag.New("E-MAN-019", "%s:%d:%d: the top level of the manifest must be a mapping of keys (name:, version:, ...), not %s",
			name, top.Line, top.Column, kindName(top)).
			WithHint("start the file with name: and version: lines")
	}
	p := &parser{file: name, opts: opts, m: &Manifest{File: file, declared: make(map[string]Pos, 64)}, valPos: map[string]Pos{}}
	if p.opts.LookupEnv == nil {
		p.opts.LookupEnv = os.LookupEnv
	}
	p.top(top)
	if p.err == nil {
		p.crossChecks(top)
	}
	if p.err == nil {
		p.exportsChecks()
		p.doorWarnings()
	}
	if p.err != nil {
		return nil, p.err
	}
	_, w := p.m.EffectiveGrants()
	p.m.Warnings = append(p.m.Warnings, w...)
	return p.m, nil
}

// decodeYAML reads data into a node tree. The decoder is third-party code fed
// untrusted bytes; a panic inside it comes out as an error, never a crash.
// (Only the decoder is guarded: a panic in this package's own walk is a bug
// the fuzz target must see.)
func decodeYAML(data []byte) (doc yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: the decoder failed: %v", r)
		}
	}()
	err = yaml.Unmarshal(data, &doc)
	return doc, err
}

var yamlLine = regexp.MustCompile(`line (\d+): `)

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }

// deref follows alias nodes (bounded, in case of a cycle).
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	if n == nil {
		return &yaml.Node{}
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "an empty value"
		}
		return "a single value"
	}
	return "nothing"
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// parser walks the YAML nodes itself so that every error and warning carries
// the line and column where the offending text was written.
type parser struct {
	file string
	opts Options
	m    *Manifest
	err  *diag.Diagnostic // the first error, in document order
	// nodes counts the keys and list items walked. YAML aliases let a small
	// file name the same subtree many times; the budget keeps a hostile
	// manifest from costing more than a large honest one.
	nodes int
	// valPos is where the values of runtime, implementation and execution
	// were written, for the checks that relate them.
	valPos map[string]Pos
}

// Bounds on a manifest's shape. Honest manifests are far below them; they
// keep parsing and EffectiveGrants linear in the file's size.
const (
	MaxListEntries = 1024    // items in any one list, artifacts included
	maxNodes       = 200_000 // keys and list items walked, aliases counted each time
)

// spend counts one walked node and reports whether the budget still holds.
func (p *parser) spend(n *yaml.Node) bool {
	p.nodes++
	if p.nodes > maxNodes {
		p.fail(n, "E-MAN-025", "the manifest is too complex (more than %d keys and list items, aliases counted each time they are used)", maxNodes).
			WithHint("write the manifest out plainly; anchors and aliases are rarely needed in murmur.yaml")
		return false
	}
	return true
}

// tooLong refuses a list longer than MaxListEntries.
func (p *parser) tooLong(n *yaml.Node, path string) bool {
	if len(n.Content) > MaxListEntries {
		p.fail(n, "E-MAN-025", "%s: %d entries, more than the %d a list may hold", path, len(n.Content), MaxListEntries)
		return true
	}
	return false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// failAt records an error at pos unless an earlier one was recorded. It
// returns the diagnostic so a hint can be chained (harmless when discarded).
func (p *parser) failAt(pos Pos, code, format string, args ...any) *diag.Diagnostic {
	if pos.Line < 1 || pos.Column < 1 {
		pos = Pos{Line: 1, Column: 1}
	}
	d := diag.New(code, "%s:%d:%d: %s", p.file, pos.Line, pos.Column, sanitize(fmt.Sprintf(format, args...)))
	if h, ok := defaultHints[code]; ok {
		d.Hint = h // a caller's WithHint replaces it
	}
	if p.err == nil {
		p.err = d
	}
	return d
}

// defaultHints say what to do for the codes whose message alone (what was
// found where) leaves the fix to the reader.
var defaultHints = map[string]string{
	"E-MAN-004": "give the key the shape it takes: a list as [a, b] or one '- item' per line, a mapping as indented keys, a flag as true or false",
	"E-MAN-005": "write a full name <scope>/<name>, each part lowercase letters, digits and '-', such as acme/lint",
	"E-MAN-007": "use one of the values the message lists",
	"E-MAN-008": "write a plain whole number with no quotes or units, such as deadline_seconds: 60",
	"E-MAN-010": "keep one of the two entries: a key may appear once in a mapping",
	"E-MAN-024": "write the endpoint as https://host[:port] or http://host[:port]",
	"E-MAN-025": "shorten it: a manifest is configuration, not data",
}

func (p *parser) fail(n *yaml.Node, code, format string, args ...any) *diag.Diagnostic {
	return p.failAt(posOf(n), code, format, args...)
}

func posOf(n *yaml.Node) Pos { return Pos{Line: n.Line, Column: n.Column} }

func (p *parser) warn(n *yaml.Node, code, format string, args ...any) {
	pos := posOf(n)
	p.m.Warnings = append(p.m.Warnings, Warning{Code: code, Pos: pos,
		Message: fmt.Sprintf("%s:%d:%d: %s", p.file, pos.Line, pos.Column, sanitize(fmt.Sprintf(format, args...)))})
}

// hasControl reports whether s holds a control character.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) })
}

// sanitize escapes control characters and invalid UTF-8 in a message: keys
// and values come from the file, and a message is one line a terminal prints.
func sanitize(s string) string {
	clean := utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
		return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)
	})
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func (p *parser) typeErr(n *yaml.Node, path, want string) {
	p.fail(n, "E-MAN-004", "%s: expected %s, found %s", path, want, kindName(n))
}

// mapping walks a mapping node; handle returns false for an unknown key,
// which becomes a W-MAN-001 warning. A null value is an empty mapping.
func (p *parser) mapping(n *yaml.Node, path string, handle func(key string, v *yaml.Node, kp string) bool) {
	n = deref(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.typeErr(n, path, "a mapping")
		return
	}
	pairs := p.pairs(n, path, 0)
	for _, pr := range pairs {
		kn, v := pr[0], pr[1]
		key := kn.Value
		kp := join(path, key)
		p.m.declared[kp] = posOf(kn)
		// Top-level keys beginning with "x-" are extensions (a place to keep
		// YAML anchors), as in other YAML formats: ignored without a warning.
		if !(known(path, key) && handle(key, v, kp)) && !(path == "" && strings.HasPrefix(key, "x-")) {
			if near := nearKeys(path, key); len(near) > 0 {
				p.warn(kn, "W-MAN-001", "unknown key '%s' is ignored; did you mean '%s'?", kp, strings.Join(near, "' or '"))
			} else {
				p.warn(kn, "W-MAN-001", "unknown key '%s' is ignored", kp)
			}
		}
		if p.err != nil {
			return
		}
	}
}

// pairs lists a mapping's key/value nodes in order, refusing a key written
// twice, and appends the pairs YAML merge keys (`<<: *defaults`) bring in for
// keys not written explicitly (an earlier merge source wins over a later one).
func (p *parser) pairs(n *yaml.Node, path string, depth int) [][2]*yaml.Node {
	var out [][2]*yaml.Node
	var merged [][2]*yaml.Node
	seen := map[string]Pos{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, v := deref(n.Content[i]), n.Content[i+1]
		if kn.Kind != yaml.ScalarNode {
			p.fail(kn, "E-MAN-004", "%s: expected a plain key, found %s", orTop(path), kindName(kn))
			return nil
		}
		if !p.spend(kn) {
			return nil
		}
		if kn.Tag == "!!merge" {
			merged = append(merged, p.mergeSources(v, path, depth)...)
			if p.err != nil {
				return nil
			}
			continue
		}
		if first, dup := seen[kn.Value]; dup {
			p.fail(kn, "E-MAN-010", "%s: the key appears twice (first at line %d, column %d)", join(path, kn.Value), first.Line, first.Column).
				WithHint("keep one of the two")
			return nil
		}
		seen[kn.Value] = posOf(kn)
		out = append(out, [2]*yaml.Node{kn, v})
	}
	for _, pr := range merged {
		if _, ok := seen[pr[0].Value]; !ok {
			seen[pr[0].Value] = posOf(pr[0])
			out = append(out, pr)
		}
	}
	return out
}

// mergeSources reads the value of a `<<` key: a mapping, or a list of them.
func (p *parser) mergeSources(v *yaml.Node, path string, depth int) [][2]*yaml.Node {
	v = deref(v)
	if depth > 32 {
		p.fail(v, "E-MAN-025", "%s: merge keys nest more than 32 levels deep", orTop(path))
		return nil
	}
	switch v.Kind {
	case yaml.MappingNode:
		return p.pairs(v, path, depth+1)
	case yaml.SequenceNode:
		var out [][2]*yaml.Node
		for _, it := range v.Content {
			it = deref(it)
			if it.Kind != yaml.MappingNode {
				p.typeErr(it, join(path, "<<"), "a mapping")
				return nil
			}
			out = append(out, p.pairs(it, path, depth+1)...)
			if p.err != nil {
				return nil
			}
		}
		return out
	}
	p.typeErr(v, join(path, "<<"), "a mapping or a list of mappings")
	return nil
}

func orTop(path string) string {
	if path == "" {
		return "top level"
	}
	return path
}

// str reads a scalar as its text. A null value reads as "". Numbers and
// booleans keep their text as written (`version: 1.0` is "1.0").
func (p *parser) str(n *yaml.Node, path string) string {
	n = deref(n)
	if isNull(n) {
		return ""
	}
	if n.Kind != yaml.ScalarNode {
		p.typeErr(n, path, "a string")
		return ""
	}
	return n.Value
}

func (p *parser) boolean(n *yaml.Node, path string) Opt[bool] {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		switch n.Value { // the common spellings, without building a decoder
		case "true":
			return Some(true)
		case "false":
			return Some(false)
		}
		var b bool
		if err := n.Decode(&b); err == nil {
			return Some(b)
		}
	}
	p.fail(n, "E-MAN-004", "%s: expected true or false, found %s", path, describe(n))
	return Opt[bool]{}
}

func describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "…"
		}
		return strconv.Quote(v)
	}
	return kindName(n)
}

// posInt reads a positive whole number no greater than max.
func (p *parser) posInt(n *yaml.Node, path string, max int64) (int64, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		p.fail(n, "E-MAN-008", "%s: expected a positive whole number, found %s", path, describe(n))
		return 0, false
	}
	// Plain decimal is the common case; other YAML integer spellings (0x1F,
	// 1_000) go through the decoder.
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		err = n.Decode(&v)
	}
	if err != nil || v < 1 || v > max {
		p.fail(n, "E-MAN-008", "%s: %s is not a whole number from 1 to %d", path, describe(n), max)
		return 0, false
	}
	return v, true
}

func (p *parser) optInt(n *yaml.Node, path string) Opt[int] {
	if v, ok := p.posInt(n, path, math.MaxInt32); ok {
		return Some(int(v))
	}
	return Opt[int]{}
}

func (p *parser) optInt64(n *yaml.Node, path string) Opt[int64] {
	if v, ok := p.posInt(n, path, math.MaxInt64); ok {
		return Some(v)
	}
	return Opt[int64]{}
}

func (p *parser) enum(n *yaml.Node, path string, allowed ...string) Opt[string] {
	s := p.str(n, path)
	if p.err != nil {
		return Opt[string]{}
	}
	for _, a := range allowed {
		if s == a {
			return Some(s)
		}
	}
	p.fail(deref(n), "E-MAN-007", "%s: %s is not one of %s", path, strconv.Quote(s), strings.Join(allowed, ", "))
	return Opt[string]{}
}

// strList reads a list of strings, calling check (if not nil) on each item.
// A null value is an empty list.
func (p *parser) strList(n *yaml.Node, path string, check func(s string, item *yaml.Node, ip string) string) []string {
	n = deref(n)
	out := []string{}
	if isNull(n) {
		return out
	}
	if n.Kind != yaml.SequenceNode {
		p.typeErr(n, path, "a list")
		return out
	}
	if p.tooLong(n, path) {
		return out
	}
	for i, it := range n.Content {
		it = deref(it)
		if !p.spend(it) {
			return out
		}
		ip := fmt.Sprintf("%s[%d]", path, i)
		p.m.declared[ip] = posOf(it)
		if it.Kind != yaml.ScalarNode || isNull(it) {
			p.fail(it, "E-MAN-004", "%s: expected a string, found %s", ip, kindName(it))
			return out
		}
		s := it.Value
		if check != nil {
			s = check(s, it, ip)
		}
		if p.err != nil {
			return out
		}
		out = append(out, s)
	}
	return out
}

// fileName is the name messages use for the manifest's file.
func (m *Manifest) fileName() string {
	if m.File == "" {
		return "murmur.yaml"
	}
	return m.File
}

// String renders the warning as a person reads it.
func (w Warning) String() string { return "warning[" + w.Code + "]: " + w.Message }

// Diag converts the warning for diag.PrintWarnings.
func (w Warning) Diag() diag.Warning { return diag.Warning{Code: w.Code, Message: w.Message} }
