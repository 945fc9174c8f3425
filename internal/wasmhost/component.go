package wasmhost

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/murmur-go/murmur/internal/diag"
)

// Component is a compiled component. It is immutable and safe for concurrent
// use: every run makes its own Instance from it. Close it when no instance
// is left.
type Component struct {
	eng       *Engine
	c         *C.wasmtime_component_t
	FromCache bool // loaded from the on-disk cache rather than compiled

	imports, exports []Item

	importKey string // the imports, printed: selects the shared linker
	// mayBlock: some import can block inside wasmtime's native code where
	// neither the epoch nor a context reaches (see blockingImports), so its
	// instantiations and calls run under the watchdog.
	mayBlock bool
	// importsFS, importsStdout, importsStderr: what of a run's WASI
	// context the guest can reach. Preopens are opened (by path: the C API
	// has no other way) and open output files duplicated only for a
	// component that can use them.
	importsFS, importsStdout, importsStderr bool
	// toolRuns are the "iface#fn" keys of the tool runs whose results are
	// read from the guest's memory (resultabi.go).
	toolRuns map[string]bool

	// imgFDs are the descriptors its memory images are mapped from (sealed
	// memfds, or its cache entry's .img file: image.go), bound to c in
	// shim.c's registry until free.
	imgFDs []C.int

	mu      sync.Mutex
	closed  bool // Close was called: no new instances
	refs    int  // open instances made from it: they keep it allocated
	freed   bool
	funcIdx map[string]*exportFunc
}

// ItemKind is the kind of an import or export.
type ItemKind string

// Item kinds.
const (
	ItemInstance  ItemKind = "instance"
	ItemFunc      ItemKind = "func"
	ItemResource  ItemKind = "resource"
	ItemType      ItemKind = "type"
	ItemModule    ItemKind = "module"
	ItemComponent ItemKind = "component"
	ItemCoreFunc  ItemKind = "core-func"
)

// Item is one import or export of a component (or one export of an
// instance), with its WIT type.
type Item struct {
	Name    string
	Kind    ItemKind
	Func    *FuncType // ItemFunc
	Type    *Type     // ItemType
	Exports []Item    // ItemInstance
	// Alias marks a resource export that is an earlier resource re-exported
	// (WIT `use`), not a resource of its own.
	Alias bool
}

// String prints the item WIT-like, one line per member for instances, with
// every type spelled out structurally (wasmtime's types carry no names): the
// full shape, e.g. for diagnostics comparing what a component expects.
func (it Item) String() string {
	var b strings.Builder
	it.write(&b, "", nil, false)
	return strings.TrimRight(b.String(), "\n")
}

// WIT prints the item like String, but inside an instance a type equal to one
// of the instance's own type exports is printed by that name, as in the WIT
// source (`invoke: func(name: string, input: tool-input) -> result<tool-result, string>`).
func (it Item) WIT() string {
	var b strings.Builder
	it.write(&b, "", nil, true)
	return strings.TrimRight(b.String(), "\n")
}

func (it Item) write(b *strings.Builder, indent string, names map[string]string, named bool) {
	switch it.Kind {
	case ItemInstance:
		var inner map[string]string
		if named {
			inner = map[string]string{}
			for _, e := range it.Exports {
				if e.Kind == ItemType && e.Type != nil {
					if _, dup := inner[e.Type.String()]; !dup {
						inner[e.Type.String()] = e.Name
					}
				}
			}
		}
		fmt.Fprintf(b, "%s%s: instance {\n", indent, it.Name)
		for _, e := range it.Exports {
			e.write(b, indent+"  ", inner, named)
		}
		fmt.Fprintf(b, "%s}\n", indent)
	case ItemFunc:
		fmt.Fprintf(b, "%s%s: ", indent, it.Name)
		it.Func.writeN(b, names)
		b.WriteString("\n")
	case ItemType:
		fmt.Fprintf(b, "%stype %s = ", indent, it.Name)
		it.Type.writeN(b, names, true)
		b.WriteString("\n")
	case ItemResource:
		if it.Alias {
			fmt.Fprintf(b, "%sresource %s (re-exported)\n", indent, it.Name)
		} else {
			fmt.Fprintf(b, "%sresource %s\n", indent, it.Name)
		}
	default:
		fmt.Fprintf(b, "%s%s: %s\n", indent, it.Name, it.Kind)
	}
}

// Imports lists what the component imports, in order.
func (c *Component) Imports() []Item { return c.imports }

// Exports lists what the component exports, in order.
func (c *Component) Exports() []Item { return c.exports }

// Compile compiles a component (binary, or WAT text) or loads it from the
// on-disk cache, naming the cache entry by the SHA-256 of wasm. Hostile
// input — truncated, random, a core module — is an error, never an abort.
func (e *Engine) Compile(wasm []byte) (*Component, error) {
	return e.CompileWith(wasm, CompileOptions{})
}

// CompileOptions says what a caller already knows about a component's bytes.
type CompileOptions struct {
	// Name is what Config.OnCompile reports ("echo-tool@0.1.0"); "" reports
	// "component".
	Name string
	// Digest identifies wasm's bytes for the compile cache, so they are not
	// hashed again: a hash the caller computed over exactly these bytes, or
	// over a container it verified them in (internal/store's resolve:
	// "<zip SHA-256>/<entry>"). The caller vouches for it: the same digest
	// for other bytes would load the other bytes' compiled code. "" hashes
	// wasm.
	Digest string
}

// CompileWith is Compile with what the caller knows about the bytes (see
// CompileOptions). Config.OnCompile is called before a Cranelift compile,
// never for a cache hit.
func (e *Engine) CompileWith(wasm []byte, o CompileOptions) (*Component, error) {
	return e.compile(wasm, o, true)
}

// compile is CompileWith; notify says whether OnCompile hears of it (the
// engine's own helpers are not the caller's news).
func (e *Engine) compile(wasm []byte, o CompileOptions, notify bool) (*Component, error) {
	return e.compileLookup(wasm, o, notify, true)
}

// CompileDigest is CompileWith for a caller that names the bytes by
// o.Digest (which it vouches for, as with CompileWith) and would rather not
// read them: on a compile-cache hit load is never called and the entry is
// loaded by its name alone; on a miss (or with no cache, or no digest) load
// gives the bytes and they are compiled as CompileWith does.
func (e *Engine) CompileDigest(o CompileOptions, load func() ([]byte, error)) (*Component, error) {
	if o.Digest != "" && e.cacheDir != "" {
		if c, hit, err := e.compileCached(o.Digest); hit {
			return c, err
		}
	}
	wasm, err := load()
	if err != nil {
		return nil, err
	}
	return e.compileLookup(wasm, o, true, false)
}

// Precompiled tells whether the compile cache holds an entry for the bytes
// digest names that verifies (CompileDigest would load it, not compile).
func (e *Engine) Precompiled(digest string) bool {
	if digest == "" || e.cacheDir == "" {
		return false
	}
	c, hit, err := e.compileCached(digest)
	if c != nil {
		c.Close()
	}
	return hit && err == nil
}

// compileCached loads the cache entry digest names; hit is false when there
// is none that verifies.
func (e *Engine) compileCached(digest string) (c *Component, hit bool, err error) {
	if err := e.enter(); err != nil {
		return nil, true, err
	}
	defer e.leave()
	out, ci := e.cacheLoad(cacheName(sourceID(nil, digest)))
	if out == nil {
		return nil, false, nil
	}
	if ci == nil {
		c, err = e.newComponent(out, true, nil, nil, nil)
		return c, true, err
	}
	defer ci.close() // bindImages keeps its own descriptor
	c, err = e.newComponent(out, true, ci.imgs, ci.file, ci.id)
	return c, true, err
}

// compileLookup is compile; lookup false skips the cache lookup a caller
// already made (the entry is still written after the compile).
func (e *Engine) compileLookup(wasm []byte, o CompileOptions, notify, lookup bool) (*Component, error) {
	if len(wasm) == 0 {
		return nil, diag.New("E-RUN-100", "cannot compile component: it is empty").
			WithHint("rebuild the component; a WebAssembly component starts with \\0asm")
	}
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.leave()
	if bytes.HasPrefix(wasm, []byte("\x00asm")) && len(wasm) >= 8 && wasm[4] == 1 && wasm[5] == 0 {
		// Core module version 1 (a component has version 0x0d, layer 1).
		return nil, diag.New("E-RUN-100", "cannot compile component: this is a core WebAssembly module, not a component").
			WithHint("wrap it into a component (e.g. `jco new module.wasm --wasi-reactor -o component.wasm`)")
	}
	var name string
	if e.cacheDir != "" {
		name = cacheName(sourceID(wasm, o.Digest))
		if !lookup {
		} else if out, ci := e.cacheLoad(name); out != nil {
			if ci == nil {
				return e.newComponent(out, true, nil, nil, nil)
			}
			defer ci.close() // bindImages keeps its own descriptor
			return e.newComponent(out, true, ci.imgs, ci.file, ci.id)
		}
	}
	if notify && e.onCompile != nil {
		what := o.Name
		if what == "" {
			what = "component"
		}
		e.onCompile(what)
	}
	var out *C.wasmtime_component_t
	if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		// WAT (tests, helpers): the rewrites below read the binary.
		if bin, err := parseWAT(wasm); err == nil {
			wasm = bin
		}
	}
	wasm = boundFieldsABI(wasm)
	var imgs []memImage
	if rw := boundResultABI(wasm); rw != nil && !liftToolResults {
		// A tool run read from memory (resultabi.go); if the rewritten
		// declarations do not validate, the component is compiled as it is.
		src, rimgs := prepareData(rw)
		if err := C.wasmtime_component_new(e.e, (*C.uint8_t)(unsafe.Pointer(&src[0])), C.size_t(len(src)), &out); err != nil {
			C.wasmtime_error_delete(err)
			out = nil
		} else {
			imgs = rimgs
		}
	}
	if out == nil {
		var src []byte
		src, imgs = prepareData(wasm)
		if err := C.wasmtime_component_new(e.e, (*C.uint8_t)(unsafe.Pointer(&src[0])), C.size_t(len(src)), &out); err != nil {
			return nil, diag.New("E-RUN-100", "cannot compile component: %s", firstLine(errorText(err))).
				WithHint("check that the file is a WebAssembly component (not a core module) built for WASI 0.2")
		}
	}
	if name != "" {
		var ser C.wasm_byte_vec_t
		if err := C.wasmtime_component_serialize(out, &ser); err != nil {
			e.log.Warn("wasmhost: cannot serialize component for the cache", "error", errorText(err))
		} else {
			payload := C.GoBytes(unsafe.Pointer(ser.data), C.int(ser.size))
			C.wasm_byte_vec_delete(&ser)
			if err := e.cacheStore(name, payload, imgs); err != nil {
				e.log.Warn("wasmhost: cannot write the compiled cache", "dir", e.cacheDir, "error", err)
			}
		}
	}
	return e.newComponent(out, false, imgs, nil, nil)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// newComponent wraps a compiled component; imgs are its memory images (see
// bindImages for imgFile and imgID).
func (e *Engine) newComponent(cc *C.wasmtime_component_t, cached bool, imgs []memImage, imgFile *os.File, imgID []byte) (*Component, error) {
	fds, err := bindImages(cc, imgs, imgFile, imgID)
	if err != nil {
		C.wasmtime_component_delete(cc)
		return nil, diag.Wrap(err, "E-RUN-100", "cannot prepare the component's memory").
			WithHint("memfd_create and mmap must be available to this process")
	}
	c := &Component{eng: e, c: cc, FromCache: cached, funcIdx: map[string]*exportFunc{}, imgFDs: fds}
	w := &typeWalker{eng: e}
	defer w.free()
	ct := C.wasmtime_component_type(cc)
	defer C.wasmtime_component_type_delete(ct)
	n := C.wasmtime_component_type_import_count(ct, e.e)
	for i := C.size_t(0); i < n; i++ {
		var name *C.char
		var nlen C.size_t
		var item C.wasmtime_component_item_t
		if !C.wasmtime_component_type_import_nth(ct, e.e, i, &name, &nlen, &item) {
			continue
		}
		c.imports = append(c.imports, w.item(C.GoStringN(name, C.int(nlen)), &item))
		C.wasmtime_component_item_delete(&item)
	}
	n = C.wasmtime_component_type_export_count(ct, e.e)
	for i := C.size_t(0); i < n; i++ {
		var name *C.char
		var nlen C.size_t
		var item C.wasmtime_component_item_t
		if !C.wasmtime_component_type_export_nth(ct, e.e, i, &name, &nlen, &item) {
			continue
		}
		c.exports = append(c.exports, w.item(C.GoStringN(name, C.int(nlen)), &item))
		C.wasmtime_component_item_delete(&item)
	}
	c.toolRuns = declareToolRuns(c.exports)
	if err := checkFieldsABI(c.imports); err != nil {
		c.free()
		return nil, err
	}
	var key strings.Builder
	for _, it := range c.imports {
		it.write(&key, "", nil, false)
		if mayBlock(it.Name) {
			c.mayBlock = true
		}
		switch {
		case strings.HasPrefix(it.Name, "wasi:filesystem/"):
			c.importsFS = true
		case strings.HasPrefix(it.Name, "wasi:cli/stdout"):
			c.importsStdout = true
		case strings.HasPrefix(it.Name, "wasi:cli/stderr"):
			c.importsStderr = true
		}
	}
	c.importKey = key.String()
	return c, nil
}

// Close frees the component. New instances of it are refused (ErrClosed);
// instances already made keep working, and the component's memory is freed
// when the last of them is closed. It is safe to call twice.
func (c *Component) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.refs == 0 {
		c.free()
	}
	return nil
}

// acquire takes a reference for a new instance.
func (c *Component) acquire() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.refs++
	return nil
}

// release drops an instance's reference, freeing a closed component with
// the last one.
func (c *Component) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refs--
	if c.closed && c.refs == 0 {
		c.free()
	}
}

func (c *Component) free() {
	if c.freed {
		return
	}
	c.freed = true
	for _, f := range c.funcIdx {
		C.wasmtime_component_export_index_delete(f.idx)
	}
	unbindImages(c.c, c.imgFDs)
	C.wasmtime_component_delete(c.c)
}

// typeWalker turns wasmtime type objects into Items and Types, naming
// resources by the import/export they were introduced under.
type typeWalker struct {
	eng       *Engine
	resources []resEntry
	iface     string // the instance being walked ("" at top level)
}

type resEntry struct {
	name, key string
	t         *C.wasmtime_component_resource_type_t
}

func (w *typeWalker) free() {
	for _, r := range w.resources {
		C.wasmtime_component_resource_type_delete(r.t)
	}
}

func (w *typeWalker) resourceName(t *C.wasmtime_component_resource_type_t) (name, key string, ok bool) {
	for _, r := range w.resources {
		if C.wasmtime_component_resource_type_equal(r.t, t) {
			return r.name, r.key, true
		}
	}
	return "", "", false
}

func (w *typeWalker) item(name string, it *C.wasmtime_component_item_t) Item {
	p := unsafe.Pointer(&it.of)
	switch it.kind {
	case C.WASMTIME_COMPONENT_ITEM_COMPONENT_INSTANCE:
		ity := *(**C.wasmtime_component_instance_type_t)(p)
		out := Item{Name: name, Kind: ItemInstance}
		outer := w.iface
		w.iface = name
		defer func() { w.iface = outer }()
		n := C.wasmtime_component_instance_type_export_count(ity, w.eng.e)
		for i := C.size_t(0); i < n; i++ {
			var en *C.char
			var enl C.size_t
			var sub C.wasmtime_component_item_t
			if !C.wasmtime_component_instance_type_export_nth(ity, w.eng.e, i, &en, &enl, &sub) {
				continue
			}
			out.Exports = append(out.Exports, w.item(C.GoStringN(en, C.int(enl)), &sub))
			C.wasmtime_component_item_delete(&sub)
		}
		return out
	case C.WASMTIME_COMPONENT_ITEM_COMPONENT_FUNC:
		ft := *(**C.wasmtime_component_func_type_t)(p)
		return Item{Name: name, Kind: ItemFunc, Func: w.funcType(ft)}
	case C.WASMTIME_COMPONENT_ITEM_RESOURCE:
		rt := *(**C.wasmtime_component_resource_type_t)(p)
		if _, _, seen := w.resourceName(rt); seen {
			return Item{Name: name, Kind: ItemResource, Alias: true}
		}
		w.resources = append(w.resources, resEntry{name: name, key: w.iface + "#" + name,
			t: C.wasmtime_component_resource_type_clone(rt)})
		return Item{Name: name, Kind: ItemResource}
	case C.WASMTIME_COMPONENT_ITEM_TYPE:
		vt := (*C.wasmtime_component_valtype_t)(p)
		return Item{Name: name, Kind: ItemType, Type: w.valType(vt, 0)}
	case C.WASMTIME_COMPONENT_ITEM_MODULE:
		return Item{Name: name, Kind: ItemModule}
	case C.WASMTIME_COMPONENT_ITEM_COMPONENT:
		return Item{Name: name, Kind: ItemComponent}
	default:
		return Item{Name: name, Kind: ItemCoreFunc}
	}
}

func (w *typeWalker) funcType(ft *C.wasmtime_component_func_type_t) *FuncType {
	out := &FuncType{}
	n := C.wasmtime_component_func_type_param_count(ft)
	for i := C.size_t(0); i < n; i++ {
		var pn *C.char
		var pnl C.size_t
		var vt C.wasmtime_component_valtype_t
		if !C.wasmtime_component_func_type_param_nth(ft, i, &pn, &pnl, &vt) {
			continue
		}
		out.Params = append(out.Params, Param{Name: C.GoStringN(pn, C.int(pnl)), Type: w.valType(&vt, 0)})
		C.wasmtime_component_valtype_delete(&vt)
	}
	var rt C.wasmtime_component_valtype_t
	if C.wasmtime_component_func_type_result(ft, &rt) {
		out.Result = w.valType(&rt, 0)
		C.wasmtime_component_valtype_delete(&rt)
	}
	return out
}

func (w *typeWalker) valType(vt *C.wasmtime_component_valtype_t, depth int) *Type {
	k := Kind(vt.kind)
	t := &Type{Kind: k}
	if depth > maxDepth {
		return t
	}
	p := unsafe.Pointer(&vt.of)
	sub := func(f func(*C.wasmtime_component_valtype_t)) *Type {
		var x C.wasmtime_component_valtype_t
		f(&x)
		defer C.wasmtime_component_valtype_delete(&x)
		return w.valType(&x, depth+1)
	}
	switch k {
	case KindList:
		lt := *(**C.wasmtime_component_list_type_t)(p)
		t.Elem = sub(func(x *C.wasmtime_component_valtype_t) { C.wasmtime_component_list_type_element(lt, x) })
	case KindOption:
		ot := *(**C.wasmtime_component_option_type_t)(p)
		t.Elem = sub(func(x *C.wasmtime_component_valtype_t) { C.wasmtime_component_option_type_ty(ot, x) })
	case KindRecord:
		rt := *(**C.wasmtime_component_record_type_t)(p)
		n := C.wasmtime_component_record_type_field_count(rt)
		for i := C.size_t(0); i < n; i++ {
			var fn *C.char
			var fnl C.size_t
			var x C.wasmtime_component_valtype_t
			if C.wasmtime_component_record_type_field_nth(rt, i, &fn, &fnl, &x) {
				t.Fields = append(t.Fields, Field{Name: C.GoStringN(fn, C.int(fnl)), Type: w.valType(&x, depth+1)})
				C.wasmtime_component_valtype_delete(&x)
			}
		}
	case KindTuple:
		tt := *(**C.wasmtime_component_tuple_type_t)(p)
		n := C.wasmtime_component_tuple_type_types_count(tt)
		for i := C.size_t(0); i < n; i++ {
			var x C.wasmtime_component_valtype_t
			if C.wasmtime_component_tuple_type_types_nth(tt, i, &x) {
				t.Tuple = append(t.Tuple, w.valType(&x, depth+1))
				C.wasmtime_component_valtype_delete(&x)
			}
		}
	case KindVariant:
		vv := *(**C.wasmtime_component_variant_type_t)(p)
		n := C.wasmtime_component_variant_type_case_count(vv)
		for i := C.size_t(0); i < n; i++ {
			var cn *C.char
			var cnl C.size_t
			var has C.bool
			var x C.wasmtime_component_valtype_t
			if C.wasmtime_component_variant_type_case_nth(vv, i, &cn, &cnl, &has, &x) {
				c := Case{Name: C.GoStringN(cn, C.int(cnl))}
				if has {
					c.Type = w.valType(&x, depth+1)
					C.wasmtime_component_valtype_delete(&x)
				}
				t.Cases = append(t.Cases, c)
			}
		}
	case KindEnum:
		et := *(**C.wasmtime_component_enum_type_t)(p)
		n := C.wasmtime_component_enum_type_names_count(et)
		for i := C.size_t(0); i < n; i++ {
			var cn *C.char
			var cnl C.size_t
			if C.wasmtime_component_enum_type_names_nth(et, i, &cn, &cnl) {
				t.Names = append(t.Names, C.GoStringN(cn, C.int(cnl)))
			}
		}
	case KindFlags:
		ft := *(**C.wasmtime_component_flags_type_t)(p)
		n := C.wasmtime_component_flags_type_names_count(ft)
		for i := C.size_t(0); i < n; i++ {
			var cn *C.char
			var cnl C.size_t
			if C.wasmtime_component_flags_type_names_nth(ft, i, &cn, &cnl) {
				t.Names = append(t.Names, C.GoStringN(cn, C.int(cnl)))
			}
		}
	case KindResult:
		rt := *(**C.wasmtime_component_result_type_t)(p)
		var x C.wasmtime_component_valtype_t
		if C.wasmtime_component_result_type_ok(rt, &x) {
			t.Ok = w.valType(&x, depth+1)
			C.wasmtime_component_valtype_delete(&x)
		}
		if C.wasmtime_component_result_type_err(rt, &x) {
			t.Err = w.valType(&x, depth+1)
			C.wasmtime_component_valtype_delete(&x)
		}
	case KindOwn, KindBorrow:
		rt := *(**C.wasmtime_component_resource_type_t)(p)
		if name, key, ok := w.resourceName(rt); ok {
			t.Resource, t.resKey = name, key
		}
	case KindFuture, KindStream:
		// Payload types are not needed: such values are refused by Check.
	}
	return t
}

// exportFunc is a resolved exported function, cached per component.
type exportFunc struct {
	idx  *C.wasmtime_component_export_index_t
	typ  *FuncType
	name string
	// fromMemory: the call returns its result's address, read by the host
	// (resultabi.go); typ is the declared type.
	fromMemory bool
}

// exportFunc resolves "iface#fn" (iface "" for a top-level function).
func (c *Component) exportFunc(iface, fn string) (*exportFunc, error) {
	key := iface + "#" + fn
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.freed {
		return nil, ErrClosed
	}
	if f := c.funcIdx[key]; f != nil {
		return f, nil
	}
	var typ *FuncType
	for _, e := range c.exports {
		if iface == "" && e.Kind == ItemFunc && e.Name == fn {
			typ = e.Func
		}
		if iface != "" && e.Kind == ItemInstance && e.Name == iface {
			for _, x := range e.Exports {
				if x.Kind == ItemFunc && x.Name == fn {
					typ = x.Func
				}
			}
		}
	}
	if typ == nil {
		return nil, diag.New("E-RUN-103", "component does not export %s", key).
			WithHint("check the component's world: it must export the interface and function the runtime calls")
	}
	var parent *C.wasmtime_component_export_index_t
	if iface != "" {
		cs := C.CString(iface)
		parent = C.wasmtime_component_get_export_index(c.c, nil, cs, C.size_t(len(iface)))
		C.free(unsafe.Pointer(cs))
		if parent == nil {
			return nil, diag.New("E-RUN-103", "component does not export %s", iface)
		}
		defer C.wasmtime_component_export_index_delete(parent)
	}
	cs := C.CString(fn)
	idx := C.wasmtime_component_get_export_index(c.c, parent, cs, C.size_t(len(fn)))
	C.free(unsafe.Pointer(cs))
	if idx == nil {
		return nil, diag.New("E-RUN-103", "component does not export %s", key)
	}
	f := &exportFunc{idx: idx, typ: typ, name: key, fromMemory: c.toolRuns[key]}
	c.funcIdx[key] = f
	return f, nil
}

// mayBlock tells whether a guest can block without bound through the
// imported interface iface where neither the epoch nor a context reaches:
// the filesystem (opening or reading a FIFO, a hung mount in a preopen),
// wasi:http (its bodies are read through the spool helper's file streams),
// sockets (denied by the WASI context; listed so that a change there cannot
// leave them unwatched), and every interface answered by Go host functions,
// which may ignore their context (TestHostFuncIgnoringItsContext). The rest
// of WASI as configured cannot: stdin is bytes, stdout and stderr are the
// caller's files or discarded, clock waits are capped by the shadowed
// monotonic clock, and the only pollables a guest can get otherwise are
// those.
func mayBlock(iface string) bool {
	if !strings.HasPrefix(iface, "wasi:") {
		return true
	}
	for _, p := range []string{"wasi:filesystem/", "wasi:http/", "wasi:sockets/"} {
		if strings.HasPrefix(iface, p) {
			return true
		}
	}
	return false
}
