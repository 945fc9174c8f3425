// Package wit is Murmur's WIT vocabulary (the interfaces of wit/ in the
// repository; docs/guest-kit.md) spoken over the engine of internal/wasmhost. It is pure Go: the
// engine owns cgo and knows nothing of Murmur, and this package knows
// nothing of wasmtime.
//
//   - Names: the murmur interfaces components import and export
//     (IfaceCapsuleRun, IfaceToolRun, IfaceToolRegistry, IfaceArtifactManager, IfaceMessageSend, IfaceTask,
//     IfaceTextChunks, the hook interfaces) and the worlds. They have no other
//     home in the tree.
//   - Records: ToolInput, ToolResult, ArtifactSummary, ArtifactInfo,
//     RuntimeState, Message, TaskResult as Go structs, with Value (to the
//     engine's values) and Decode* (from them; a wrong shape is an error).
//   - Host helpers: GrantToolRegistry, GrantArtifactManager,
//     GrantMessageSend, GrantTask, GrantTextChunks define the host
//     interfaces on a wasmhost.Host from typed Go functions. A Go error of a
//     function whose WIT result has an error side is answered err(message)
//     and the guest goes on; for the others it traps the guest.
//   - Callers: CallCapsuleRun, CallToolRun, and the checks ExportsCapsuleRun
//     / ExportsToolRun a runtime makes before it runs a component.
//   - wasi:http policies: GrantHTTP with an HTTPPolicy — DenyAllHTTP,
//     NetworkAllow (a capsule's or tool's capabilities.network.allow) or a
//     driver's Gateway (its endpoint only, its key swapped in) — over the
//     engine's wasi:http mechanism, one log line per request.
package wit
