package script

import (
	"bytes"
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

// CompileDigest checks and compiles a script capsule's component; what names
// it in messages (its path, or its entry in the .mur.zip). The bytes are
// named by o.Digest and read by load only on a compile-cache miss
// (wasmhost.Engine.CompileDigest); when read they are checked (CheckComponent,
// and an export of murmur:capsule/run), and a cache entry exists only for
// bytes that passed, so a component without that export is refused before
// any session exists.
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
