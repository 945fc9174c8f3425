// Package formation is a formation's data: the roster.yaml schema and its
// admission, the formation tokens, and the channel lines a launcher hands
// its members (docs/formations.md). It starts nothing: mur run --roster
// (internal/cli, internal/launch) drives it.
package formation

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
)

// FileName is the roster a directory given to --roster holds.
const FileName = "roster.yaml"

// MaxMembers caps a roster (ours: a formation is a handful of processes).
const MaxMembers = 64

// MaxRosterBytes bounds what is read: a roster is a page of configuration.
const MaxRosterBytes = 1 << 20

var memberNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// ValidMemberName reports whether s is a member name.
func ValidMemberName(s string) bool { return memberNameRE.MatchString(s) }

// Member is one members[] entry, as written (Full is the normalized name).
type Member struct {
	Name    string
	Capsule string // as written
	Full    string // <scope>/<name>
	Version string
	Entry   bool
}

// Rule is one reachability[] entry.
type Rule struct {
	From string
	To   []string
}

// Roster is a parsed roster.yaml. File is its absolute path and Dir its
// directory with symlinks resolved: the members' project.
type Roster struct {
	File    string
	Dir     string
	Members []Member
	All     bool   // reachability: all
	Rules   []Rule // reachability as a list (nil for all or no edges)
}

// Index returns the position of the member named name, or -1.
func (r *Roster) Index(name string) int {
	for i, m := range r.Members {
		if m.Name == name {
			return i
		}
	}
	return -1
}

// Entry returns the entry member's index (valid after Check).
func (r *Roster) Entry() int {
	for i, m := range r.Members {
		if m.Entry {
			return i
		}
	}
	return -1
}

// Locate turns --roster's value into the roster file: a directory means
// DIR/roster.yaml, anything else is that file whatever its name. The path
// returned is absolute, with its directory's symlinks resolved.
func Locate(arg string) (file, dir string, err error) {
	if arg == "" {
		arg = "."
	}
	abs, err := filepath.Abs(arg)
	if err != nil {
		return "", "", err
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		abs = filepath.Join(abs, FileName)
	}
	d, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return abs, filepath.Dir(abs), err
	}
	return filepath.Join(d, filepath.Base(abs)), d, nil
}

// Load reads and parses the roster at the path Locate returned, then runs
// the structural checks (admission checks 1–5): nothing is read from a store.
func Load(arg string) (*Roster, error) {
	file, dir, lerr := Locate(arg)
	if lerr != nil && file == "" {
		return nil, diag.Wrap(lerr, "E-ROS-001", "%s: cannot be read", arg)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, rosErr(file, "", "cannot be read: %v", pathless(err))
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, rosErr(file, "", "is a directory")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxRosterBytes+1))
	if err != nil {
		return nil, rosErr(file, "", "cannot be read: %v", pathless(err))
	}
	r, err := Parse(data, file)
	if err != nil {
		return nil, err
	}
	r.Dir = dir
	if err := r.Check(); err != nil {
		return nil, err
	}
	return r, nil
}

// pathless is an os error's words without the path (the message names the file already).
func pathless(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func rosErr(file, path, format string, args ...any) *diag.Diagnostic {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	return diag.New("E-ROS-001", "%s: %s", file, msg).
		WithHint("a roster holds roster_version: 1, members: (name, capsule, version, entry) and reachability: (docs/formations.md)")
}

// rparser walks a roster's YAML tree, stopping at the first fault in
// document order.
type rparser struct {
	file string
	err  error
}

func (p *rparser) fail(path, member, format string, args ...any) {
	if p.err != nil {
		return
	}
	if member != "" {
		path += " (member '" + member + "')"
	}
	p.err = rosErr(p.file, path, format, args...)
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// empty reports whether a value is absent: null, or written empty.
func empty(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.Tag {
	case "!!str":
		return "the string " + strconv.Quote(n.Value)
	case "!!int", "!!float":
		return "the number " + n.Value
	case "!!bool":
		return "the boolean " + n.Value
	}
	return "the value " + strconv.Quote(n.Value)
}

// mapping calls each for every key of n in order, refusing a non-mapping,
// a repeated key and any key outside keys. Keys with empty values are
// skipped (absent).
func (p *rparser) mapping(n *yaml.Node, path, member string, keys []string, each func(k string, v *yaml.Node, kp string)) {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		p.fail(orTop(path), member, "expected a mapping, found %s", describe(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content) && p.err == nil; i += 2 {
		kn, v := deref(n.Content[i]), n.Content[i+1]
		if kn.Kind != yaml.ScalarNode {
			p.fail(orTop(path), member, "a key is %s, not a name", describe(kn))
			return
		}
		k := kn.Value
		kp := k
		if path != "" {
			kp = path + "." + k
		}
		known := false
		for _, w := range keys {
			known = known || w == k
		}
		if !known {
			p.fail(kp, member, "unknown key (this level takes %s)", strings.Join(keys, ", "))
			return
		}
		if seen[k] {
			p.fail(kp, member, "the key appears twice")
			return
		}
		seen[k] = true
		if empty(v) {
			continue
		}
		each(k, deref(v), kp)
	}
}

func orTop(path string) string {
	if path == "" {
		return "top level"
	}
	return path
}

// str reads a string scalar (numbers are read as written: 1.10 stays 1.10
// when numbers is true).
func (p *rparser) str(n *yaml.Node, path, member string, numbers bool) string {
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!str" || numbers && (n.Tag == "!!int" || n.Tag == "!!float")) {
		return n.Value
	}
	p.fail(path, member, "expected a string, found %s", describe(n))
	return ""
}

// Parse reads roster bytes (admission check 1: the schema). file names the
// roster in messages. The structural checks 2–5 are Check's.
func Parse(data []byte, file string) (*Roster, error) {
	p := &rparser{file: file}
	if len(data) > MaxRosterBytes {
		return nil, rosErr(file, "", "is larger than %d bytes", MaxRosterBytes)
	}
	var doc yaml.Node
	if err := decode(data, &doc); err != nil {
		return nil, rosErr(file, "", "is not YAML: %s", strings.ReplaceAll(strings.TrimPrefix(err.Error(), "yaml: "), "\n", "; "))
	}
	top := &doc
	if top.Kind == yaml.DocumentNode && len(top.Content) > 0 {
		top = top.Content[0]
	}
	if top.Kind == yaml.DocumentNode || empty(top) {
		return nil, rosErr(file, "", "is empty")
	}
	r := &Roster{File: file}
	var haveVersion, haveMembers bool
	p.mapping(top, "", "", []string{"roster_version", "members", "reachability"}, func(k string, v *yaml.Node, kp string) {
		switch k {
		case "roster_version":
			haveVersion = true
			if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
				p.fail(kp, "", "expected the integer 1, found %s", describe(v))
			} else if n, err := strconv.Atoi(v.Value); err != nil || n != 1 {
				p.fail(kp, "", "roster version %s is not supported (this mur reads version 1)", v.Value)
			}
		case "members":
			haveMembers = true
			p.members(v, kp, r)
		case "reachability":
			p.reachability(v, kp, r)
		}
	})
	if p.err == nil && !haveVersion {
		p.fail("roster_version", "", "missing (write roster_version: 1)")
	}
	if p.err == nil && !haveMembers {
		p.fail("members", "", "missing: a roster needs at least one member")
	}
	if p.err != nil {
		return nil, p.err
	}
	return r, nil
}

func decode(data []byte, doc *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil { // third-party decoder on untrusted bytes
			err = fmt.Errorf("the YAML decoder failed: %v", r)
		}
	}()
	return yaml.Unmarshal(data, doc)
}

func (p *rparser) members(n *yaml.Node, path string, r *Roster) {
	if n.Kind != yaml.SequenceNode {
		p.fail(path, "", "expected a list of members, found %s", describe(n))
		return
	}
	if len(n.Content) == 0 {
		p.fail(path, "", "the list is empty: a roster needs at least one member")
		return
	}
	if len(n.Content) > MaxMembers {
		p.fail(path, "", "%d members; a roster holds at most %d", len(n.Content), MaxMembers)
		return
	}
	for i, it := range n.Content {
		ip := fmt.Sprintf("%s[%d]", path, i)
		it = deref(it)
		var m Member
		// The member's name is known before its other keys are read, so
		// every fault inside it names the member.
		if it != nil && it.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(it.Content); j += 2 {
				if k, v := deref(it.Content[j]), deref(it.Content[j+1]); k.Value == "name" && v.Kind == yaml.ScalarNode && memberNameRE.MatchString(v.Value) {
					m.Name = v.Value
				}
			}
		}
		who := m.Name
		var seen = map[string]bool{}
		p.mapping(it, ip, who, []string{"name", "capsule", "version", "entry"}, func(k string, v *yaml.Node, kp string) {
			seen[k] = true
			switch k {
			case "name":
				s := p.str(v, kp, who, false)
				if p.err == nil && !memberNameRE.MatchString(s) {
					p.fail(kp, "", "%s is not a member name (a lowercase letter, then up to 31 lowercase letters, digits or '-')", strconv.Quote(s))
				}
			case "capsule":
				s := p.str(v, kp, who, false)
				if p.err != nil {
					return
				}
				full, err := manifest.NormalizeName(s)
				if err != nil {
					p.fail(kp, who, "%s is not an artifact name (<scope>/<name>, or a bare name meaning local/<name>)", strconv.Quote(s))
					return
				}
				m.Capsule, m.Full = s, full
			case "version":
				s := p.str(v, kp, who, true)
				if p.err != nil {
					return
				}
				switch {
				case strings.TrimSpace(s) == "":
					p.fail(kp, who, "the version is blank")
				case manifest.ReservedVersion(s):
					p.fail(kp, who, "%q is a reserved version that resolves to nothing; name an exact version", s)
				}
				m.Version = s
			case "entry":
				if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
					p.fail(kp, who, "expected true or false, found %s", describe(v))
					return
				}
				m.Entry = v.Value == "true" || v.Value == "True" || v.Value == "TRUE"
			}
		})
		for _, k := range []string{"name", "capsule", "version"} {
			if p.err == nil && !seen[k] {
				p.fail(ip+"."+k, who, "missing")
			}
		}
		if p.err != nil {
			return
		}
		r.Members = append(r.Members, m)
	}
}

func (p *rparser) reachability(n *yaml.Node, path string, r *Roster) {
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!str" && n.Value == "all" {
			r.All = true
			return
		}
		p.fail(path, "", "expected all or a list of rules, found %s", describe(n))
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.fail(path, "", "expected all or a list of rules, found %s", describe(n))
		return
	}
	for i, it := range n.Content {
		ip := fmt.Sprintf("%s[%d]", path, i)
		var rule Rule
		var haveFrom, haveTo bool
		p.mapping(it, ip, "", []string{"from", "to"}, func(k string, v *yaml.Node, kp string) {
			switch k {
			case "from":
				haveFrom = true
				rule.From = p.str(v, kp, "", false)
			case "to":
				haveTo = true
				if v.Kind != yaml.SequenceNode {
					p.fail(kp, "", "expected a list of member names, found %s", describe(v))
					return
				}
				for j, t := range v.Content {
					s := p.str(deref(t), fmt.Sprintf("%s[%d]", kp, j), "", false)
					if p.err != nil {
						return
					}
					rule.To = append(rule.To, s)
				}
			}
		})
		if p.err != nil {
			return
		}
		if !haveFrom {
			p.fail(ip+".from", "", "missing")
			return
		}
		if !haveTo || len(rule.To) == 0 {
			p.fail(ip+".to", "", "empty: a rule names at least one member to call")
			return
		}
		for j, t := range rule.To {
			if t == rule.From {
				p.fail(fmt.Sprintf("%s.to[%d]", ip, j), "", "'%s' may not call itself", t)
				return
			}
		}
		r.Rules = append(r.Rules, rule)
	}
}

// Check runs admission checks 2–5, which read no store: unique names
// (E-ROS-003), exactly one entry (E-ROS-002), every rule names members
// (E-ROS-004), no rule calls the entry (E-ROS-008).
func (r *Roster) Check() error {
	f := r.File
	first := map[string]int{}
	for i, m := range r.Members {
		if j, ok := first[m.Name]; ok {
			return diag.New("E-ROS-003", "%s: member name '%s' is used twice (members[%d] and members[%d])", f, m.Name, j, i).
				WithHint("give each member its own name; two members may run one capsule")
		}
		first[m.Name] = i
	}
	var entries []string
	for _, m := range r.Members {
		if m.Entry {
			entries = append(entries, "'"+m.Name+"'")
		}
	}
	switch {
	case len(entries) == 0:
		return diag.New("E-ROS-002", "%s: the roster needs exactly one member with entry: true; it has none", f).
			WithHint("mark the member that takes the formation's task with entry: true")
	case len(entries) == 2:
		return diag.New("E-ROS-002", "%s: the roster needs exactly one member with entry: true; %s and %s both claim it", f, entries[0], entries[1]).
			WithHint("keep entry: true on one member only")
	case len(entries) > 2:
		return diag.New("E-ROS-002", "%s: the roster needs exactly one member with entry: true; %s and %s all claim it", f,
			strings.Join(entries[:len(entries)-1], ", "), entries[len(entries)-1]).
			WithHint("keep entry: true on one member only")
	}
	for i, rule := range r.Rules {
		for _, x := range append([]string{rule.From}, rule.To...) {
			if r.Index(x) < 0 {
				return diag.New("E-ROS-004", "%s: reachability[%d] (from '%s') names '%s', which is no member of this roster", f, i, rule.From, x).
					WithHint("name members by their members[].name")
			}
		}
	}
	entry := r.Members[r.Entry()].Name
	for i, rule := range r.Rules {
		for _, x := range rule.To {
			if x == entry {
				return diag.New("E-ROS-008", "%s: reachability[%d] lets '%s' call '%s', the entry member; the entry holds only the formation's own task", f, i, rule.From, entry).
					WithHint("reverse the rule: from: %s, to: [%s]", entry, rule.From)
			}
		}
	}
	return nil
}
