// Package plan runs the plans an agent's model submits with submit-plan: the
// plan's validation (every check, every error collected, a refused plan runs
// nothing), the condition language of a step's "if", references substituted
// at dispatch, and the scheduler that runs tool, shell and capsule steps as a
// graph, each tool and shell attempt an ordinary call through
// tools.Inventory.Call (docs/plans.md).
package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/murmur-go/murmur/internal/manifest"
	"github.com/murmur-go/murmur/internal/tools"
)

// ToolName is the runtime tool's name.
const ToolName = "submit-plan"

// Bounds of a plan (docs/plans.md).
const (
	MaxInputBytes = 1 << 20
	MaxSteps      = 100
	MaxRetries    = 5
	// MaxRunning is how many of a plan's steps run at once: the daemon's
	// default --max-concurrent.
	MaxRunning = 4
	// maxErrors is how many validation errors the report lists whole.
	maxErrors = 20
)

// Step kinds.
const (
	KindTool    = "tool"
	KindShell   = "shell"
	KindCapsule = "capsule"
)

// on_error values.
const (
	OnErrorFail     = "fail"
	OnErrorSkip     = "skip"
	OnErrorContinue = "continue"
)

// Plan is a validated plan.
type Plan struct {
	ID    string
	Steps []*Step
	// Raw is the input as received.
	Raw json.RawMessage
}

// Step is one validated step.
type Step struct {
	ID   string
	Kind string
	// Tool is the name the step gave; Entry the tool it names.
	Tool  string
	Entry tools.Entry
	// Shell is the command line; Argv its words (Argv[0] the binary).
	Shell string
	Argv  []string
	// Capsule is the full name a capsule step delegates to, Bare its bare
	// name; Version and Task its input.
	Capsule, Bare, Version, Task string
	// Input is a tool or capsule step's input as given (references not
	// yet substituted).
	Input     json.RawMessage
	DependsOn []string
	If        string
	Cond      *Cond
	OnError   string
	Retries   int

	index int
	// needs are the steps this one depends on, transitively (by index).
	refs []Ref
}

// Catalog is what validation checks a plan's names against: the session's
// tools as a step may name them, and capabilities.shell.allow.
type Catalog struct {
	byName     map[string]tools.Entry
	callable   []string
	shellAllow []string
	spawnAllow []string
}

// NewCatalog indexes the session's tools: modelNames maps the name the
// model calls each tool by to its entry. A step may also name a tool by
// its full name, or by a bare name no other tool shares.
func NewCatalog(inv *tools.Inventory, modelNames map[string]tools.Entry, shellAllow, spawnAllow []string) *Catalog {
	c := &Catalog{byName: map[string]tools.Entry{}, shellAllow: shellAllow, spawnAllow: spawnAllow}
	bare := map[string][]tools.Entry{}
	for _, e := range inv.Entries() {
		c.byName[e.Name()] = e
		bare[manifest.Bare(e.Name())] = append(bare[manifest.Bare(e.Name())], e)
	}
	for b, es := range bare {
		if len(es) == 1 {
			if _, taken := c.byName[b]; !taken {
				c.byName[b] = es[0]
			}
		}
	}
	for n, e := range modelNames {
		c.byName[n] = e
		if stepCallable(e) {
			c.callable = append(c.callable, n)
		}
	}
	sort.Strings(c.callable)
	return c
}

// Callable lists the model's names of the tools a step may call: every
// tool but submit-plan, delegate-task and the shell tools.
func (c *Catalog) Callable() []string { return append([]string(nil), c.callable...) }

func stepCallable(e tools.Entry) bool {
	return e.Name() != ToolName && e.Name() != "delegate-task" && e.Kind() != tools.KindShell
}

// Errors are a refused plan's sentences, in the order found.
type Errors []string

// Shown is what the report and the trace give: the first 20, then
// "… and <n> more".
func (e Errors) Shown() []string {
	if len(e) <= maxErrors {
		return append([]string{}, e...)
	}
	return append(append([]string{}, e[:maxErrors]...), fmt.Sprintf("… and %d more", len(e)-maxErrors))
}

// stepIDRe is a step's id. It is compiled on first use, as segRe is: a
// counted repetition compiles to a large program, which every mur process
// would otherwise build at init for the plans only some runs read (issue 31).
var stepIDRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// Parse validates a plan's input bytes, in the documented order: the bytes,
// the plan's keys, each step in plan order, the checks across steps. Every
// error is collected; a plan with any is refused (nil Plan).
func Parse(raw []byte, cat *Catalog) (*Plan, Errors) {
	var errs Errors
	if len(raw) > MaxInputBytes {
		return nil, Errors{fmt.Sprintf("the plan is %d bytes; a plan is at most 1048576 bytes", len(raw))}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		top = map[string]json.RawMessage{}
	}
	p := &Plan{Raw: append(json.RawMessage(nil), raw...)}
	if err := unmarshalStr(top["id"], &p.ID); err != nil || len(p.ID) < 1 || len(p.ID) > 128 {
		errs = append(errs, `the plan needs "id", a string of 1 to 128 bytes`)
	}
	// The common case, every step an object, is decoded in one pass; any
	// other element falls back to one pass per element for its sentence.
	var rawSteps []json.RawMessage
	var stepMaps []map[string]json.RawMessage
	if s, ok := top["steps"]; ok && !isNull(s) && json.Unmarshal(s, &stepMaps) == nil && len(stepMaps) <= MaxSteps {
		rawSteps = make([]json.RawMessage, len(stepMaps))
	} else if stepMaps = nil; !ok || json.Unmarshal(s, &rawSteps) != nil || isNull(s) || len(rawSteps) > MaxSteps {
		errs = append(errs, `the plan needs "steps", a list of at most 100 step objects`)
		rawSteps = nil
	}
	for _, k := range sortedKeys(top) {
		if k != "id" && k != "steps" {
			errs = append(errs, fmt.Sprintf(`the plan has an unknown key %q; a plan holds "id" and "steps"`, k))
		}
	}
	seen := map[string]bool{}
	for i, rs := range rawSteps {
		var m map[string]json.RawMessage
		if stepMaps != nil {
			m = stepMaps[i]
		} else if json.Unmarshal(rs, &m) != nil {
			m = nil
		}
		s, serrs := parseStep(i, m, cat, seen)
		errs = append(errs, serrs...)
		if s != nil {
			cat.resolveCapsule(s)
			p.Steps = append(p.Steps, s)
		}
	}
	errs = append(errs, across(p)...)
	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

func isNull(b json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(b), []byte("null")) }

func sortedKeys(m map[string]json.RawMessage) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

var stepKeys = map[string]bool{"id": true, "tool": true, "shell": true, "capsule": true, "input": true,
	"depends_on": true, "if": true, "on_error": true, "retries": true}

// parseStep checks one step. The name its sentences use is "step <id>",
// or "steps[<i>]" while its id is not valid.
func parseStep(i int, m map[string]json.RawMessage, cat *Catalog, seen map[string]bool) (*Step, Errors) {
	if m == nil {
		return nil, Errors{fmt.Sprintf("steps[%d] is not an object", i)}
	}
	var errs Errors
	s := &Step{index: i, OnError: OnErrorFail}
	name := fmt.Sprintf("steps[%d]", i)
	if err := unmarshalStr(m["id"], &s.ID); err != nil || !stepIDRe().MatchString(s.ID) {
		errs = append(errs, fmt.Sprintf(`steps[%d]: "id" must be 1 to 64 characters, each a letter, a digit, _ or -`, i))
		s.ID = ""
	} else {
		name = "step " + s.ID
		if seen[s.ID] {
			errs = append(errs, name+": another step has this id")
		}
		seen[s.ID] = true
	}
	bad := func(format string, a ...any) { errs = append(errs, name+": "+fmt.Sprintf(format, a...)) }
	for _, k := range sortedKeys(m) {
		if !stepKeys[k] {
			bad("unknown key %q", k)
		}
	}
	var kinds []string
	for _, k := range []string{KindTool, KindShell, KindCapsule} {
		if _, ok := m[k]; ok {
			kinds = append(kinds, k)
		}
	}
	input, hasInput := m["input"]
	if len(kinds) != 1 {
		bad(`give exactly one of "tool", "shell" and "capsule"`)
	} else {
		s.Kind = kinds[0]
		switch s.Kind {
		case KindTool:
			errs = append(errs, s.checkTool(name, m["tool"], input, hasInput, cat)...)
		case KindShell:
			errs = append(errs, s.checkShell(name, m["shell"], hasInput, cat)...)
		case KindCapsule:
			errs = append(errs, s.checkCapsule(name, m["capsule"], input, hasInput)...)
		}
	}
	if d, ok := m["depends_on"]; ok {
		if err := json.Unmarshal(d, &s.DependsOn); err != nil || isNull(d) {
			bad(`"depends_on" must be a list of step ids`)
			s.DependsOn = nil
		}
	}
	if o, ok := m["on_error"]; ok {
		if err := unmarshalStr(o, &s.OnError); err != nil || (s.OnError != OnErrorFail && s.OnError != OnErrorSkip && s.OnError != OnErrorContinue) {
			bad(`"on_error" must be fail, skip or continue`)
		}
	}
	if r, ok := m["retries"]; ok {
		var f float64
		if err := json.Unmarshal(r, &f); err != nil || isNull(r) || f != float64(int(f)) || f < 0 || f > MaxRetries {
			bad(`"retries" must be a whole number from 0 to 5`)
		} else {
			s.Retries = int(f)
		}
	}
	if c, ok := m["if"]; ok {
		if err := unmarshalStr(c, &s.If); err != nil || isNull(c) {
			bad(`"if" must be a string`)
		} else if cond, err := ParseCond(s.If); err != nil {
			bad("%s", err.Error())
		} else {
			s.Cond = cond
			for _, r := range cond.Refs() {
				if r.Field != "output" && r.Field != "status" {
					bad("$%s.%s: a step's fields are output and status", r.Step, r.Field)
					continue
				}
				s.refs = append(s.refs, r)
			}
		}
	}
	if s.Kind == KindTool || s.Kind == KindCapsule {
		s.refs = append(s.refs, inputRefs(s.Input, s.Kind)...)
	}
	return s, errs
}

func (s *Step) checkTool(name string, rawName, input json.RawMessage, hasInput bool, cat *Catalog) Errors {
	var errs Errors
	if err := unmarshalStr(rawName, &s.Tool); err != nil || isNull(rawName) {
		errs = append(errs, fmt.Sprintf("%s: there is no tool named %s; a step may call %s", name, strings.TrimSpace(string(rawName)), orNone(cat.callable)))
	} else if e, ok := cat.byName[s.Tool]; !ok {
		errs = append(errs, fmt.Sprintf("%s: there is no tool named %q; a step may call %s", name, s.Tool, orNone(cat.callable)))
	} else {
		switch {
		case e.Name() == ToolName:
			errs = append(errs, name+": a plan cannot submit a plan")
		case e.Name() == "delegate-task":
			errs = append(errs, name+`: a plan delegates with a "capsule" step, not with delegate-task`)
		case e.Kind() == tools.KindShell:
			errs = append(errs, fmt.Sprintf(`%s: %s is a shell tool; run a command with a "shell" step`, name, s.Tool))
		default:
			s.Entry = e
		}
	}
	s.Input = json.RawMessage(`{}`)
	if hasInput {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(input, &obj); err != nil || obj == nil {
			errs = append(errs, name+`: a tool step's "input" must be a JSON object`)
		} else {
			s.Input = input
		}
	}
	return errs
}

func (s *Step) checkShell(name string, rawLine json.RawMessage, hasInput bool, cat *Catalog) Errors {
	var errs Errors
	if hasInput {
		errs = append(errs, name+`: a shell step takes no "input"; its command line is the "shell" value`)
	}
	if err := unmarshalStr(rawLine, &s.Shell); err != nil || isNull(rawLine) || strings.TrimSpace(s.Shell) == "" {
		return append(errs, name+`: the "shell" command line is empty`)
	}
	if len(s.Shell) >= tools.MaxCommandBytes || strings.IndexByte(s.Shell, 0) >= 0 {
		return append(errs, name+`: the "shell" command line must be under 1 MiB and hold no NUL byte`)
	}
	argv, err := tools.SplitCommand(s.Shell)
	if err != nil {
		return append(errs, name+`: the "shell" command line has an open quote or a final lone backslash`)
	}
	if len(argv) == 0 {
		return append(errs, name+`: the "shell" command line is empty`)
	}
	s.Argv = argv
	allowed := false
	for _, b := range cat.shellAllow {
		if b == argv[0] {
			allowed = true
		}
	}
	if !allowed {
		errs = append(errs, fmt.Sprintf("%s: %q is not in capabilities.shell.allow (%s)", name, argv[0], orNone(cat.shellAllow)))
	}
	return errs
}

func (s *Step) checkCapsule(name string, rawName, input json.RawMessage, hasInput bool) Errors {
	var errs Errors
	if err := unmarshalStr(rawName, &s.Capsule); err != nil || isNull(rawName) || !capsuleName(s.Capsule) {
		shown := s.Capsule
		if err != nil || isNull(rawName) {
			shown = strings.TrimSpace(string(rawName))
		}
		errs = append(errs, fmt.Sprintf(`%s: %q is not a capsule name: <scope>/<name> or a bare name, each part [a-z0-9][a-z0-9-]{0,62}`, name, shown))
	}
	var in map[string]json.RawMessage
	ok := hasInput && json.Unmarshal(input, &in) == nil && in != nil && len(in) == 2
	if ok {
		ok = unmarshalStr(in["version"], &s.Version) == nil && !isNull(in["version"]) &&
			unmarshalStr(in["task"], &s.Task) == nil && !isNull(in["task"])
	}
	if !ok {
		return append(errs, name+`: a capsule step's "input" must be {"version": string, "task": string}`)
	}
	s.Input = input
	switch s.Version {
	case "latest", "stable", "edge", "":
		errs = append(errs, name+`: "version" must be an exact version; latest, stable and edge resolve to nothing`)
	}
	return errs
}

var segRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`) })

func capsuleName(n string) bool {
	parts := strings.Split(n, "/")
	if len(parts) > 2 {
		return false
	}
	for _, p := range parts {
		if !segRe().MatchString(p) {
			return false
		}
	}
	return true
}

// Resolve gives a capsule step's full name: a bare name is the spawn.allow
// entry with that bare name, else local/<name>.
func (c *Catalog) resolveCapsule(s *Step) {
	if s.Kind != KindCapsule {
		return
	}
	if strings.Contains(s.Capsule, "/") {
		s.Bare = manifest.Bare(s.Capsule)
		return
	}
	s.Bare = s.Capsule
	for _, a := range c.spawnAllow {
		if manifest.Bare(a) == s.Capsule {
			s.Capsule = a
			return
		}
	}
	s.Capsule = "local/" + s.Bare
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// across are the checks across steps: depends_on targets, references'
// targets and order (depends on is transitive), and cycles.
func across(p *Plan) Errors {
	var errs Errors
	byID := map[string]*Step{}
	var steps []*Step // those with a valid id: the others were reported
	for _, s := range p.Steps {
		if s.ID != "" {
			byID[s.ID] = s
			steps = append(steps, s)
		}
	}
	for _, s := range steps {
		for _, d := range s.DependsOn {
			if byID[d] == nil {
				errs = append(errs, fmt.Sprintf("step %s: it depends on %q, which is not a step of this plan", s.ID, d))
			}
		}
	}
	// dependsOn reports whether s depends on target, transitively: a
	// search from s that stops once it finds it.
	seen := map[string]int{}
	visit := 0
	dependsOn := func(s *Step, target string) bool {
		visit++
		stack := append([]string(nil), s.DependsOn...)
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if x == target {
				return true
			}
			if seen[x] == visit || byID[x] == nil {
				continue
			}
			seen[x] = visit
			stack = append(stack, byID[x].DependsOn...)
		}
		return false
	}
	for _, s := range steps {
		var reported map[Ref]bool
		for _, r := range s.refs {
			key := Ref{Step: r.Step, Field: r.Field}
			if reported[key] {
				continue
			}
			if reported == nil {
				reported = map[Ref]bool{}
			}
			reported[key] = true
			switch {
			case byID[r.Step] == nil:
				errs = append(errs, fmt.Sprintf("step %s: $%s.%s names no step of this plan", s.ID, r.Step, r.Field))
			case !dependsOn(s, r.Step):
				errs = append(errs, fmt.Sprintf("step %s: it uses $%s.%s but does not depend on %s; add %q to its depends_on", s.ID, r.Step, r.Field, r.Step, r.Step))
			}
		}
	}
	errs = append(errs, cycles(steps, byID)...)
	return errs
}

// cycles finds the steps that depend on one another (Tarjan's strongly
// connected components), each cycle named by its steps in plan order.
func cycles(all []*Step, byID map[string]*Step) Errors {
	index := map[string]int{}
	low := map[string]int{}
	on := map[string]bool{}
	var stack []string
	var comps [][]string
	n := 0
	var visit func(id string)
	visit = func(id string) {
		index[id], low[id] = n, n
		n++
		stack = append(stack, id)
		on[id] = true
		for _, d := range byID[id].DependsOn {
			if byID[d] == nil {
				continue
			}
			if _, ok := index[d]; !ok {
				visit(d)
				low[id] = min(low[id], low[d])
			} else if on[d] {
				low[id] = min(low[id], index[d])
			}
		}
		if low[id] == index[id] {
			var comp []string
			for {
				x := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[x] = false
				comp = append(comp, x)
				if x == id {
					break
				}
			}
			comps = append(comps, comp)
		}
	}
	for _, s := range all {
		if _, ok := index[s.ID]; !ok {
			visit(s.ID)
		}
	}
	var errs Errors
	var found [][]*Step
	for _, c := range comps {
		self := len(c) == 1 && contains(byID[c[0]].DependsOn, c[0])
		if len(c) < 2 && !self {
			continue
		}
		steps := make([]*Step, 0, len(c))
		for _, id := range c {
			steps = append(steps, byID[id])
		}
		sort.Slice(steps, func(i, j int) bool { return steps[i].index < steps[j].index })
		found = append(found, steps)
	}
	sort.Slice(found, func(i, j int) bool { return found[i][0].index < found[j][0].index })
	for _, steps := range found {
		if len(steps) == 1 {
			errs = append(errs, fmt.Sprintf("step %s depends on itself in a cycle", steps[0].ID))
			continue
		}
		ids := make([]string, len(steps))
		for i, s := range steps {
			ids[i] = s.ID
		}
		errs = append(errs, fmt.Sprintf("steps %s depend on one another in a cycle", strings.Join(ids, ", ")))
	}
	return errs
}

func contains(list []string, x string) bool {
	for _, v := range list {
		if v == x {
			return true
		}
	}
	return false
}

// unmarshalStr reads a JSON string. The bytes come from a document already
// decoded whole, so a string with no escape is its bytes between the
// quotes: the common case skips the decoder (validation's time is mostly
// decoding).
func unmarshalStr(raw json.RawMessage, dst *string) error {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw[1:n-1], '\\') < 0 && bytes.IndexByte(raw[1:n-1], '"') < 0 {
		*dst = string(raw[1 : n-1])
		return nil
	}
	return json.Unmarshal(raw, dst)
}
