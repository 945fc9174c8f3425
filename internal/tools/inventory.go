// Package tools is a session's tool inventory and the one place a tool is
// called: the tools a script capsule invokes through murmur:tool-registry
// and the model of an agent capsule calls. It is built once, at launch,
// from the plan's resolved artifacts — nothing is resolved again on a call
// — and every kind of tool (WASM tool components, skills, shell tools,
// runtime tools such as delegate-task) is an Entry with its own Call.
//
// A caller finds a tool by its full name, or by its bare name when that is
// unambiguous. Every call goes through Inventory.Call, which asks the
// policy gate about a model's call, runs the entry's Call, writes the
// call's one trace line and fires its hooks; what a script or the model
// sees of it is the caller's thin adapter.
//
// The policy gate (gate.go, docs/policy.md) stands in front of every entry
// whatever its kind: the entry's own input checks (an entry that is a
// Checker), then the policy hooks (GateConfig.Policy), then the operator
// for a tool marked approval: required. A stopped call runs nothing and
// writes one call_denied line. Code that makes a call that is no entry's —
// a plan's capsule step, gated as delegate-task — asks the same gate with
// Inventory.Gate(ctx, task, GateRequest{…}) and runs nothing when it
// answers a *Stopped. With no policy hook and no approval key the gate asks
// nothing.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/manifest"
)

// Kinds of tool (the agent tool_call line's kind).
const (
	KindWASM    = "wasm"
	KindSkill   = "skill"
	KindRuntime = "runtime"
	KindShell   = "shell"
)

// Entry is one tool of the inventory.
type Entry interface {
	// Name is the tool's full name (scope/name), or a runtime tool's own
	// name (delegate-task).
	Name() string
	// Kind is KindWASM, KindSkill, KindRuntime or KindShell.
	Kind() string
	// Description is one line for the model and for MURMUR.md.
	Description() string
	// Schema is the tool's input JSON Schema.
	Schema() json.RawMessage
	// Call runs one call of the tool. Only Inventory.Call calls it: that
	// is where the call's line is written and its hooks fire.
	Call(ctx context.Context, c *Call) Outcome
}

// DefaultSchema is the input schema of a tool that declares none.
var DefaultSchema = json.RawMessage(`{"type":"object"}`)

// Inventory is a session's tools, by name. It is read-only once built, so
// it is safe for concurrent use.
type Inventory struct {
	owner   string // the capsule's name, for messages
	entries []Entry
	byName  map[string]Entry
	gate    GateConfig
}

// NewInventory makes an empty inventory for the capsule named owner.
func NewInventory(owner string) *Inventory {
	return &Inventory{owner: owner, byName: map[string]Entry{}}
}

// Add registers e. Names are unique: a second entry of the same full name is
// a manifest error (the load refuses such a manifest first; this guards the
// inventory's own invariant).
func (inv *Inventory) Add(e Entry) error {
	if _, dup := inv.byName[e.Name()]; dup {
		return diag.New("E-MAN-009", "%s declares the tool %s twice: tool names must be unique", inv.owner, e.Name()).
			WithHint("keep one artifacts: entry for it")
	}
	inv.entries = append(inv.entries, e)
	inv.byName[e.Name()] = e
	return nil
}

// Entries lists the tools in the order they were added (manifest order).
func (inv *Inventory) Entries() []Entry { return append([]Entry(nil), inv.entries...) }

// Close releases what the entries hold (compiled components). The
// inventory's owner calls it once no call is running.
func (inv *Inventory) Close() {
	for _, e := range inv.entries {
		if c, ok := e.(interface{ Close() }); ok {
			c.Close()
		}
	}
}

// Len is the number of tools.
func (inv *Inventory) Len() int { return len(inv.entries) }

// Lookup finds a tool by its full name, else by its bare name; a bare name
// two tools share is refused as ambiguous rather than guessed. The error is
// E-RUN-062, saying which tools there are.
func (inv *Inventory) Lookup(name string) (Entry, error) {
	if e, ok := inv.byName[name]; ok {
		return e, nil
	}
	var found []Entry
	if !strings.Contains(name, "/") {
		for _, e := range inv.entries {
			if manifest.Bare(e.Name()) == name {
				found = append(found, e)
			}
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, diag.New("E-RUN-062", "tool %q is not declared: the tools %s declares under artifacts: are %s", Clip(name), inv.owner, strings.Join(inv.names(), ", ")).
			WithHint("declare it under artifacts: (runtime: tool) in murmur.yaml, or invoke a declared tool by its full or bare name")
	}
	names := make([]string, 0, len(found))
	for _, e := range found {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return nil, diag.New("E-RUN-062", "tool %q is ambiguous: %s all declare it", Clip(name), strings.Join(names, ", ")).
		WithHint("invoke it by its full name")
}

func (inv *Inventory) names() []string {
	if len(inv.entries) == 0 {
		return []string{"(none declared)"}
	}
	out := make([]string, 0, len(inv.entries))
	for _, e := range inv.entries {
		out = append(out, e.Name())
	}
	return out
}

// Clip shortens a guest-supplied string for messages and trace lines: a
// capsule cannot make its own trace lines arbitrarily long through a name.
func Clip(s string) string {
	const max = 256
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}

// ref is name@version for messages.
func ref(a manifest.Artifact) string { return fmt.Sprintf("%s@%s", a.Name, a.Version) }
