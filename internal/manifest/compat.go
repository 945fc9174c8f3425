package manifest

// The published implementation's ways of saying what a tool is made of
// (issue 14 item 20; docs/manifest.md): `runtime: wasm|native`, `implementation`
// and `execution`. They are read here, checked against one another, and a
// native tool is recognised so that a launch can refuse it by name; parsing
// never refuses one, because a manifest that describes a native tool is
// valid even where it cannot run (a store may hold it, `mur list` shows it).

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/murmur-go/murmur/internal/diag"
)

// nativeMark is where a manifest said "native": the file, the dotted key and
// the key's position, so a refusal names what to change.
type nativeMark struct {
	file string
	key  string
	pos  Pos
	name string // the artifact's full name
}

// IsNative reports whether the manifest describes a native tool: one of
// `runtime: native`, `implementation: native` or `execution: native`.
func (m *Manifest) IsNative() bool { return m.native != nil }

// IsNative reports whether the entry was declared with `runtime: native`.
func (a Artifact) IsNative() bool { return a.native != nil }

// ExecutionKind is how the artifact is packaged: `execution` when declared
// (Parse has checked it fits), else static for a skill and an agent capsule,
// native for a native tool, and wasm for everything else.
func (m *Manifest) ExecutionKind() string {
	if m.Execution.Set {
		return m.Execution.V
	}
	return m.derivedExecution()
}

func (m *Manifest) derivedExecution() string {
	switch {
	case m.RuntimeKind() == RuntimeSkill, m.RuntimeKind() == RuntimeCapsule && m.IsAgent():
		return ExecutionStatic
	case m.native != nil:
		return ExecutionNative
	}
	return ExecutionWASM
}

// RefuseNative returns the E-MAN-029 refusal for a native tool, which this
// build cannot run (it runs WebAssembly components only), naming the key
// that made it native; nil for anything else. A launch calls it on each
// tool's own manifest before loading the tool's payload.
func (m *Manifest) RefuseNative() error { return m.native.refuse() }

// RefuseNative is the same refusal for a capsule's artifacts[] entry
// declared `runtime: native`.
func (a Artifact) RefuseNative() error { return a.native.refuse() }

func (n *nativeMark) refuse() error {
	if n == nil {
		return nil
	}
	pos := n.pos
	if pos.Line < 1 || pos.Column < 1 {
		pos = Pos{Line: 1, Column: 1}
	}
	return diag.New("E-MAN-029", "%s:%d:%d: %s: native: %s is a native tool, which this build of mur cannot run (it runs WebAssembly components only)",
		n.file, pos.Line, pos.Column, n.key, n.name).
		WithHint("rebuild the tool as a WebAssembly component (runtime: tool, or the published spelling runtime: wasm), or give the capsule the host binary through capabilities.shell.allow")
}

// readRuntime reads a `runtime` value, top level (top) or of an artifacts[]
// entry, accepting the published spellings wasm and native as a tool.
// It returns the runtime kind and the text as written.
func (p *parser) readRuntime(v *yaml.Node, kp string, top bool) (Opt[string], string) {
	allowed := []string{RuntimeTool, RuntimeDriver, RuntimeHook, RuntimeSkill, RuntimeWASM, RuntimeNative}
	if top {
		allowed = append([]string{RuntimeCapsule}, allowed...)
	} else {
		allowed = append(allowed, RuntimeMCP)
	}
	rt := p.enum(v, kp, allowed...)
	if !rt.Set {
		return rt, ""
	}
	p.valPos[kp] = posOf(deref(v))
	if rt.V == RuntimeWASM || rt.V == RuntimeNative {
		return Some(RuntimeTool), rt.V
	}
	return rt, rt.V
}

// implementationChecks relates runtime, implementation and execution once
// the whole file is read, and records which key (if any) makes the manifest
// a native tool. Each contradiction is an E-MAN-028 at the later key's value.
func (p *parser) implementationChecks() {
	m := p.m
	type said struct{ key, val string }
	var impl []said // what each key says about wasm vs native, in file order
	if m.DeclaredRuntime == RuntimeWASM || m.DeclaredRuntime == RuntimeNative {
		impl = append(impl, said{"runtime", m.DeclaredRuntime})
	}
	if m.Implementation.Set {
		impl = append(impl, said{"implementation", m.Implementation.V})
	}
	if m.Execution.Set && m.Execution.V != ExecutionStatic {
		impl = append(impl, said{"execution", m.Execution.V})
	}
	for i := 1; i < len(impl); i++ {
		if impl[i].val != impl[0].val {
			p.failAt(p.valPos[impl[i].key], "E-MAN-028", "%s: %s contradicts %s: %s", impl[i].key, impl[i].val, impl[0].key, impl[0].val).
				WithHint("say wasm or native in one place; runtime: tool with implementation: wasm|native is enough")
			return
		}
	}
	kind := m.RuntimeKind()
	for _, s := range impl {
		if s.val != ImplementationNative {
			continue
		}
		if kind != RuntimeTool {
			p.failAt(p.valPos[s.key], "E-MAN-028", "%s: native: only a tool may be native (runtime: %s)", s.key, kind).
				WithHint("remove %s, or make the artifact a tool", s.key)
			return
		}
		m.native = &nativeMark{file: p.file, key: s.key, pos: m.PosOf(s.key), name: m.Name}
		break
	}
	if !m.Execution.Set {
		return
	}
	got, want := m.Execution.V, m.derivedExecution()
	var fits bool
	var what string
	switch kind {
	case RuntimeTool:
		fits, what = got != ExecutionStatic, "a tool is packaged as wasm or native"
	case RuntimeSkill:
		fits, what = got == ExecutionStatic, "a skill is packaged as static"
	case RuntimeCapsule:
		// An agent capsule is manifest-only; a published manifest may still
		// call it wasm, which describes no payload this build would miss.
		if m.IsAgent() {
			fits, what = got != ExecutionNative, "an agent capsule is packaged as static"
		} else {
			fits, what = got == ExecutionWASM, "a script capsule is packaged as wasm"
		}
	default:
		fits, what = got == want, fmt.Sprintf("a %s is packaged as %s", kind, want)
	}
	if !fits {
		p.failAt(p.valPos["execution"], "E-MAN-028", "execution: %s does not fit runtime: %s: %s", got, orDeclared(m.DeclaredRuntime, kind), what).
			WithHint("remove execution: (it is derived from runtime:), or write the value that fits")
	}
}

func orDeclared(declared, kind string) string {
	if declared != "" {
		return declared
	}
	return kind
}
