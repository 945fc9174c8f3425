package wasmhost

// Bounding a wasi:http fields value before it is lifted.
//
// wasmtime 39's C API hands a host function its arguments already lifted,
// and it lifts a list<u8> element by element (a Rust Val and then a 32-byte
// C value per byte): a 64 MiB header value cost ~5 GB before the host could
// refuse it. The three fields functions that take values from the guest —
// [method]fields.append, [method]fields.set and [static]fields.from-list —
// take them as lists. Their list parameter has the same canonical ABI as two
// u32 (the list's pointer and length in the guest's memory), so before
// compiling, every function type the component declares for them (in any
// instance type, at any depth) gets the list replaced by two u32 params: the
// guest's code, which calls the lowered function with (ptr, len), is
// untouched, and wasmtime hands the host the pointer and length. The host
// then checks the length against the fields bound and reads the bytes from
// the guest's memory itself (fieldsmem.go), so nothing past the bound is ever
// copied. A component whose declaration this rewrite cannot reach (a
// function type named through an outer alias, say) keeps the list type and
// is refused at instantiation rather than run unbounded (checkFieldsABI).

import (
	"encoding/binary"
	"errors"
	"strings"

	"github.com/murmur-go/murmur/internal/diag"
)

// fieldsListParams names each bounded function and the position of its list
// parameter.
var fieldsListParams = map[string]int{
	"[method]fields.append":    2, // self, name, value: field-value
	"[method]fields.set":       2, // self, name, value: list<field-value>
	"[static]fields.from-list": 0, // entries: list<tuple<field-name, field-value>>
}

// isHTTPTypes tells whether an import or export name is wasi:http/types at a
// 0.2 version.
func isHTTPTypes(name string) bool {
	return strings.HasPrefix(name, "wasi:http/types@0.2.") || name == "wasi:http/types"
}

var errFieldsABI = errors.New("wasmhost: component type not understood")

// boundFieldsABI returns the component with the list parameter of every
// fields function type it declares replaced by (ptr, len: u32), or wasm
// itself when there is none or it cannot be read (checkFieldsABI then
// decides whether it may run).
func boundFieldsABI(wasm []byte) []byte {
	if len(wasm) < 8 || wasm[4] != 0x0d {
		return wasm
	}
	out, changed, err := fieldsComponent(wasm)
	if err != nil || !changed {
		return wasm
	}
	return out
}

// fieldsComponent rewrites the type sections (7) of a component and of its
// nested components (4).
func fieldsComponent(b []byte) ([]byte, bool, error) {
	return rewriteTypeSections(b, fieldsTypeSection)
}

// rewriteTypeSections applies fix to every type section (7) of a component
// and of its nested components (4), returning the component with the
// sections fix changed.
func rewriteTypeSections(b []byte, fix func([]byte) ([]byte, bool, error)) ([]byte, bool, error) {
	secs, err := readSections(b)
	if err != nil {
		return nil, false, err
	}
	changed := false
	for k, s := range secs {
		var body []byte
		var ch bool
		switch s.id {
		case 7:
			body, ch, err = fix(s.body)
		case 4:
			body, ch, err = rewriteTypeSections(s.body, fix)
		}
		if err != nil {
			return nil, false, err
		}
		if ch {
			secs[k].body, changed = body, true
		}
	}
	if !changed {
		return b, false, nil
	}
	return writeSections(b[:8], secs), true, nil
}

// cr reads the component binary format.
type cr struct {
	b   []byte
	pos int
	err error
}

func (r *cr) byte() byte {
	if r.err != nil || r.pos >= len(r.b) {
		r.err = errFieldsABI
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *cr) u32() uint32 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.pos:])
	if n <= 0 || v > 1<<32-1 {
		r.err = errFieldsABI
		return 0
	}
	r.pos += n
	return uint32(v)
}

func (r *cr) name() string {
	n := int(r.u32())
	if r.err != nil || n > len(r.b)-r.pos {
		r.err = errFieldsABI
		return ""
	}
	s := string(r.b[r.pos : r.pos+n])
	r.pos += n
	return s
}

// externName reads an importname' or exportname': 0x00 name, or 0x01 name
// and a version suffix.
func (r *cr) externName() string {
	switch r.byte() {
	case 0x00:
		return r.name()
	case 0x01:
		n := r.name()
		r.name()
		return n
	}
	r.err = errFieldsABI
	return ""
}

// valtype skips a valtype: a primitive (one byte 0x40–0x7f) or a type index
// (an s33 LEB).
func (r *cr) valtype() {
	if r.err != nil || r.pos >= len(r.b) {
		r.err = errFieldsABI
		return
	}
	if c := r.b[r.pos]; c >= 0x40 && c < 0x80 {
		r.pos++
		return
	}
	r.u32()
}

func (r *cr) optValtype() {
	switch r.byte() {
	case 0x00:
	case 0x01:
		r.valtype()
	default:
		r.err = errFieldsABI
	}
}

// deftype skips one type definition; each instance or component type met
// is rewritten through fix, which returns its new bytes (nil: unchanged).
func (r *cr) deftype(fix func(kind byte, decls []byte) ([]byte, error)) []byte {
	start := r.pos
	c := r.byte()
	switch {
	case c == 0x40 || c == 0x43: // func type (0x43: async)
		r.funcType()
	case c == 0x41 || c == 0x42: // component or instance type
		declStart := r.pos
		n := r.u32()
		for i := uint32(0); i < n && r.err == nil; i++ {
			r.decl(c)
		}
		if r.err != nil {
			return nil
		}
		nb, err := fix(c, r.b[declStart:r.pos])
		if err != nil {
			r.err = err
			return nil
		}
		if nb != nil {
			return append([]byte{c}, nb...)
		}
	case c == 0x3f: // resource: rep i32, optional destructor
		r.byte()
		if r.byte() == 0x01 {
			r.u32()
		}
	default:
		r.pos = start
		r.defvaltype()
	}
	return nil
}

func (r *cr) funcType() {
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.name()
		r.valtype()
	}
	switch r.byte() {
	case 0x00:
		r.valtype()
	case 0x01:
		if r.byte() != 0x00 {
			r.err = errFieldsABI
		}
	default:
		r.err = errFieldsABI
	}
}

func (r *cr) defvaltype() {
	c := r.byte()
	switch {
	case c == 0x64 || (c >= 0x73 && c <= 0x7f): // primitive
	case c == 0x72: // record
		n := r.u32()
		for i := uint32(0); i < n && r.err == nil; i++ {
			r.name()
			r.valtype()
		}
	case c == 0x71: // variant
		n := r.u32()
		for i := uint32(0); i < n && r.err == nil; i++ {
			r.name()
			r.optValtype()
			if r.byte() != 0x00 {
				r.err = errFieldsABI
			}
		}
	case c == 0x70, c == 0x6b: // list, option
		r.valtype()
	case c == 0x67: // fixed-size list
		r.valtype()
		r.u32()
	case c == 0x6f: // tuple
		n := r.u32()
		for i := uint32(0); i < n && r.err == nil; i++ {
			r.valtype()
		}
	case c == 0x6e, c == 0x6d: // flags, enum
		n := r.u32()
		for i := uint32(0); i < n && r.err == nil; i++ {
			r.name()
		}
	case c == 0x6a: // result
		r.optValtype()
		r.optValtype()
	case c == 0x69, c == 0x68: // own, borrow
		r.u32()
	case c == 0x66, c == 0x65: // stream, future
		r.optValtype()
	default:
		r.err = errFieldsABI
	}
}

// decl skips one declaration of a component (0x41) or instance (0x42) type.
func (r *cr) decl(kind byte) {
	switch c := r.byte(); {
	case c == 0x00: // core type: not read (the rewrite gives up)
		r.err = errFieldsABI
	case c == 0x01:
		r.deftype(nestedFix)
	case c == 0x02:
		r.alias()
	case c == 0x03 && kind == 0x41, c == 0x04: // import (component types), export
		r.externName()
		r.externDesc()
	default:
		r.err = errFieldsABI
	}
}

// nestedFix rewrites instance and component types nested in a declaration.
func nestedFix(kind byte, decls []byte) ([]byte, error) { return fixDecls(kind, decls) }

func (r *cr) alias() {
	if r.byte() == 0x00 { // core sort
		r.byte()
	}
	switch r.byte() {
	case 0x00, 0x01: // export, core export
		r.u32()
		r.name()
	case 0x02: // outer
		r.u32()
		r.u32()
	default:
		r.err = errFieldsABI
	}
}

// externDesc reads an externdesc and returns its kind and, for a func, its
// type index.
func (r *cr) externDesc() (kind byte, idx uint32) {
	kind = r.byte()
	switch kind {
	case 0x00: // core module
		r.byte()
		idx = r.u32()
	case 0x01, 0x04, 0x05: // func, component, instance
		idx = r.u32()
	case 0x02: // value
		if r.byte() == 0x00 {
			r.u32()
		} else {
			r.valtype()
		}
	case 0x03: // type
		if r.byte() == 0x00 {
			r.u32()
		}
	default:
		r.err = errFieldsABI
	}
	return kind, idx
}

// fieldsTypeSection rewrites a type section's instance and component types.
func fieldsTypeSection(b []byte) ([]byte, bool, error) {
	r := &cr{b: b}
	n := r.u32()
	out := binary.AppendUvarint(nil, uint64(n))
	changed := false
	for i := uint32(0); i < n && r.err == nil; i++ {
		start := r.pos
		nb := r.deftype(fixDecls)
		if r.err != nil {
			break
		}
		if nb != nil {
			out, changed = append(out, nb...), true
		} else {
			out = append(out, b[start:r.pos]...)
		}
	}
	if r.err != nil {
		return nil, false, r.err
	}
	if r.pos != len(b) {
		return nil, false, errFieldsABI
	}
	return out, changed, nil
}

// fixDecls rewrites the declarations of one instance or component type:
// nested types first, then, in an instance type, each func type an export
// named after a bounded fields function refers to (when the type is one of
// its own declarations). It returns the new vec, or nil when unchanged.
func fixDecls(kind byte, decls []byte) ([]byte, error) {
	r := &cr{b: decls}
	n := r.u32()
	type entry struct{ start, end int }
	var ents []entry
	var repl [][]byte            // rewritten bytes of an entry, nil: as it is
	typeDecl := map[uint32]int{} // type index → the decl that defines it (a func type)
	var types uint32
	bounded := map[int]int{} // decl index → list param position
	for i := uint32(0); i < n && r.err == nil; i++ {
		start := r.pos
		var nb []byte
		switch c := r.byte(); {
		case c == 0x00:
			r.err = errFieldsABI
		case c == 0x01:
			if r.pos < len(decls) && (decls[r.pos] == 0x40 || decls[r.pos] == 0x43) {
				typeDecl[types] = len(ents)
			}
			if inner := r.deftype(nestedFix); inner != nil {
				nb = append([]byte{0x01}, inner...)
			}
			types++
		case c == 0x02:
			aStart := r.pos
			r.alias()
			if r.err == nil && (decls[aStart] == 0x03) {
				types++
			}
		case c == 0x03 && kind == 0x41, c == 0x04:
			name := r.externName()
			k, idx := r.externDesc()
			if k == 0x03 {
				types++
			}
			if pos, ok := fieldsListParams[name]; ok && k == 0x01 && kind == 0x42 {
				if d, ok := typeDecl[idx]; ok {
					bounded[d] = pos
				}
			}
		default:
			r.err = errFieldsABI
		}
		ents = append(ents, entry{start, r.pos})
		repl = append(repl, nb)
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.pos != len(decls) {
		return nil, errFieldsABI
	}
	for d, pos := range bounded {
		e := ents[d]
		nb, err := splitListParam(decls[e.start:e.end], pos)
		if err != nil {
			return nil, err
		}
		repl[d] = nb
	}
	changed := false
	for _, x := range repl {
		changed = changed || x != nil
	}
	if !changed {
		return nil, nil
	}
	out := binary.AppendUvarint(nil, uint64(n))
	for i, e := range ents {
		if repl[i] != nil {
			out = append(out, repl[i]...)
		} else {
			out = append(out, decls[e.start:e.end]...)
		}
	}
	return out, nil
}

// splitListParam rewrites one type declaration (0x01, a func type) with its
// param at pos, a type index, replaced by two u32 params named <name>-ptr
// and <name>-len; nil when that param is already a primitive (the type is
// not what the name promises: the instantiation check decides).
func splitListParam(decl []byte, pos int) ([]byte, error) {
	r := &cr{b: decl}
	r.byte() // 0x01
	kindPos := r.pos
	r.byte() // 0x40 / 0x43
	n := r.u32()
	if r.err != nil || int(n) <= pos {
		return nil, errFieldsABI
	}
	var params []byte
	split := false
	for i := uint32(0); i < n; i++ {
		pStart := r.pos
		name := r.name()
		vStart := r.pos
		r.valtype()
		if r.err != nil {
			return nil, r.err
		}
		if int(i) != pos || (decl[vStart] >= 0x40 && decl[vStart] < 0x80) {
			params = append(params, decl[pStart:r.pos]...)
			continue
		}
		split = true
		for _, p := range []string{name + "-ptr", name + "-len"} {
			params = binary.AppendUvarint(params, uint64(len(p)))
			params = append(params, p...)
			params = append(params, 0x79) // u32
		}
	}
	if !split {
		return nil, nil
	}
	out := append([]byte{}, decl[:kindPos+1]...)
	out = binary.AppendUvarint(out, uint64(n+1))
	out = append(out, params...)
	return append(out, decl[r.pos:]...), nil
}

// checkFieldsABI refuses a component whose wasi:http/types import still
// takes a fields value as a list (the rewrite could not reach its
// declaration): its values would be lifted, whole, before any bound.
func checkFieldsABI(imports []Item) error {
	for _, it := range imports {
		if it.Kind != ItemInstance || !isHTTPTypes(it.Name) {
			continue
		}
		for _, e := range it.Exports {
			pos, ok := fieldsListParams[e.Name]
			if !ok || e.Kind != ItemFunc || e.Func == nil {
				continue
			}
			ps := e.Func.Params
			if len(ps) < pos+2 || ps[pos].Type == nil || ps[pos].Type.Kind != KindU32 || ps[pos+1].Type == nil || ps[pos+1].Type.Kind != KindU32 {
				return diag.New("E-RUN-195", "cannot use the component: its import %s#%s takes the value as a list the host cannot bound before wasmtime copies it, and its declaration could not be rewritten", it.Name, e.Name).
					WithHint("build the component with a standard toolchain (wit-component, jco, wasm-tools): its wasi:http types are then declared where the host can bound them")
			}
		}
	}
	return nil
}
