package script

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/murmur-go/murmur/internal/diag"
	"github.com/murmur-go/murmur/internal/wasmhost"
	"github.com/murmur-go/murmur/internal/wit"
)

// PreferredComponent is the root file chosen when a capsule has several.
const PreferredComponent = "capsule.wasm"

// PickComponent chooses a script capsule's component among the root entry
// names of its directory or archive: capsule.wasm when present, else the one
// root *.wasm. None, or several without a capsule.wasm, is refused: running
// whichever sorts first would be a guess.
func PickComponent(where string, names []string) (string, error) {
	var wasm []string
	for _, n := range names {
		if strings.Contains(n, "/") || !strings.HasSuffix(n, ".wasm") {
			continue
		}
		if n == PreferredComponent {
			return n, nil
		}
		wasm = append(wasm, n)
	}
	sort.Strings(wasm)
	switch len(wasm) {
	case 1:
		return wasm[0], nil
	case 0:
		return "", diag.New("E-RUN-003", "%s holds no .wasm component: a script capsule runs one root component exporting murmur:capsule/run", where).
			WithHint("build the capsule's component (one root .wasm exporting murmur:capsule/run) and place it beside murmur.yaml, e.g. capsule.wasm")
	default:
		return "", diag.New("E-RUN-004", "%s holds %d root .wasm files (%s) and no %s, so which one runs is ambiguous", where, len(wasm), strings.Join(wasm, ", "), PreferredComponent).
			WithHint("keep one root .wasm, or name the capsule's component %s", PreferredComponent)
	}
}

// ComponentInDir finds and reads the component of a capsule directory.
func ComponentInDir(dir string) (name string, data []byte, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", nil, diag.Wrap(err, "E-RUN-003", "cannot list the capsule directory %s", dir)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	name, err = PickComponent(dir, names)
	if err != nil {
		return "", nil, err
	}
	data, err = os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "", nil, diag.Wrap(err, "E-RUN-003", "cannot read %s", filepath.Join(dir, name))
	}
	return name, data, nil
}

var wasmMagic = []byte("\x00asm")

// CheckComponent refuses bytes that cannot be a component before any engine
// sees them, with a message a person can act on: a core module (the usual
// mistake: a plain wasm32-wasip1 build) is named as such. WAT text is left to
// the compiler.
func CheckComponent(what string, data []byte) error {
	if !bytes.HasPrefix(data, wasmMagic) && utf8.Valid(data) && bytes.Contains(data, []byte("(component")) {
		return nil // WAT text: the compiler decides
	}
	if len(data) < 8 || !bytes.Equal(data[:4], wasmMagic) {
		return diag.New("E-RUN-005", "%s is not a WebAssembly component (no \\0asm header)", what).
			WithHint("build it as a component exporting murmur:capsule/run@0.1.0, for example with the Go guest kit")
	}
	// Bytes 4..8: version and layer. Core modules are 01 00 00 00; components
	// are layer 1 (bytes 6..8 = 01 00).
	if data[6] != 0x01 || data[7] != 0x00 {
		return diag.New("E-RUN-005", "%s is a core WebAssembly module, not a component", what).
			WithHint("wrap it into a component (wasm-tools component new with the WASI adapter), or build it with the Go guest kit")
	}
	return nil
}

// Compile checks and compiles a script capsule's component; what names it in
// messages (its path, or its entry in the .mur.zip). A component that does
// not export murmur:capsule/run with a run function is refused before any
// session exists.
func Compile(eng *wasmhost.Engine, what string, data []byte) (*wasmhost.Component, error) {
	return CompileWith(eng, what, data, wasmhost.CompileOptions{})
}

// CompileWith is Compile with what the caller knows about the bytes (a
// resolve's digest, the name a compile-progress line shows).
func CompileWith(eng *wasmhost.Engine, what string, data []byte, o wasmhost.CompileOptions) (*wasmhost.Component, error) {
	return CompileDigest(eng, what, o, func() ([]byte, error) { return data, nil })
}

// CompileDigest is CompileWith for bytes named by o.Digest and read by load
// only on a compile-cache miss (wasmhost.Engine.CompileDigest). The bytes,
// when read, are checked as CompileWith checks them; a cache entry exists
// only for bytes that passed.
func CompileDigest(eng *wasmhost.Engine, what string, o wasmhost.CompileOptions, load func() ([]byte, error)) (*wasmhost.Component, error) {
	var loadErr error // the bytes' own refusal, reported as it is
	comp, err := eng.CompileDigest(o, func() ([]byte, error) {
		data, err := load()
		if err == nil {
			err = CheckComponent(what, data)
		}
		loadErr = err
		return data, err
	})
	if loadErr != nil {
		return nil, loadErr
	}
	if err != nil {
		return nil, diag.Wrap(err, "E-RUN-005", "%s is not a component this runtime can load", what).
			WithHint("build it as a component exporting %s, for example with the Go guest kit", wit.IfaceCapsuleRun)
	}
	if !wit.ExportsCapsuleRun(comp) {
		comp.Close()
		return nil, diag.New("E-RUN-006", "%s does not export %s with a run function", what, wit.IfaceCapsuleRun).
			WithHint("a script capsule's component must be built against the capsule world (murmur:runtime-guest/capsule)")
	}
	return comp, nil
}
