package wit

import (
	"strings"

	"github.com/murmur-go/murmur/internal/wasmhost"
)

// Interface names, as components import and export them (wit/ in the
// repository).
// This is their one home: the runtime, the CLI and the host interfaces all
// name Murmur's interfaces through these constants.
const (
	// IfaceCapsuleRun is exported by a script capsule (world capsule).
	IfaceCapsuleRun = "murmur:capsule/run@0.1.0"
	// IfaceToolRun is exported by a WASM tool (world tool) and a driver (world driver).
	IfaceToolRun = "murmur:tool/run@0.1.0"
	// RunFunc is the function CapsuleRun and ToolRun export.
	RunFunc = "run"

	IfaceToolRegistry    = "murmur:tool-registry/invoke@0.1.0"
	IfaceArtifactManager = "murmur:artifact-manager/manage@0.1.0"
	IfaceMessageSend     = "murmur:message/send@0.1.0"
	IfaceTask            = "murmur:task/task@0.1.0"
	IfaceTextChunks      = "murmur:text/chunks@0.1.0"

	// IfaceHookLifecycle is exported by a hook; IfaceHookInference is what a hook may
	// import.
	IfaceHookLifecycle = "murmur:hook/lifecycle@0.5.0"
	IfaceHookInference = "murmur:runtime/inference@0.2.0"
)

// World names of murmur:runtime-guest@0.1.0 (wit/runtime-guest.wit) and of
// the hook world.
const (
	WorldCapsule = "murmur:runtime-guest/capsule@0.1.0"
	WorldTool    = "murmur:runtime-guest/tool@0.1.0"
	WorldDriver  = "murmur:runtime-guest/driver@0.1.0"
	WorldHook    = "murmur:runtime/hook@0.2.0"
)

// ExportsCapsuleRun reports whether c exports murmur:capsule/run@0.1.x with
// a run function: what a script capsule's component must do.
func ExportsCapsuleRun(c *wasmhost.Component) bool { return exportsRun(c, IfaceCapsuleRun) }

// ExportsToolRun reports whether c exports murmur:tool/run@0.1.x with a run
// function: what a WASM tool's component must do.
func ExportsToolRun(c *wasmhost.Component) bool { return exportsRun(c, IfaceToolRun) }

// exportsRun accepts any 0.1.x of iface: patch versions are compatible.
func exportsRun(c *wasmhost.Component, iface string) bool {
	family := iface[:strings.LastIndexByte(iface, '.')+1] // "murmur:capsule/run@0.1."
	for _, it := range c.Exports() {
		if it.Kind != wasmhost.ItemInstance || !strings.HasPrefix(it.Name, family) {
			continue
		}
		for _, m := range it.Exports {
			if m.Kind == wasmhost.ItemFunc && m.Name == RunFunc {
				return true
			}
		}
	}
	return false
}
